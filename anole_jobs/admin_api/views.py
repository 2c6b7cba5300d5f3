"""The admin routes' handlers and the dispatcher every route goes through.

`endpoint(route)` makes one Django view per `routes.Route`: it checks ``ADMIN_PERMISSION``
(401/403), the method (405 with ``Allow``), then calls the operation's handler, which parses
and acts through `anole_jobs.operations` and returns ``(status, payload)``. Every answer is
JSON, except the empty 204 of DELETE. What went wrong is answered as `operations.problems`
maps it: bad filters, names and bodies 400, unknown or malformed ids and names 404, a store
that cannot be reached 503 with ``Retry-After``; no input makes a 500.

The views are plain (sync) Django views: under ASGI Django runs them in its thread pool, which
is what the facade's database calls need. They are not CSRF-exempt: with session
authentication, POST and DELETE need Django's CSRF token like any form.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve

from anole_jobs.admin_api import bulk_views, openapi, workers
from anole_jobs.admin_api.routes import FALLBACK, WRONG_METHOD, Route
from anole_jobs.api import jobs
from anole_jobs.limits import KEEP
from anole_jobs.operations import actions, audit, payloads, workflows
from anole_jobs.operations import stats as run_stats
from anole_jobs.operations.ids import parse_job_id
from anole_jobs.operations.listing import fetch_page, parse_listing
from anole_jobs.operations.permissions import Access, access, may, refusal
from anole_jobs.operations.problems import (
    EXPECTED,
    BadInput,
    OperationError,
    Problem,
    problem_of,
)

Answer = tuple[int, Any]
Handler = Callable[..., Answer]
#: How a refused queue name is told to ask for a new queue anyway.
HOW_TO_CREATE = 'send the body {"create": true}'


def problem_response(problem: Problem) -> JsonResponse:
    body = payloads.error(problem.code, problem.message)
    if problem.hint is not None:
        body["hint"] = problem.hint
    response = JsonResponse(body, status=problem.status)
    for name, value in problem.headers.items():
        response[name] = value
    return response


# -- handlers: each parses and acts through the operations layer ------------------------------


def list_jobs(request: HttpRequest) -> Answer:
    return 200, payloads.job_page(fetch_page(parse_listing(dict(request.GET.lists()))))


def get_job(request: HttpRequest, job_id: str) -> Answer:
    wanted = parse_job_id(job_id)
    record = actions.get(wanted)
    return 200, payloads.job_detail(record, actions.why(wanted))


def delete_job(request: HttpRequest, job_id: str) -> Answer:
    actions.delete(parse_job_id(job_id))
    return 204, None


def retry_job(request: HttpRequest, job_id: str) -> Answer:
    return 200, payloads.job(actions.retry(parse_job_id(job_id)).record)


def signal_job(request: HttpRequest, job_id: str, name: str) -> Answer:
    """The body is the payload (JSON; none, or an empty form: null). 200 ``{"stored": bool}``."""
    form = request.content_type in ("multipart/form-data", "application/x-www-form-urlencoded")
    if form and request.POST:
        raise BadInput("body", "the body must be JSON (the signal's payload), not a form")
    if not form and request.body:
        try:
            payload = json.loads(request.body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise BadInput("body", "the body must be JSON: the signal's payload") from None
    else:
        payload = None
    return 200, {"stored": actions.signal(parse_job_id(job_id), name, payload)}


def cancel_job(request: HttpRequest, job_id: str) -> Answer:
    return 200, payloads.job(actions.cancel(parse_job_id(job_id)).record)


def get_counts(request: HttpRequest) -> Answer:
    return 200, payloads.counts(jobs.counts())


def get_stats(request: HttpRequest) -> Answer:
    query = run_stats.parse_stats(dict(request.GET.lists()))
    return 200, run_stats.as_json(run_stats.read_stats(query))


def list_cron(request: HttpRequest) -> Answer:
    return 200, payloads.cron(jobs.cron_list())


def trigger_cron(request: HttpRequest, name: str) -> Answer:
    return 200, payloads.enqueued(actions.trigger(name).record)


def list_queues(request: HttpRequest) -> Answer:
    return 200, payloads.queues(jobs.queues())


_FORM_FLAGS = {"": False, "false": False, "0": False, "true": True, "1": True, "on": True}


def create_flag(request: HttpRequest) -> bool:
    """The optional body of pause and resume: JSON ``{"create": true}`` (or a form field
    ``create=true``) uses a queue nobody knows yet; without it such a name is refused with
    "did you mean"."""
    if request.content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        value = request.POST.get("create", "")
        if value not in _FORM_FLAGS:
            raise BadInput("create", f"create must be true or false, got {value!r}")
        return _FORM_FLAGS[value]
    if not request.body:
        return False
    try:
        body = json.loads(request.body)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: "[[[[…" nested deep
        raise BadInput("body", 'the body must be a JSON object, e.g. {"create": true}') from None
    if not isinstance(body, dict) or set(body) - {"create"}:
        raise BadInput("body", 'the body may only hold "create": true or false')
    create = body.get("create", False)
    if not isinstance(create, bool):
        raise BadInput("create", f"create must be true or false, got {create!r}")
    return create


def pause_queue(request: HttpRequest, name: str) -> Answer:
    outcome = actions.pause(name, create=create_flag(request), how_to_create=HOW_TO_CREATE)
    return 200, payloads.queue(outcome.record)


def resume_queue(request: HttpRequest, name: str) -> Answer:
    outcome = actions.resume(name, create=create_flag(request), how_to_create=HOW_TO_CREATE)
    return 200, payloads.queue(outcome.record)


def get_workflow(request: HttpRequest, workflow_id: str) -> Answer:
    return 200, payloads.workflow(workflows.get(workflow_id))


def cancel_workflow(request: HttpRequest, workflow_id: str) -> Answer:
    return 200, payloads.workflow(workflows.cancel(workflow_id).record)


_LIMIT_FIELDS = ("global_concurrency", "rate_limit", "clear", "create")


def set_queue_limits(request: HttpRequest, name: str) -> Answer:
    """JSON ``{"global_concurrency": 5, "rate_limit": "20/s"}``: omitted fields stay as
    stored, null returns one to the settings, ``"clear": true`` both (docs/limits.md)."""
    try:
        body = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        body = None
    if not isinstance(body, dict):
        raise BadInput("body", 'the body must be a JSON object, e.g. {"global_concurrency": 5}')
    unknown = sorted(set(body) - set(_LIMIT_FIELDS))
    if unknown:
        raise BadInput("body", f"unknown field(s) {', '.join(unknown)}; known: {_LIMIT_FIELDS}")
    for flag in ("clear", "create"):
        if not isinstance(body.get(flag, False), bool):
            raise BadInput(flag, f"{flag} must be true or false, got {body[flag]!r}")
    clear = body.get("clear", False)
    changes = {
        field: None if clear else body.get(field, KEEP)
        for field in ("global_concurrency", "rate_limit")
    }
    outcome = actions.set_limits(
        name, create=body.get("create", False), how_to_create=HOW_TO_CREATE, **changes
    )
    return 200, payloads.queue(outcome.record)


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
        signal_job,
        cancel_job,
        get_counts,
        get_stats,
        list_cron,
        trigger_cron,
        list_queues,
        pause_queue,
        resume_queue,
        get_workflow,
        cancel_workflow,
        set_queue_limits,
        openapi_document,
        workers.list_workers,
        workers.quiet_worker,
        workers.stop_worker,
        workers.list_audit,
    )
}
HANDLERS.update(bulk_views.HANDLERS)  # bulk actions: their own module


# -- dispatch --------------------------------------------------------------------------------


class _Answered(OperationError):
    """A refusal decided here (a wrong method, no such route), answered like the others."""

    def __init__(self, status: int, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(message, code=code, hint=hint)
        self.status = status


def _respond(status: int, payload: Any) -> HttpResponse:
    if status == 204:
        return HttpResponse(status=204)
    return JsonResponse(payload, status=status, safe=False)


def _guarded(request: HttpRequest, call: Callable[[], Answer]) -> HttpResponse:
    """Permission, then `call`, with every expected failure (an outage while the permission
    reads the user included) answered as JSON."""
    try:
        decided = access(request)
        if decided is Access.ANONYMOUS:
            return problem_response(
                Problem(
                    status=401,
                    code="not_authenticated",
                    message="log in to use the jobs admin routes",
                )
            )
        if decided is Access.FORBIDDEN:
            return problem_response(
                Problem(
                    status=403,
                    code="permission_denied",
                    message="ADMIN_PERMISSION refused this request",
                )
            )
        return _respond(*call())
    except EXPECTED as exc:
        problem = problem_of(exc)
        if problem is None:
            raise
        return problem_response(problem)


#: Handlers that need the delete permission (the others that write need the change one).
DELETING = frozenset({"delete_job", "bulk_action"})


def need_of(method: str, handler: str) -> str:
    """What an operation needs (`permissions.NEEDS`): reads "view", deletes and bulk actions
    "delete", every other write "change"."""
    if method == "GET":
        return "view"
    return "delete" if handler in DELETING else "change"


def endpoint(route: Route) -> Callable[..., HttpResponse]:
    """The Django view of `route`."""
    allow = ", ".join(route.methods)

    def view(request: HttpRequest, **kwargs: str) -> HttpResponse:
        method = (request.method or "").upper()
        operation = route.operation(method)

        def call() -> Answer:
            if operation is None:
                raise _Answered(
                    WRONG_METHOD, "method_not_allowed", f"{method} is not allowed here; use {allow}"
                )
            need = need_of(operation.method, operation.handler)
            if not may(request, need):
                raise _Answered(403, "permission_denied", refusal(need))
            handler: Handler = HANDLERS[operation.handler]
            with audit.acting(audit.actor_of(request), "route"):
                return handler(request, **kwargs)

        response = _guarded(request, call)
        if response.status_code == WRONG_METHOD:
            response["Allow"] = allow
        return response

    view.__name__ = route.name.replace("-", "_")
    view.__doc__ = " / ".join(op.summary for op in route.operations)
    return view


def _without_slash(request: HttpRequest) -> str | None:
    """The request's path without its trailing slash, when that names a route (the routes
    have none)."""
    if not request.path_info.endswith("/") or request.path_info == "/":
        return None
    try:
        match = resolve(request.path_info.rstrip("/"))
    except Resolver404:
        return None
    return None if match.url_name == FALLBACK else request.path.rstrip("/")


def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under the mount: 404 JSON (after the permission check). A known path
    with a trailing slash gets a hint naming it without the slash."""

    def call() -> Answer:
        hint = _without_slash(request)
        if hint is not None:
            message = (
                f"no jobs admin route at {request.path!r}; "
                f"the routes have no trailing slash: {hint!r}"
            )
        else:
            message = f"no jobs admin route at {request.path!r}"
        raise _Answered(404, "not_found", message, hint)

    return _guarded(request, call)
