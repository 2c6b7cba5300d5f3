"""Run statistics for people: the last hour per minute, or the last day, 7 days or 30 days per
hour, per queue and for all queues together, with run-time percentiles (the charts,
``GET /stats``, ``manage.py jobs stats``).

`parse_stats` reads ``queue`` and ``period`` (a query string, the CLI's options) and refuses
what cannot be used with one `BadInput` naming the field. `read_stats` asks the store for the
counters it keeps per minute (`Store.stats`, never a scan of the jobs) and fills the periods
with nothing counted with zeros, so every series has one point per minute or hour. `as_json`
is what the JSON route and ``--json`` print.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from anole_jobs.api import jobs
from anole_jobs.operations.clock import now as clock_now
from anole_jobs.operations.names import parse_name
from anole_jobs.operations.problems import BadInput
from anole_jobs.stores.stats import (
    RUNTIME_BUCKETS_MS,
    Resolution,
    StatsPoint,
    floor_time,
    step_of,
    sum_points,
)

FIELDS = ("queue", "period")


@dataclass(frozen=True, kw_only=True)
class Period:
    """A span the surfaces offer: how many points, of what, and its name for people."""

    points: int
    resolution: Resolution
    span: str  # "the last hour"

    @property
    def words(self) -> str:
        """ "the last hour, per minute"."""
        return f"{self.span}, per {self.resolution}"

    @property
    def label(self) -> str:
        """ "last hour, per minute" (a choice in a list)."""
        return self.words.removeprefix("the ")


#: The spans offered, shortest first. Past a day the points are the hours the leader rolled up
#: (kept for ``STATS['HOURS']``, 30 days by default; older hours read as nothing counted).
PERIODS: dict[str, Period] = {
    "hour": Period(points=60, resolution="minute", span="the last hour"),
    "day": Period(points=24, resolution="hour", span="the last day"),
    "week": Period(points=7 * 24, resolution="hour", span="the last 7 days"),
    "month": Period(points=30 * 24, resolution="hour", span="the last 30 days"),
}
DEFAULT_PERIOD = "hour"
#: The percentiles the surfaces show.
PERCENTILES = (("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
_CODE = "bad_filter"


@dataclass(frozen=True, kw_only=True)
class StatsQuery:
    """Which statistics: one queue (None: every queue) over one of `PERIODS`."""

    queue: str | None = None
    period: str = DEFAULT_PERIOD


@dataclass(frozen=True, kw_only=True)
class Series:
    """One queue's points (or all queues' summed: `queue` None), one per minute or hour,
    oldest first, and their sum."""

    queue: str | None
    points: list[StatsPoint]
    total: StatsPoint


@dataclass(frozen=True, kw_only=True)
class StatsReport:
    period: str
    resolution: Resolution
    since: datetime  # the start of the first point
    until: datetime  # now
    overall: Series
    queues: list[Series]  # by queue name


def parse_period(text: str) -> str:
    if text not in PERIODS:
        raise BadInput(
            "period", f"period must be one of {', '.join(PERIODS)}, got {text!r}", code=_CODE
        )
    return text


def parse_stats(query: Mapping[str, Sequence[str]], *, blank_is_absent: bool = False) -> StatsQuery:
    """`query` (each name with every value given) as a `StatsQuery`; unknown names, a name
    given twice and unusable values raise `BadInput`."""
    unknown = sorted(name for name in query if name not in FIELDS)
    if unknown:
        raise BadInput(
            unknown[0],
            f"unknown parameter {unknown[0]!r}; the parameters are {', '.join(FIELDS)}",
            code=_CODE,
        )
    values: dict[str, str] = {}
    for name in FIELDS:
        given = [v for v in query.get(name, ()) if not (blank_is_absent and v == "")]
        if not given:
            continue
        if len(given) > 1:
            raise BadInput(name, f"give {name} once, not {len(given)} times", code=_CODE)
        values[name] = given[0]
    queue = values.get("queue")
    if queue == "":
        raise BadInput("queue", "queue must not be empty", code=_CODE)
    if queue is not None:
        parse_name("queue", queue, code=_CODE)
    return StatsQuery(queue=queue, period=parse_period(values.get("period", DEFAULT_PERIOD)))


def _dense(points: Iterable[StatsPoint], starts: list[datetime]) -> list[StatsPoint]:
    by_time = {p.at: p for p in points}
    return [by_time.get(at) or StatsPoint(at=at) for at in starts]


def read_stats(query: StatsQuery, *, now: datetime | None = None) -> StatsReport:
    """The statistics `query` asks for, up to `now` (the configured clock by default)."""
    until = clock_now() if now is None else now
    period = PERIODS[query.period]
    count, resolution = period.points, period.resolution
    step = step_of(resolution)
    since = floor_time(until, resolution) - step * (count - 1)
    starts = [since + step * i for i in range(count)]
    found = jobs.stats(
        None if query.queue is None else [query.queue],
        since=since,
        until=until,
        resolution=resolution,
    )
    names = sorted(found) if query.queue is None else [query.queue]
    queues = []
    for name in names:
        points = _dense(found.get(name, ()), starts)
        queues.append(Series(queue=name, points=points, total=sum_points(since, points)))
    overall_points = [
        sum_points(at, (series.points[i] for series in queues)) for i, at in enumerate(starts)
    ]
    overall = Series(
        queue=query.queue, points=overall_points, total=sum_points(since, overall_points)
    )
    return StatsReport(
        period=query.period,
        resolution=resolution,
        since=since,
        until=until,
        overall=overall,
        queues=queues,
    )


def percentiles(point: StatsPoint) -> dict[str, int | None]:
    """``{"p50": ms, "p95": ms, "p99": ms}`` of the completed runs (None without any)."""
    return {name: point.percentile(q) for name, q in PERCENTILES}


def milliseconds(value: float | None) -> str:
    """A run time for people: ``-`` for none, ``850ms``, ``2.5s``, ``3.5m``."""
    if value is None:
        return "-"
    if value < 1000:
        return f"{value:.0f}ms"
    if value < 60_000:
        return f"{value / 1000:.3g}s"
    return f"{value / 60_000:.3g}m"


def point_json(point: StatsPoint) -> dict[str, Any]:
    return {
        "at": point.at.isoformat(),
        "started": point.started,
        "completed": point.completed,
        "failed": point.failed,
        "retried": point.retried,
        "dead": point.dead,
        "runtime_ms": {
            **percentiles(point),
            "mean": None if point.mean_ms is None else round(point.mean_ms, 1),
            "max": point.runtime_max_ms if point.completed else None,
        },
    }


def series_json(series: Series) -> dict[str, Any]:
    return {
        "queue": series.queue,
        "total": point_json(series.total),
        "points": [point_json(p) for p in series.points],
    }


def as_json(report: StatsReport) -> dict[str, Any]:
    """What ``GET /stats`` answers."""
    return {
        "period": report.period,
        "resolution": report.resolution,
        "since": report.since.isoformat(),
        "until": report.until.isoformat(),
        "step_seconds": int(step_of(report.resolution) / timedelta(seconds=1)),
        "runtime_buckets_ms": list(RUNTIME_BUCKETS_MS),
        "overall": series_json(report.overall),
        "queues": [series_json(s) for s in report.queues],
    }
