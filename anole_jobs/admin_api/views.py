"""The admin routes' handlers and the dispatcher every route goes through.

`endpoint(route)` makes one Django view per `routes.Route`: it checks ``ADMIN_PERMISSION``
(401/403), the method (405 with ``Allow``), then calls the operation's handler, which only
calls the `jobs` facade and returns ``(status, payload)``. Every answer is JSON, except the
empty 204 of DELETE. Bad filters answer 400, unknown or malformed ids 404, and a store that
cannot be reached 503 with ``Retry-After``; no input makes a 500.

The views are plain (sync) Django views: under ASGI Django runs them in its thread pool, which
is what the facade's database calls need. They are not CSRF-exempt: with session
authentication, POST and DELETE need Django's CSRF token like any form.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from anole_jobs.admin_api import openapi, payloads
from anole_jobs.admin_api.permissions import refusal
from anole_jobs.admin_api.routes import LIST_FILTERS, WRONG_METHOD, Route
from anole_jobs.api import jobs
from anole_jobs.errors import InvalidJob, StoreUnavailable
from anole_jobs.stores.base import LIST_LIMIT_MAX, STATES

logger = logging.getLogger("anole_jobs.admin")

Answer = tuple[int, Any]
Handler = Callable[..., Answer]
#: Seconds a client should wait before trying again after a 503.
RETRY_AFTER = 5
MAX_ID = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")
_FILTER_NAMES = tuple(param.name for param in LIST_FILTERS)


class ApiError(Exception):
    """An answer other than success: its status, a short code and a sentence for people."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse(payloads.error(code, message), status=status)


# -- parsing ---------------------------------------------------------------------------------


def positive_id(text: str) -> int | None:
    """`text` as a job id (1 .. 2**63-1, plain decimal digits), or None."""
    if not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if 1 <= value <= MAX_ID else None


def job_id_of(text: str) -> int:
    value = positive_id(text)
    if value is None:
        raise ApiError(404, "not_found", f"no job with id {text!r} (ids are positive integers)")
    return value


def list_filters(request: HttpRequest) -> dict[str, Any]:
    """The `jobs.list` keywords from the query string; 400 naming what is wrong."""
    query = request.GET
    unknown = sorted(set(query) - set(_FILTER_NAMES))
    if unknown:
        raise ApiError(
            400,
            "bad_filter",
            f"unknown parameter {unknown[0]!r}; the filters are {', '.join(_FILTER_NAMES)}",
        )
    filters: dict[str, Any] = {}
    for name in _FILTER_NAMES:
        values = query.getlist(name)
        if not values:
            continue
        if len(values) > 1:
            raise ApiError(400, "bad_filter", f"give {name} once, not {len(values)} times")
        filters[name] = values[0]
    state = filters.get("state")
    if state is not None and state not in STATES:
        raise ApiError(
            400, "bad_filter", f"unknown state {state!r}; states are {', '.join(STATES)}"
        )
    for name in ("queue", "kind"):
        if filters.get(name) == "":
            raise ApiError(400, "bad_filter", f"{name} must not be empty")
    if "limit" in filters:
        limit = positive_id(filters["limit"])
        if limit is None:
            raise ApiError(
                400, "bad_filter", f"limit must be a positive integer, got {filters['limit']!r}"
            )
        filters["limit"] = min(limit, LIST_LIMIT_MAX)
    if "after" in filters:
        after = positive_id(filters["after"])
        if after is None:
            raise ApiError(
                400,
                "bad_filter",
                f"after must be a job id (a positive integer), got {filters['after']!r}",
            )
        filters["after"] = after
    return filters


# -- handlers: each only calls the facade ----------------------------------------------------


def list_jobs(request: HttpRequest) -> Answer:
    filters = list_filters(request)
    limit = filters.setdefault("limit", 100)
    return 200, payloads.job_page(jobs.list(**filters), limit=limit)


def _found(record: Any, text: str) -> Any:
    if record is None:
        raise ApiError(404, "not_found", f"no job with id {text}")
    return record


def get_job(request: HttpRequest, job_id: str) -> Answer:
    return 200, payloads.job(_found(jobs.get(job_id_of(job_id)), job_id))


def delete_job(request: HttpRequest, job_id: str) -> Answer:
    if not jobs.delete(job_id_of(job_id)):
        raise ApiError(404, "not_found", f"no job with id {job_id}")
    return 204, None


def retry_job(request: HttpRequest, job_id: str) -> Answer:
    return 200, payloads.job(_found(jobs.retry(job_id_of(job_id)), job_id))


def cancel_job(request: HttpRequest, job_id: str) -> Answer:
    return 200, payloads.job(_found(jobs.cancel(job_id_of(job_id)), job_id))


def get_counts(request: HttpRequest) -> Answer:
    return 200, payloads.counts(jobs.counts())


def list_cron(request: HttpRequest) -> Answer:
    return 200, payloads.cron(jobs.cron_list())


def trigger_cron(request: HttpRequest, name: str) -> Answer:
    try:
        return 200, payloads.enqueued(jobs.cron_trigger(name))
    except LookupError as exc:
        raise ApiError(404, "not_found", str(exc)) from None


def list_queues(request: HttpRequest) -> Answer:
    return 200, payloads.queues(jobs.queues())


def pause_queue(request: HttpRequest, name: str) -> Answer:
    return 200, payloads.queue(jobs.pause(name))


def resume_queue(request: HttpRequest, name: str) -> Answer:
    return 200, payloads.queue(jobs.resume(name))


def openapi_document(request: HttpRequest) -> Answer:
    # The routes' base is where this document is served from (the mount of the URLconf).
    return 200, openapi.document(server_url=request.path.rsplit("/", 1)[0] or "/")


HANDLERS: dict[str, Handler] = {
    handler.__name__: handler
    for handler in (
        list_jobs,
        get_job,
        delete_job,
        retry_job,
        cancel_job,
        get_counts,
        list_cron,
        trigger_cron,
        list_queues,
        pause_queue,
        resume_queue,
        openapi_document,
    )
}


# -- dispatch --------------------------------------------------------------------------------


def _respond(status: int, payload: Any) -> HttpResponse:
    if status == 204:
        return HttpResponse(status=204)
    return JsonResponse(payload, status=status, safe=False)


def _guarded(request: HttpRequest, call: Callable[[], Answer]) -> HttpResponse:
    """Permission, then `call`, with every expected failure answered as JSON."""
    refused = refusal(request)
    if refused == 401:
        return error_response(401, "not_authenticated", "log in to use the jobs admin routes")
    if refused == 403:
        return error_response(403, "permission_denied", "ADMIN_PERMISSION refused this request")
    try:
        return _respond(*call())
    except ApiError as exc:
        return error_response(exc.status, exc.code, exc.message)
    except InvalidJob as exc:
        return error_response(400, "bad_request", str(exc))
    except (StoreUnavailable, OperationalError, InterfaceError) as exc:
        logger.warning("jobs admin: the store did not answer: %s", exc)
        response = error_response(
            503, "store_unavailable", f"the jobs store did not answer ({exc}); try again"
        )
        response["Retry-After"] = str(RETRY_AFTER)
        return response


def endpoint(route: Route) -> Callable[..., HttpResponse]:
    """The Django view of `route`."""
    allow = ", ".join(route.methods)

    def view(request: HttpRequest, **kwargs: str) -> HttpResponse:
        method = (request.method or "").upper()
        operation = route.operation(method)

        def call() -> Answer:
            if operation is None:
                raise ApiError(
                    WRONG_METHOD,
                    "method_not_allowed",
                    f"{method} is not allowed here; use {allow}",
                )
            handler: Handler = HANDLERS[operation.handler]
            return handler(request, **kwargs)

        response = _guarded(request, call)
        if response.status_code == WRONG_METHOD:
            response["Allow"] = allow
        return response

    view.__name__ = route.name.replace("-", "_")
    view.__doc__ = " / ".join(op.summary for op in route.operations)
    return view


def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under the mount: 404 JSON (after the permission check)."""

    def call() -> Answer:
        raise ApiError(404, "not_found", f"no jobs admin route at {request.path!r}")

    return _guarded(request, call)
