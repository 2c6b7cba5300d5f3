"""The dashboard's page of one queue (``dashboard/queues/<name>/``): its jobs by state, the
last hour's runs, its limits in force and how much of each is in use (per partition for a
partitioned limit), a form that changes the limits (stored at runtime, in place of the
settings'; blank returns a limit to the settings), and Pause or Resume."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_http_methods

from anole_jobs.api import jobs
from anole_jobs.core import LIST_LIMIT_MAX, STATES, WAITING_STATES
from anole_jobs.dashboard.pages import (
    REFRESH_SECONDS,
    dashboard_view,
    notice_of,
    redirect,
)
from anole_jobs.dashboard.render import render_live
from anole_jobs.limits import partition_key
from anole_jobs.operations import actions
from anole_jobs.operations.clock import now as clock_now
from anole_jobs.operations.display import display_kind
from anole_jobs.operations.problems import NotFound
from anole_jobs.operations.stats import StatsQuery, read_stats
from anole_jobs.records import QueueRecord

#: Partitions shown, busiest first.
PARTITIONS_SHOWN = 50


def _queue(name: str) -> QueueRecord:
    record = actions.known_queues().get(name)
    if record is None:
        raise NotFound(f"no queue named {name!r}: it is not in QUEUES and holds no jobs")
    return record


def _usage(record: QueueRecord) -> dict[str, Any]:
    """The running jobs against the concurrency limit, overall and per partition."""
    limits = record.limits
    running = record.counts.get("running", 0)
    partitions: list[tuple[str, int]] = []
    partial = False
    if limits.partition:
        seen = jobs.list(state="running", queue=record.name, limit=LIST_LIMIT_MAX)
        partial = len(seen) >= LIST_LIMIT_MAX
        per = Counter(partition_key(job.args, limits.partition) for job in seen)
        partitions = per.most_common(PARTITIONS_SHOWN)
    return {
        "running": running,
        "limit": limits.global_concurrency,
        "percent": (
            round(100 * running / limits.global_concurrency)
            if limits.global_concurrency and not limits.partition
            else None
        ),
        "partitions": partitions,
        "partial": partial,
    }


@require_GET
@dashboard_view
def queue_detail(request: HttpRequest, name: str) -> HttpResponse:
    record = _queue(name)
    now = clock_now()
    report = read_stats(StatsQuery(period="hour", queue=name), now=now)
    done = report.overall.total
    counts = dict(record.counts)
    recent = jobs.list(queue=name, limit=10)
    return render_live(
        request,
        "queue.html",
        {
            "title": f"Queue {name}",
            "section": "queues",
            "queue": record,
            "counts": [(state, counts.get(state, 0)) for state in STATES],
            "depth": sum(counts.get(state, 0) for state in WAITING_STATES),
            "done": done,
            "usage": _usage(record),
            "recent": [(job, display_kind(job.kind, job.args)) for job in recent],
            "notice": notice_of(request),
            "now": now,
        },
        live=True,
        refresh=REFRESH_SECONDS,
    )


def _limit_value(text: str) -> str | int | None:
    text = text.strip()
    if text == "":
        return None
    return int(text) if text.isascii() and text.isdigit() else text


@require_http_methods(["GET", "HEAD", "POST"])
@dashboard_view
def queue_limits(request: HttpRequest, name: str) -> HttpResponse:
    """POST the form of the queue page: both limits (blank: back to the settings')."""
    if request.method != "POST":
        _queue(name)
        return redirect(request, "queue", name)  # the form is on the queue's page
    concurrency = _limit_value(request.POST.get("global_concurrency", ""))
    rate = _limit_value(request.POST.get("rate_limit", ""))
    outcome = actions.set_limits(name, global_concurrency=concurrency, rate_limit=rate)
    return redirect(request, "queue", name, notice="limits" if outcome.changed else "unchanged")
