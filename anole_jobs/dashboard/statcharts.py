"""The dashboard's charts of run statistics (`anole_jobs.operations.stats`): jobs started,
completed and failed per minute or hour, and run-time percentiles, as SVG (`charts`)."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString, mark_safe

from anole_jobs.dashboard.charts import STYLES, Line, line_chart
from anole_jobs.operations.stats import PERIODS, Series, StatsReport, milliseconds, percentiles

#: Hourly spans longer than a day: one x label a day (every 24 points) over 7 days, one every 5
#: days over 30, so the labels of a phone's chart (twice as sparse) never touch.
_DAY_LABELS = {"week": 24, "month": 5 * 24}


def _both(**chart: Any) -> SafeString:
    """The chart at a desktop width and at a phone's (CSS shows the one that fits), its last
    point the minute or hour under way."""
    wide = line_chart(**chart, partial_last=True)
    every = chart.pop("label_every")
    narrow = line_chart(**chart, label_every=every * 2, partial_last=True, narrow=True)
    return mark_safe(wide + narrow)  # noqa: S308 - both escape their text


def _so_far(report: StatsReport) -> str:
    unit = "minute" if report.resolution == "minute" else "hour"
    return f" The last point, hollow, is the {unit} under way: counted so far."


def _axis(report: StatsReport) -> tuple[list[str], int, str]:
    """The x labels (UTC), how often one is shown, and the span in words."""
    span = f"per {report.resolution} over {PERIODS[report.period].span} (UTC)"
    if report.resolution == "minute":
        labels = [p.at.strftime("%H:%M") for p in report.overall.points]
        return labels, 10, span
    if report.period in _DAY_LABELS:
        labels = [p.at.strftime("%b %d") for p in report.overall.points]
        return labels, _DAY_LABELS[report.period], span
    labels = [p.at.strftime("%H:00") for p in report.overall.points]
    return labels, 4, span


def runtimes(series: Series) -> dict[str, str]:
    """The period's p50, p95 and p99 for people."""
    return {name: milliseconds(value) for name, value in percentiles(series.total).items()}


def _whose(series: Series) -> str:
    return "all queues" if series.queue is None else f"queue {series.queue}"


def throughput_chart(report: StatsReport, series: Series) -> SafeString:
    labels, every, span = _axis(report)
    total = series.total
    return _both(
        title=f"Jobs completed, failed and started, {_whose(series)}, {span}",
        description=(
            f"In all: {total.completed} completed, {total.failed} failed ({total.retried} to be "
            f"retried, {total.dead} dead), {total.started} started. Solid line with circles: "
            "completed; dashed line with squares: failed; dotted line with triangles: started."
            + _so_far(report)
        ),
        x_labels=labels,
        lines=[
            Line("completed", [p.completed for p in series.points], STYLES[0]),
            Line("failed", [p.failed for p in series.points], STYLES[1]),
            Line("started", [p.started for p in series.points], STYLES[2]),
        ],
        label_every=every,
        marker_every=every // 2 or 1,
    )


def runtime_chart(report: StatsReport, series: Series) -> SafeString:
    labels, every, span = _axis(report)
    whole = percentiles(series.total)
    values = {name: [percentiles(p)[name] for p in series.points] for name in whole}
    return _both(
        title=f"Run time of completed jobs, {_whose(series)}, {span}",
        description=(
            f"Over the period: half of the runs took at most {milliseconds(whole['p50'])}, "
            f"95 in 100 at most {milliseconds(whole['p95'])}, 99 in 100 at most "
            f"{milliseconds(whole['p99'])} (each the upper bound of the fixed range the run "
            "time fell in). Solid line with circles: p50; dashed line with squares: p95; "
            "dotted line with triangles: p99. Gaps: no completed run." + _so_far(report)
        ),
        x_labels=labels,
        lines=[
            Line("p50", values["p50"], STYLES[0]),
            Line("p95", values["p95"], STYLES[1]),
            Line("p99", values["p99"], STYLES[2]),
        ],
        time_axis=True,
        label_every=every,
        marker_every=every // 2 or 1,
    )


def rows(report: StatsReport, series: Series) -> list[dict[str, Any]]:
    """The chart's numbers, for the table beside it (newest first), times in UTC."""
    fmt = "%H:%M" if report.resolution == "minute" else "%b %d, %H:00"
    found = []
    for point in reversed(series.points):
        p = percentiles(point)
        found.append(
            {
                "at": point.at,
                "label": point.at.strftime(fmt),
                "started": point.started,
                "completed": point.completed,
                "failed": point.failed,
                "retried": point.retried,
                "dead": point.dead,
                "p50": milliseconds(p["p50"]),
                "p95": milliseconds(p["p95"]),
                "p99": milliseconds(p["p99"]),
            }
        )
    return found
