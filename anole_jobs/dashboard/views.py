"""The dashboard's pages and actions: server-rendered HTML, thin over `anole_jobs.operations`.

Pages: queues (depth, pause state, runs finished in the last hour), jobs by state with filters
and keyset pages, one job (args, meta, every error with its traceback), cron entries.
Actions are POST forms under Django's CSRF protection: retry, cancel, delete, pause, resume,
trigger. Each answers with a redirect (post/redirect/get) and a short notice, which says when
the action changed nothing. The notice goes through Django's messages framework when its
middleware runs (it then shows once, and a reload does not show it again); without it, the
redirect carries ``?notice=<code>``, which the page's script removes from the address bar.

The queues and jobs pages are live: their table is a region that `live.js` (served by the
dashboard, so no inline script) fetches again every `REFRESH_SECONDS` with ``?partial=1``,
which the same views answer with the region only. With scripts off they are plain pages.

What went wrong is a page with the message and the status `operations.problems` gives it:
a bad filter 400 (the filter form stays, to correct it), an unknown or malformed id or name
404, a store that does not answer 503 with ``Retry-After``.

Access: `operations.permissions`, the rule of the JSON routes; a refused anonymous visitor goes
to the login page (see `access`), a refused logged-in one gets 403.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from anole_jobs.api import jobs
from anole_jobs.core import LIVE_STATES, STATES, WAITING_STATES, JobRecord
from anole_jobs.dashboard.pages import (
    PARTIAL,
    REFRESH_SECONDS,
    View,
    dashboard_view,
    is_partial,
    notice_of,
    redirect,
)
from anole_jobs.dashboard.render import live_script, render, render_partial
from anole_jobs.dashboard.statcharts import throughput_chart
from anole_jobs.operations import actions
from anole_jobs.operations.clock import now as clock_now
from anole_jobs.operations.display import display_kind
from anole_jobs.operations.ids import parse_job_id
from anole_jobs.operations.listing import (
    SEARCH_FIELDS,
    fetch_page,
    parse_listing,
)
from anole_jobs.operations.problems import BadInput
from anole_jobs.operations.stats import StatsQuery, read_stats
from anole_jobs.records import QueueRecord
from anole_jobs.stores.stats import StatsPoint

PAGE_SIZE = 50
HOW_TO_CREATE = 'tick "new queue"'
#: An error entry's own fields; any other key is shown as the error's data.
ERROR_FIELDS = frozenset({"at", "attempt", "type", "message", "traceback"})
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


@require_GET
def live_js(request: HttpRequest) -> HttpResponse:
    """The live pages' script: static code, served to anyone (as the admin's own scripts)."""
    response = HttpResponse(live_script(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "max-age=300"
    response["X-Content-Type-Options"] = "nosniff"
    return response


# -- queues ----------------------------------------------------------------------------------
def _limits_row(queue: QueueRecord) -> dict[str, Any]:
    """A queue's limits in force, in words, and the jobs they hold (docs/limits.md)."""
    limits = queue.limits
    parts = []
    if limits.global_concurrency is not None:
        parts.append(f"{limits.global_concurrency} at once")
    if limits.rate_limit is not None:
        parts.append(limits.rate_limit)
    text = ", ".join(parts)
    if text and limits.partition:
        text += f" per {', '.join(limits.partition)}"
    if text and limits.source == "runtime":
        text += " (set at runtime)"
    return {"limits": text, "held": queue.held}


@require_GET
@dashboard_view
def queues(request: HttpRequest) -> HttpResponse:
    now = clock_now()
    # The last hour's runs from the counters the store keeps per minute, not a scan of jobs.
    report = read_stats(StatsQuery(period="hour"), now=now)
    finished = {series.queue: series.total for series in report.queues}
    rows = []
    for queue in jobs.queues():
        counts = dict(queue.counts)
        done = finished.get(queue.name) or StatsPoint(at=report.since)
        rows.append(
            {
                "name": queue.name,
                "paused": queue.paused,
                "depth": sum(counts.get(state, 0) for state in WAITING_STATES),
                "running": counts.get("running", 0),
                "counts": [(state, counts.get(state, 0)) for state in STATES],
                "completed_last_hour": done.completed,
                "failed_last_hour": done.failed,
                **_limits_row(queue),
                **_limits_row(queue),
            }
        )
    context = {
        "title": "Queues",
        "section": "queues",
        "queues": rows,
        "limited": [row for row in rows if row["limits"]],
        "states": STATES,
        "throughput_chart": throughput_chart(report, report.overall),
        "now": now,
        "refresh": REFRESH_SECONDS,
        "notice": notice_of(request),
    }
    if is_partial(request):
        return render_partial(request, "queues_live.html", context)
    return render(request, "queues.html", context)


def _queue_action(action: Callable[..., actions.Outcome[Any]], notice: str) -> View:
    @require_POST
    @dashboard_view
    def act(request: HttpRequest, name: str) -> HttpResponse:
        create = request.POST.get("create") == "on"
        outcome = action(name, create=create, how_to_create=HOW_TO_CREATE)
        return redirect(request, "queues", notice=notice if outcome.changed else "unchanged")

    return act


pause = _queue_action(actions.pause, "paused")
resume = _queue_action(actions.resume, "resumed")


# -- jobs ------------------------------------------------------------------------------------
@require_GET
@dashboard_view
def job_list(request: HttpRequest) -> HttpResponse:
    query = dict(request.GET.lists())
    context: dict[str, Any] = {
        "title": "Jobs",
        "section": "jobs",
        "states": STATES,
        "notice": notice_of(request),
        "jobs": [],
        "problems": [],
        "refresh": REFRESH_SECONDS,
    }
    try:
        listing = parse_listing(
            query, default_limit=PAGE_SIZE, blank_is_absent=True, ignore=("notice", PARTIAL)
        )
    except BadInput as exc:
        # The form stays, filled as it was sent, so the person can correct the field.
        sent = {
            name: values[-1]
            for name, values in query.items()
            if name in ("state", "queue", "kind", *SEARCH_FIELDS)
        }
        context.update(filters=sent, problems=[exc.message], queue_names=_queue_names())
        return render(request, "jobs.html", context, status=400)
    page = fetch_page(listing)
    base = listing.filters()
    if listing.limit != PAGE_SIZE:
        base["limit"] = str(listing.limit)
    context.update(
        jobs=[(record, display_kind(record.kind, record.args)) for record in page.records],
        filters=base,
        next_url="?" + urlencode({**base, "after": page.next_after}) if page.more else None,
        first_url=("?" + urlencode(base)) if listing.after is not None else None,
        searched=page.searched,
        bulk_query=urlencode(listing.filters()) if listing.filters() else None,
    )
    if is_partial(request):
        return render_partial(request, "jobs_live.html", context)
    context.update(queue_names=_queue_names())
    return render(request, "jobs.html", context)


def _queue_names() -> list[str]:
    return [queue.name for queue in jobs.queues()]


def _trace_id(record: JobRecord) -> tuple[str | None, str | None]:
    match = _TRACEPARENT.match(str(record.meta.get("traceparent", "")))
    return (match.group(1), match.group(2)) if match else (None, None)


@require_GET
@dashboard_view
def job_detail(request: HttpRequest, job_id: str) -> HttpResponse:
    record = actions.get(parse_job_id(job_id))
    trace_id, span_id = _trace_id(record)
    errors = [
        {**entry, "data": {k: v for k, v in entry.items() if k not in ERROR_FIELDS}}
        for entry in sorted(record.errors, key=lambda entry: entry.get("attempt", 0), reverse=True)
    ]
    return render(
        request,
        "job.html",
        {
            "title": f"Job {record.id}",
            "section": "jobs",
            "job": record,
            "kind": display_kind(record.kind, record.args),
            "errors": errors,
            "trace_id": trace_id,
            "span_id": span_id,
            "can_cancel": record.state in LIVE_STATES,
            "notice": notice_of(request),
            "result_json": _pretty_json(record.result),
        },
    )


def _pretty_json(value: Any) -> str | None:
    """A job's result as indented JSON for the page (None: there is none)."""
    return None if value is None else json.dumps(value, indent=2, ensure_ascii=False)


def _job_action(action: Callable[[int], actions.Outcome[Any]], notice: str) -> View:
    @require_POST
    @dashboard_view
    def act(request: HttpRequest, job_id: str) -> HttpResponse:
        outcome = action(parse_job_id(job_id))
        done = notice if outcome.changed else "unchanged"
        if notice == "deleted":
            return redirect(request, "jobs", notice=done)
        return redirect(request, "job", outcome.record.id, notice=done)

    return act


retry = _job_action(actions.retry, "retried")
cancel = _job_action(actions.cancel, "cancelled")
delete = _job_action(actions.delete, "deleted")


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
            "notice": notice_of(request),
        },
    )


@require_POST
@dashboard_view
def cron_trigger(request: HttpRequest, name: str) -> HttpResponse:
    outcome = actions.trigger(name)
    notice = "triggered" if outcome.changed else "duplicate"
    if outcome.record.id is not None:
        return redirect(request, "job", outcome.record.id, notice=notice)
    return redirect(request, "cron", notice=notice)
