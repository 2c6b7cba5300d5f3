"""The dashboard's pages and actions (R41): server-rendered HTML over the `jobs` facade.

Pages: queues (depth, pause state, runs finished in the last hour), jobs by state with filters
and keyset pages, one job (args, meta, every error with its traceback), cron entries.
Actions are POST forms under Django's CSRF protection: retry, cancel, delete, pause, resume,
trigger. Each answers with a redirect (post/redirect/get) carrying a short notice.

Access: the same `ADMIN_PERMISSION` rule as the JSON routes; an anonymous visitor who is not
permitted goes to `settings.LOGIN_URL`, an authenticated one gets 403.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from anole_jobs.api import jobs
from anole_jobs.dashboard.access import permitted, refuse
from anole_jobs.dashboard.render import render
from anole_jobs.errors import InvalidJob
from anole_jobs.stores.base import STATES, JobRecord

PAGE_SIZE = 50
#: How many finished jobs per state the queue page reads to count the last hour's runs.
THROUGHPUT_SCAN = 5_000
WAITING = ("scheduled", "available", "retrying")
FINISHED = ("completed", "dead", "cancelled")
NOTICES = {
    "retried": "The job was made available again.",
    "cancelled": "The job was cancelled.",
    "deleted": "The job was deleted.",
    "paused": "The queue is paused: no worker claims its jobs until it is resumed.",
    "resumed": "The queue was resumed.",
    "triggered": "The cron entry's job was enqueued.",
    "missing": "There is no such job any more.",
}
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")

View = Callable[..., HttpResponseBase]


def dashboard_view(view: View) -> View:
    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not permitted(request):
            return refuse(request)
        return view(request, *args, **kwargs)

    return guarded


def _redirect(name: str, *args: Any, notice: str | None = None, **query: str) -> HttpResponse:
    url = reverse(f"anole_jobs:dashboard:{name}", args=args)
    params = {**query, **({"notice": notice} if notice else {})}
    return HttpResponseRedirect(f"{url}?{urlencode(params)}" if params else url)


def _notice(request: HttpRequest) -> str | None:
    return NOTICES.get(request.GET.get("notice", ""))


# -- queues ----------------------------------------------------------------------------------
def _finished_since(since: datetime) -> tuple[dict[str, dict[str, int]], bool]:
    """``{queue: {state: n}}`` of jobs finished since `since`, and whether the scan was cut."""
    counts: dict[str, dict[str, int]] = {}
    capped = False
    for state in FINISHED:
        after = None
        seen = 0
        while True:
            page = jobs.list(state=state, limit=1000, after=after)
            for record in page:
                if record.finished_at is not None and record.finished_at >= since:
                    per_queue = counts.setdefault(record.queue, {})
                    per_queue[state] = per_queue.get(state, 0) + 1
            seen += len(page)
            if len(page) < 1000:
                break
            if seen >= THROUGHPUT_SCAN:
                capped = True
                break
            after = page[-1].id
    return counts, capped


@require_GET
@dashboard_view
def queues(request: HttpRequest) -> HttpResponse:
    now = jobs.service.clock()
    finished, capped = _finished_since(now - timedelta(hours=1))
    rows = []
    for queue in jobs.queues():
        counts = dict(queue.counts)
        done = finished.get(queue.name, {})
        rows.append(
            {
                "name": queue.name,
                "paused": queue.paused,
                "depth": sum(counts.get(state, 0) for state in WAITING),
                "running": counts.get("running", 0),
                "counts": [(state, counts.get(state, 0)) for state in STATES],
                "completed_last_hour": done.get("completed", 0),
                "failed_last_hour": done.get("dead", 0),
            }
        )
    return render(
        request,
        "queues.html",
        {
            "title": "Queues",
            "section": "queues",
            "queues": rows,
            "states": STATES,
            "capped": capped,
            "now": now,
            "notice": _notice(request),
        },
    )


@require_POST
@dashboard_view
def pause(request: HttpRequest, name: str) -> HttpResponse:
    jobs.pause(name)
    return _redirect("queues", notice="paused")


@require_POST
@dashboard_view
def resume(request: HttpRequest, name: str) -> HttpResponse:
    jobs.resume(name)
    return _redirect("queues", notice="resumed")


# -- jobs ------------------------------------------------------------------------------------
def _filters(request: HttpRequest) -> tuple[dict[str, str], list[str]]:
    """The list filters from the query string, and a message per bad one (ignored)."""
    filters: dict[str, str] = {}
    problems: list[str] = []
    for name in ("state", "queue", "kind"):
        value = request.GET.get(name, "").strip()
        if value:
            filters[name] = value
    if "state" in filters and filters["state"] not in STATES:
        problems.append(f"Unknown state {filters.pop('state')!r}; showing every state.")
    after = request.GET.get("after", "").strip()
    if after:
        if after.isdigit() and int(after) > 0:
            filters["after"] = after
        else:
            problems.append(f"Ignored the page marker {after!r}: it must be a job id.")
    return filters, problems


@require_GET
@dashboard_view
def job_list(request: HttpRequest) -> HttpResponse:
    filters, problems = _filters(request)
    after = int(filters["after"]) if "after" in filters else None
    # One more than a page tells whether a next page exists.
    records = jobs.list(
        state=filters.get("state"),
        queue=filters.get("queue"),
        kind=filters.get("kind"),
        limit=PAGE_SIZE + 1,
        after=after,
    )
    page, more = records[:PAGE_SIZE], len(records) > PAGE_SIZE
    base = {key: value for key, value in filters.items() if key != "after"}
    next_url = "?" + urlencode({**base, "after": page[-1].id}) if more and page else None
    first_url = ("?" + urlencode(base)) if after is not None else None
    queue_names = [queue.name for queue in jobs.queues()]
    return render(
        request,
        "jobs.html",
        {
            "title": "Jobs",
            "section": "jobs",
            "jobs": page,
            "filters": base,
            "problems": problems,
            "states": STATES,
            "queue_names": queue_names,
            "next_url": next_url,
            "first_url": first_url,
            "notice": _notice(request),
        },
    )


def _trace_id(record: JobRecord) -> tuple[str | None, str | None]:
    match = _TRACEPARENT.match(str(record.meta.get("traceparent", "")))
    return (match.group(1), match.group(2)) if match else (None, None)


@require_GET
@dashboard_view
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    record = jobs.get(job_id)
    if record is None:
        return render(
            request,
            "missing.html",
            {"title": f"Job {job_id}", "section": "jobs", "job_id": job_id},
            status=404,
        )
    trace_id, span_id = _trace_id(record)
    errors = sorted(record.errors, key=lambda entry: entry.get("attempt", 0), reverse=True)
    return render(
        request,
        "job.html",
        {
            "title": f"Job {record.id}",
            "section": "jobs",
            "job": record,
            "errors": errors,
            "trace_id": trace_id,
            "span_id": span_id,
            "can_cancel": record.state in (*WAITING, "running"),
            "notice": _notice(request),
        },
    )


def _job_action(action: Callable[[int], object], notice: str) -> View:
    @require_POST
    @dashboard_view
    def act(request: HttpRequest, job_id: int) -> HttpResponse:
        try:
            done = action(job_id)
        except InvalidJob:
            done = None
        if not done:
            return _redirect("jobs", notice="missing")
        if notice == "deleted":
            return _redirect("jobs", notice=notice)
        return _redirect("job", job_id, notice=notice)

    return act


retry = _job_action(jobs.retry, "retried")
cancel = _job_action(jobs.cancel, "cancelled")
delete = _job_action(jobs.delete, "deleted")


# -- cron ------------------------------------------------------------------------------------
@require_GET
@dashboard_view
def cron(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "cron.html",
        {
            "title": "Cron",
            "section": "cron",
            "entries": jobs.cron_list(),
            "notice": _notice(request),
        },
    )


@require_POST
@dashboard_view
def cron_trigger(request: HttpRequest, name: str) -> HttpResponse:
    try:
        enqueued = jobs.cron_trigger(name)
    except LookupError:
        return render(
            request,
            "missing.html",
            {"title": "Cron", "section": "cron", "cron_name": name},
            status=404,
        )
    if enqueued.id is not None:
        return _redirect("job", enqueued.id, notice="triggered")
    return _redirect("cron", notice="triggered")
