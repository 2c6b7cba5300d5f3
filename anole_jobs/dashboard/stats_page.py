"""The dashboard's statistics page: for every queue or one, the last hour per minute or the
last day, 7 days or 30 days per hour — jobs completed, failed and started, and run-time
percentiles — as charts and as a table of the same numbers. Live like the queues page (its
region refreshes)."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from anole_jobs.api import jobs
from anole_jobs.dashboard.pages import PARTIAL, REFRESH_SECONDS, dashboard_view
from anole_jobs.dashboard.render import render, render_partial
from anole_jobs.dashboard.statcharts import rows, runtime_chart, runtimes, throughput_chart
from anole_jobs.operations.stats import PERIODS, milliseconds, parse_stats, read_stats
from anole_jobs.stores.stats import RUNTIME_BUCKETS_MS


def _kept(value: timedelta) -> str:
    """A statistics horizon for people: "36 hours", "30 days"."""
    hours = value.total_seconds() / 3600
    if hours % 24 == 0:
        days = int(hours // 24)
        return "a day" if days == 1 else f"{days} days"
    return f"{hours:g} hours"


@require_GET
@dashboard_view
def stats(request: HttpRequest) -> HttpResponse:
    params = {k: v for k, v in request.GET.lists() if k != PARTIAL}
    query = parse_stats(params, blank_is_absent=True)
    report = read_stats(query)
    series = report.overall
    keep = jobs.settings.stats
    context = {
        "title": "Statistics",
        "section": "stats",
        "query": query,
        "periods": list(PERIODS.items()),
        "period": PERIODS[query.period],
        "kept": {"minutes": _kept(keep.minutes), "hours": _kept(keep.hours)},
        "queue_names": sorted(
            {q.name for q in jobs.queues()} | {s.queue for s in report.queues if s.queue}
        ),
        "report": report,
        "total": series.total,
        "runtimes": runtimes(series),
        "bucket_bounds": ", ".join(milliseconds(bound) for bound in RUNTIME_BUCKETS_MS),
        "throughput_chart": throughput_chart(report, series),
        "runtime_chart": runtime_chart(report, series),
        "rows": rows(report, series),
        "refresh": REFRESH_SECONDS * 2,
        "now": report.until,
    }
    if request.GET.get(PARTIAL) == "1":
        return render_partial(request, "stats_live.html", context)
    return render(request, "stats.html", context)
