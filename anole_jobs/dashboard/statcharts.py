"""The dashboard's charts of run statistics (`anole_jobs.operations.stats`): jobs started,
completed and failed per minute or hour, and run-time percentiles, as SVG (`charts`)."""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString

from anole_jobs.dashboard.charts import STYLES, Line, line_chart
from anole_jobs.operations.stats import Series, StatsReport, milliseconds, percentiles


def _axis(report: StatsReport) -> tuple[list[str], int, str]:
    """The x labels (UTC), how often one is shown, and the span in words."""
    if report.resolution == "minute":
        labels = [p.at.strftime("%H:%M") for p in report.overall.points]
        return labels, 10, "per minute over the last hour (UTC)"
    labels = [p.at.strftime("%H:00") for p in report.overall.points]
    return labels, 4, "per hour over the last day (UTC)"


def runtimes(series: Series) -> dict[str, str]:
    """The period's p50, p95 and p99 for people."""
    return {name: milliseconds(value) for name, value in percentiles(series.total).items()}


def _whose(series: Series) -> str:
    return "all queues" if series.queue is None else f"queue {series.queue}"


def throughput_chart(report: StatsReport, series: Series) -> SafeString:
    labels, every, span = _axis(report)
    total = series.total
    return line_chart(
        title=f"Jobs completed, failed and started, {_whose(series)}, {span}",
        description=(
            f"In all: {total.completed} completed, {total.failed} failed ({total.retried} to be "
            f"retried, {total.dead} dead), {total.started} started. Solid line with circles: "
            "completed; dashed line with squares: failed; dotted line with triangles: started."
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
    return line_chart(
        title=f"Run time of completed jobs, {_whose(series)}, {span}",
        description=(
            f"Over the period: half of the runs took at most {milliseconds(whole['p50'])}, "
            f"95 in 100 at most {milliseconds(whole['p95'])}, 99 in 100 at most "
            f"{milliseconds(whole['p99'])}. Solid line with circles: p50; dashed line with "
            "squares: p95; dotted line with triangles: p99. Gaps: no completed run."
        ),
        x_labels=labels,
        lines=[
            Line("p50", values["p50"], STYLES[0]),
            Line("p95", values["p95"], STYLES[1]),
            Line("p99", values["p99"], STYLES[2]),
        ],
        y_format=milliseconds,
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
