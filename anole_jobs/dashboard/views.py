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
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from anole_jobs.api import jobs
from anole_jobs.core import FINAL_STATES, LIVE_STATES, STATES, WAITING_STATES, JobRecord
from anole_jobs.dashboard.pages import (
    PARTIAL,
    REFRESH_SECONDS,
    View,
    confirm_page,
    dashboard_view,
    is_partial,
    notice_of,
    page_url,
    redirect,
)
from anole_jobs.dashboard.render import live_script, render, render_live, render_partial
from anole_jobs.dashboard.statcharts import throughput_chart
from anole_jobs.operations import actions, bulk, timeline
from anole_jobs.operations.clock import now as clock_now
from anole_jobs.operations.cron import cron_rows
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
                "oldest_available": queue.oldest_available,
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


#: An action's URL answers GET (the confirmation page), HEAD and POST (the action).
ACTION_METHODS = require_http_methods(["GET", "HEAD", "POST"])
QUEUE_QUESTIONS = {
    "paused": ("Pause queue {name}?", "Pause", "No worker claims its jobs until it is resumed; "
               "running jobs finish."),
    "resumed": ("Resume queue {name}?", "Resume", "Workers claim its jobs again at once."),
}  # fmt: skip


def _queue_action(action: Callable[..., actions.Outcome[Any]], notice: str) -> View:
    @ACTION_METHODS
    @dashboard_view
    def act(request: HttpRequest, name: str) -> HttpResponse:
        if request.method != "POST":
            question, button, why = QUEUE_QUESTIONS[notice]
            return confirm_page(
                request,
                question=question.format(name=name),
                explanation=[why],
                button=button,
                back=page_url("queues"),
                back_label="Back to the queues",
                section="queues",
            )
        create = request.POST.get("create") == "on"
        outcome = action(name, create=create, how_to_create=HOW_TO_CREATE)
        done = notice if outcome.changed else "unchanged"
        if request.POST.get("back") == "queue":  # the queue's own page
            return redirect(request, "queue", outcome.record.name, notice=done)
        return redirect(request, "queues", notice=done)

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
    total = _total(listing)
    context.update(
        jobs=[
            (record, display_kind(record.kind, record.args), _last_error(record))
            for record in page.records
        ],
        total=total[0] if total else None,
        total_exact=total[1] if total else True,
        back_query="?" + urlencode(base) if base else "",
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


#: How much of a job's last error the jobs list shows (the rest is in its title).
ERROR_SHOWN = 120


def _last_error(record: JobRecord) -> tuple[str, str] | None:
    """The job's last error as ``type: message`` (first line), shortened, and in full."""
    if not record.errors:
        return None
    last = record.errors[-1]
    message = str(last.get("message") or "").strip().split("\n", 1)[0]
    text = f"{last.get('type') or 'Error'}: {message}" if message else str(last.get("type"))
    full = text[:1000]
    return (text if len(text) <= ERROR_SHOWN else text[: ERROR_SHOWN - 1] + "…"), full


def _total(listing: Any) -> tuple[int, bool] | None:
    """How many jobs the listing matches and whether exactly (None: a search, which reads a
    window of ids at a time and says so itself)."""
    if listing.searching:
        return None
    if not listing.filters():
        return sum(sum(states.values()) for states in jobs.counts().values()), True
    preview = bulk.preview(listing)
    return preview.count, preview.exact


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
    context = {
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
        **_timeline(record),
        **_waiting_block(record),
    }
    # The whole page refreshes itself while the job can still change (its state, why it
    # waits, its timeline), as the other live pages do.
    return render_live(request, "job.html", context, live=context["live"], refresh=REFRESH_SECONDS)


def _timeline(record: JobRecord) -> dict[str, Any]:
    """The job page's timeline (docs/timeline.md); live while the job is not finished."""
    return {
        "live": record.state not in FINAL_STATES,
        "refresh": REFRESH_SECONDS,
        "attempts": timeline.attempt_rows(record, clock_now()),
        "steps": list(record.steps.items()),
        "progress_percent": timeline.percent(record.progress),
        "progress_text": timeline.progress_text(record.progress),
    }


def _waiting_block(record: JobRecord) -> dict[str, Any]:
    """The job page's "Waiting" block: why the job waits (`jobs.why`), and a link to where
    that is fixed (the queue to resume, the limits, the job before it, the workflow, the
    workers)."""
    waiting = actions.why(record.id) if record.state in WAITING_STATES else None
    if waiting is None:
        return {"waiting": None, "waiting_fix": None}
    queues = reverse("anole_jobs:dashboard:queues")
    fix: dict[str, str] | None = None
    if waiting.reason == "queue_paused":
        fix = {"url": queues, "label": f"the queues page, to resume queue {record.queue}"}
    elif waiting.reason in ("concurrency_limit", "rate_limit"):
        fix = {"url": queues, "label": f"the queues page, for the limits of queue {record.queue}"}
    elif waiting.reason == "sequence":
        holder = re.search(r"job (\d+)", waiting.detail)
        if holder is not None:
            url = reverse("anole_jobs:dashboard:job", args=[holder.group(1)])
            fix = {"url": url, "label": f"job {holder.group(1)}, before it in its sequence"}
    elif waiting.reason == "dependencies" and record.workflow_id is not None:
        url = reverse("anole_jobs:dashboard:workflow", args=[record.workflow_id])
        fix = {"url": url, "label": "its workflow"}
    elif waiting.reason in ("no_worker", "ready"):
        fix = {"url": reverse("anole_jobs:dashboard:workers"), "label": "the workers"}
    return {"waiting": waiting, "waiting_fix": fix}


def _pretty_json(value: Any) -> str | None:
    """A job's result as indented JSON for the page (None: there is none)."""
    return None if value is None else json.dumps(value, indent=2, ensure_ascii=False)


def _job_question(record: JobRecord, notice: str) -> tuple[str, list[str], str, bool]:
    """The confirmation page's question, explanation, button and whether it is dangerous."""
    name = f"job {record.id} ({display_kind(record.kind, record.args)}, {record.state})"
    if notice == "deleted":
        return (
            f"Delete job {record.id}?",
            [f"This removes {name} from the store, with its errors and result. It cannot "
             "be undone."],
            "Delete",
            True,
        )  # fmt: skip
    if notice == "cancelled":
        return (
            f"Cancel job {record.id}?",
            [f"{name.capitalize()} will not run again; a running attempt is asked to stop."],
            "Cancel the job",
            True,
        )
    why = [f"This makes {name} available now, to be claimed at once."]
    if record.state == "completed":
        why.append("It has completed: retrying runs it again, with the same arguments.")
    return f"Retry job {record.id} now?", why, "Retry now", False


def _job_action(action: Callable[[int], actions.Outcome[Any]], notice: str) -> View:
    @ACTION_METHODS
    @dashboard_view
    def act(request: HttpRequest, job_id: str) -> HttpResponse:
        if request.method != "POST":
            record = actions.get(parse_job_id(job_id))
            question, explanation, button, danger = _job_question(record, notice)
            return confirm_page(
                request,
                question=question,
                explanation=explanation,
                button=button,
                danger=danger,
                back=page_url("job", record.id),
                back_label=f"Back to job {record.id}",
                section="jobs",
            )
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
    return render_live(
        request,
        "cron.html",
        {
            "title": "Cron",
            "section": "cron",
            "entries": cron_rows(),
            "notice": notice_of(request),
        },
        live=True,
        refresh=REFRESH_SECONDS * 2,
    )


@ACTION_METHODS
@dashboard_view
def cron_trigger(request: HttpRequest, name: str) -> HttpResponse:
    if request.method != "POST":
        return confirm_page(
            request,
            question=f"Run cron entry {name} now?",
            explanation=["This enqueues the entry's job now, outside its schedule; the "
                         "schedule carries on as before."],
            button="Run now",
            back=page_url("cron"),
            back_label="Back to cron",
            section="cron",
        )  # fmt: skip
    outcome = actions.trigger(name)
    notice = "triggered" if outcome.changed else "duplicate"
    if outcome.record.id is not None:
        return redirect(request, "job", outcome.record.id, notice=notice)
    return redirect(request, "cron", notice=notice)
