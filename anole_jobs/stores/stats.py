"""Per-queue, per-minute job statistics: what the stores count and what `Store.stats` returns.

Each store keeps, per queue and per minute (UTC), how many jobs were started (claimed),
completed, failed and retried, and failed for good (dead), and a histogram of the run times of
the completed ones, in the same write that moves the job (SQL triggers and PostgreSQL's claim
and finish functions, the Redis scripts, the memory store's lock). Reading a day of them costs
in proportion to the minutes, never to the jobs.

What lands where (the same rule on every store):

- **started**: a job claimed (any state to ``running``), in the minute of its claim;
- **completed**: a run that ended ``completed``, in the minute it ended; its run time (end
  minus claim) goes into the histogram;
- **retried**: a run that failed and will run again (``retrying`` with its error, or a lapsed
  lease put back to ``available``), in the minute it failed;
- **dead**: a run that failed for good (``dead``, by a failure or a lapsed lease on the last
  attempt), in the minute it ended.

Snoozes, drains, cancellations and admin actions count nothing.

History (the same rule on every store): the leader rolls each hour that has ended up into one
row per queue (`Store.roll_up_stats`), from that hour's minutes, off the jobs' path: no job
write costs more for it. Minutes are kept for ``STATS['MINUTES']`` (a day by default), hours
for ``STATS['HOURS']`` (30 days), both pruned by the leader (`Store.prune_stats`), minutes only
once their hour is rolled, and by whole hours, so an hour's minutes are all there or all gone.
A per-hour read takes an hour's rolled row where there is one, else sums its minutes
(`hourly_points`): the answer is the same just before and just after a roll-up.

A roll-up is idempotent: it re-sums an hour from its minutes and writes the sums over the
hour's row, and it writes them only when they count more runs than the row already holds
(the counters only grow while an hour's minutes are kept), so rolling an hour twice, or from
two leaders, or again after a crash half-way, gives the same row. Each roll-up starts from the
last hour rolled (summed again: a run that ended just before the hour's end may reach the
store a little after it) and goes to the last hour that has ended, so a leader that could not
roll for a while catches up every hour whose minutes are kept.

Run times go into fixed buckets (`RUNTIME_BUCKETS_MS`, upper bounds, and one more for longer
runs); a percentile is the upper bound of the bucket holding it, never more than the longest
run of the period (`StatsPoint.percentile`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from anole_jobs.conf import STATS_MINUTES_MAX

#: The run-time histogram's bucket upper bounds, in milliseconds (a run of exactly a bound
#: falls in its bucket); runs longer than the last bound fall in one more bucket.
RUNTIME_BUCKETS_MS: tuple[int, ...] = (
    1,
    2,
    5,
    10,
    20,
    50,
    100,
    200,
    500,
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    60_000,
    300_000,
    900_000,
    3_600_000,
)
#: How many buckets a histogram has (the bounds and one for longer runs).
BUCKETS = len(RUNTIME_BUCKETS_MS) + 1
#: The histogram's counters, one per bucket, as the stores name them.
STAT_BUCKET_COLUMNS: tuple[str, ...] = tuple(f"h{i}" for i in range(BUCKETS))
#: Every counter of one (queue, minute), in the order `point_from_row` reads them (the SQL
#: stores' columns, the Redis hash fields).
STAT_COLUMNS: tuple[str, ...] = (
    "started",
    "completed",
    "retried",
    "dead",
    "total_ms",
    "max_ms",
    *STAT_BUCKET_COLUMNS,
)
#: The longest the stores keep a minute's counters (``STATS['MINUTES']`` may be shorter): on
#: Redis each minute's hash expires this long after its last write.
STATS_KEEP = STATS_MINUTES_MAX

Resolution = Literal["minute", "hour"]
RESOLUTIONS: tuple[Resolution, ...] = ("minute", "hour")
_STEP = {"minute": 60, "hour": 3600}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def bucket_of(run_ms: int) -> int:
    """The histogram bucket of a run of `run_ms` milliseconds."""
    return bisect.bisect_left(RUNTIME_BUCKETS_MS, max(run_ms, 0))


def run_ms(started: datetime, ended: datetime) -> int:
    """A run time in whole milliseconds (rounded up, never negative)."""
    delta = ended - started
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return max(0, -(-micros // 1000))


def minute_number(moment: datetime) -> int:
    """Minutes since 1970-01-01T00:00Z of the minute holding `moment` (aware)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) // 60


def minute_start(number: int) -> datetime:
    return _EPOCH + timedelta(minutes=number)


def hour_number(moment: datetime) -> int:
    """Hours since 1970-01-01T00:00Z of the hour holding `moment` (aware)."""
    return minute_number(moment) // 60


def hour_start(number: int) -> datetime:
    return _EPOCH + timedelta(hours=number)


def runs_counted(row: Sequence[int]) -> int:
    """How many moves a flat row (`STAT_COLUMNS` order) counts: every counted move adds one to
    started, completed, retried or dead, so a later sum of an hour's minutes never counts
    fewer (a roll-up writes an hour's row only when it counts more, see the module)."""
    return sum(int(v or 0) for v in row[:4])


def sum_rows(rows: Iterable[Sequence[int]]) -> list[int] | None:
    """Flat rows (`STAT_COLUMNS` order) summed, the longest run kept; None for no rows."""
    max_at = STAT_COLUMNS.index("max_ms")
    total: list[int] | None = None
    for row in rows:
        if total is None:
            total = [int(v or 0) for v in row]
        else:
            _add_row(total, row, max_at)
    return total


def _add_row(total: list[int], row: Sequence[Any], max_at: int) -> None:
    """Add one row of counters to `total` in place (the longest run is a maximum, not a sum)."""
    for index, value in enumerate(row):
        if value:
            if index == max_at:
                total[index] = max(total[index], int(value))
            else:
                total[index] += int(value)


def minutes_to_prune(minutes_before: datetime, rolled_through: int | None) -> int:
    """The first minute number a stats prune keeps: whole hours only, none after the last hour
    rolled (`rolled_through`, None when none was), so no minute goes before its hour's row
    holds it."""
    if rolled_through is None:
        return 0
    return 60 * min(hour_number(minutes_before), rolled_through + 1)


def roll_range(rolled_through: int | None, oldest_minute: int | None, now: datetime) -> range:
    """The hours a roll-up at `now` sums: from the last one rolled (again) or, before any was,
    the hour of the oldest minute kept, through the last hour that has ended."""
    last = hour_number(now) - 1
    if rolled_through is not None:
        first = rolled_through
    elif oldest_minute is not None:
        first = oldest_minute // 60
    else:
        return range(0)
    return range(first, last + 1)


def hourly_points(
    hours: Mapping[str, Mapping[int, Sequence[int]]],
    minutes: Mapping[str, Mapping[int, Sequence[int]]],
) -> StatsByQueue:
    """Per-hour points from the rolled rows ``{queue: {hour number: row}}`` and the minutes
    ``{queue: {minute number: row}}`` of the same range: an hour's rolled row where there is
    one (its minutes may be gone), else the sum of its minutes (not rolled yet)."""
    by_hour: dict[str, dict[int, Sequence[int]]] = {}
    for queue, summed in roll_up_minutes(minutes).items():
        by_hour[queue] = dict(summed)
    for queue, rolled in hours.items():
        by_hour.setdefault(queue, {}).update(rolled)
    out: StatsByQueue = {}
    for queue, rows in by_hour.items():
        if rows:
            out[queue] = [point_from_row(hour_start(h), tuple(rows[h])) for h in sorted(rows)]
    return out


def roll_up_minutes(
    minutes: Mapping[str, Mapping[int, Sequence[int]]],
) -> dict[str, dict[int, list[int]]]:
    """``{queue: {minute number: row}}`` summed per hour: ``{queue: {hour number: row}}``."""
    out: dict[str, dict[int, list[int]]] = {}
    for queue, by_minute in minutes.items():
        grouped: dict[int, list[Sequence[int]]] = {}
        for number, row in by_minute.items():
            grouped.setdefault(number // 60, []).append(row)
        out[queue] = {hour: sum_rows(rows) or [] for hour, rows in grouped.items()}
    return out


def floor_time(moment: datetime, resolution: Resolution) -> datetime:
    """The start of the minute or hour holding `moment`, in UTC."""
    step = _STEP[resolution]
    delta = moment - _EPOCH
    seconds = delta.days * 86_400 + delta.seconds
    return _EPOCH + timedelta(seconds=seconds - seconds % step)


def step_of(resolution: Resolution) -> timedelta:
    return timedelta(seconds=_STEP[resolution])


def check_range(since: datetime, until: datetime, resolution: str) -> None:
    """Refuse a malformed `stats` query (every store calls it first)."""
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be 'minute' or 'hour', got {resolution!r}")
    if since.tzinfo is None or until.tzinfo is None:
        raise ValueError("since and until must be aware datetimes")
    if until < since:
        raise ValueError(f"until ({until.isoformat()}) is before since ({since.isoformat()})")


@dataclass(frozen=True, kw_only=True)
class StatsPoint:
    """One minute or hour of one queue (or of several, summed)."""

    at: datetime  # the start of the minute or hour, UTC
    started: int = 0
    completed: int = 0
    retried: int = 0
    dead: int = 0
    #: Completed runs per run-time bucket (`RUNTIME_BUCKETS_MS`, then longer).
    runtime: tuple[int, ...] = field(default=(0,) * BUCKETS)
    runtime_total_ms: int = 0
    runtime_max_ms: int = 0

    @property
    def failed(self) -> int:
        """Failed runs: retried and dead."""
        return self.retried + self.dead

    def plus(self, other: StatsPoint) -> StatsPoint:
        """This point and `other` summed (at this point's time)."""
        return replace(
            self,
            started=self.started + other.started,
            completed=self.completed + other.completed,
            retried=self.retried + other.retried,
            dead=self.dead + other.dead,
            runtime=tuple(a + b for a, b in zip(self.runtime, other.runtime, strict=True)),
            runtime_total_ms=self.runtime_total_ms + other.runtime_total_ms,
            runtime_max_ms=max(self.runtime_max_ms, other.runtime_max_ms),
        )

    def percentile(self, q: float) -> int | None:
        """The run time (ms) that `q` (0 < q <= 1) of the completed runs took at most: the upper
        bound of the bucket holding that rank, capped at the longest run. None without runs."""
        if not 0 < q <= 1:
            raise ValueError(f"a percentile is between 0 and 1, got {q!r}")
        runs = sum(self.runtime)
        if runs == 0:
            return None
        rank = max(1, math.ceil(q * runs))
        seen = 0
        for index, n in enumerate(self.runtime):
            seen += n
            if seen >= rank:
                bound = RUNTIME_BUCKETS_MS[index] if index < len(RUNTIME_BUCKETS_MS) else None
                return self.runtime_max_ms if bound is None else min(bound, self.runtime_max_ms)
        return self.runtime_max_ms  # unreachable: the ranks add up

    @property
    def mean_ms(self) -> float | None:
        runs = sum(self.runtime)
        return self.runtime_total_ms / runs if runs else None


#: What `Store.stats` returns: ``{queue: [point, ...]}``, in time order.
StatsByQueue = dict[str, list[StatsPoint]]


def sum_points(at: datetime, points: Iterable[StatsPoint]) -> StatsPoint:
    total = StatsPoint(at=at)
    for point in points:
        total = total.plus(point)
    return total


def point_from_row(at: datetime, row: tuple[int, ...]) -> StatsPoint:
    """A point from the stores' flat row: started, completed, retried, dead, total ms, max ms,
    then the `BUCKETS` histogram counts."""
    values = [int(v or 0) for v in row]
    return StatsPoint(
        at=at,
        started=values[0],
        completed=values[1],
        retried=values[2],
        dead=values[3],
        runtime_total_ms=values[4],
        runtime_max_ms=values[5],
        runtime=tuple(values[6 : 6 + BUCKETS]),
    )


def roll_up_rows(
    minutes: dict[str, dict[int, Sequence[int]]], resolution: Resolution
) -> StatsByQueue:
    """``{queue: {minute number: row}}`` (rows as `point_from_row` reads them) as
    ``{queue: [point]}`` at `resolution`, in time order: summed as plain lists, so a day of
    minutes costs one point per hour, not one per minute."""
    step = _STEP[resolution] // 60
    max_at = STAT_COLUMNS.index("max_ms")
    out: StatsByQueue = {}
    for queue, by_minute in minutes.items():
        grouped: dict[int, list[int]] = {}
        for number, row in by_minute.items():
            start = number - number % step
            total = grouped.get(start)
            if total is None:
                grouped[start] = [int(v or 0) for v in row]
            else:
                _add_row(total, row, max_at)
        if grouped:
            out[queue] = [
                point_from_row(minute_start(start), tuple(grouped[start]))
                for start in sorted(grouped)
            ]
    return out


def roll_up(
    minutes: dict[str, dict[int, StatsPoint]], resolution: Resolution
) -> dict[str, list[StatsPoint]]:
    """``{queue: {minute number: point}}`` as ``{queue: [point]}`` at `resolution`, in time
    order, points with nothing left out."""
    out: dict[str, list[StatsPoint]] = {}
    for queue, by_minute in minutes.items():
        grouped: dict[datetime, StatsPoint] = {}
        for number, point in by_minute.items():
            at = floor_time(minute_start(number), resolution)
            grouped[at] = grouped[at].plus(point) if at in grouped else replace(point, at=at)
        if grouped:
            out[queue] = [grouped[at] for at in sorted(grouped)]
    return out


class MinuteCounters:
    """The memory store's counters (the other stores keep the same in their own way): one
    mutable row per queue and minute, made a `StatsPoint` only when read."""

    def __init__(self) -> None:
        # [started, completed, retried, dead, runtime buckets, total ms, max ms]
        self._rows: dict[str, dict[int, list[Any]]] = {}
        # The rolled-up hours: {queue: {hour number: flat row}} (`STAT_COLUMNS` order).
        self._hours: dict[str, dict[int, list[int]]] = {}

    def _row(self, queue: str, at: datetime) -> list[Any]:
        number = minute_number(at)
        per_queue = self._rows.get(queue)
        if per_queue is None:
            per_queue = self._rows[queue] = {}
        row = per_queue.get(number)
        if row is None:
            row = per_queue[number] = [0, 0, 0, 0, [0] * BUCKETS, 0, 0]
        return row

    def started(self, queue: str, at: datetime) -> None:
        self._row(queue, at)[0] += 1

    def completed(self, queue: str, started: datetime | None, ended: datetime) -> None:
        ms = run_ms(started, ended) if started is not None else 0
        row = self._row(queue, ended)
        row[1] += 1
        row[4][bucket_of(ms)] += 1
        row[5] += ms
        if ms > row[6]:
            row[6] = ms

    def failed(self, queue: str, at: datetime, *, dead: bool) -> None:
        self._row(queue, at)[3 if dead else 2] += 1

    def query(
        self, queues: Iterable[str] | None, since: datetime, until: datetime, resolution: Resolution
    ) -> dict[str, list[StatsPoint]]:
        first = minute_number(floor_time(since, resolution))
        last = minute_number(until)
        wanted = (self._rows.keys() | self._hours.keys()) if queues is None else set(queues)
        if resolution == "hour":
            minutes = {
                queue: {
                    n: _flat(row)
                    for n, row in self._rows.get(queue, {}).items()
                    if first <= n <= last
                }
                for queue in wanted
            }
            hours = {
                queue: {
                    h: row
                    for h, row in self._hours.get(queue, {}).items()
                    if first // 60 <= h <= last // 60
                }
                for queue in wanted
            }
            return hourly_points(hours, minutes)
        selected = {
            queue: {
                n: _point(n, row)
                for n, row in self._rows.get(queue, {}).items()
                if first <= n <= last
            }
            for queue in wanted
        }
        return roll_up(selected, resolution)

    def rolled_through(self) -> int | None:
        """The last hour rolled up, None before any."""
        return max((max(rows) for rows in self._hours.values() if rows), default=None)

    def roll_up(self, now: datetime) -> int:
        """Roll the hours that ended by `now` (see the module); how many rows it wrote."""
        oldest = min((min(rows) for rows in self._rows.values() if rows), default=None)
        hours = roll_range(self.rolled_through(), oldest, now)
        if not hours:
            return 0
        written = 0
        for queue, by_minute in self._rows.items():
            summed = roll_up_minutes(
                {queue: {n: _flat(r) for n, r in by_minute.items() if n // 60 in hours}}
            )[queue]
            for hour, row in summed.items():
                kept = self._hours.setdefault(queue, {})
                if hour not in kept or runs_counted(row) > runs_counted(kept[hour]):
                    kept[hour] = row
                    written += 1
        return written

    def prune(self, minutes_before: datetime, hours_before: datetime) -> None:
        oldest = minutes_to_prune(minutes_before, self.rolled_through())
        for queue in list(self._rows):
            kept = {n: r for n, r in self._rows[queue].items() if n >= oldest}
            if kept:
                self._rows[queue] = kept
            else:
                del self._rows[queue]
        oldest_hour = hour_number(hours_before)
        for queue in list(self._hours):
            hours = {h: r for h, r in self._hours[queue].items() if h >= oldest_hour}
            if hours:
                self._hours[queue] = hours
            else:
                del self._hours[queue]


def _flat(row: list[Any]) -> list[int]:
    """A `MinuteCounters` row as a flat row (`STAT_COLUMNS` order)."""
    started, completed, retried, dead, runtime, total_ms, max_ms = row
    return [started, completed, retried, dead, total_ms, max_ms, *runtime]


def _point(number: int, row: list[Any]) -> StatsPoint:
    """A `MinuteCounters` row as the minute's `StatsPoint`."""
    started, completed, retried, dead, runtime, total_ms, max_ms = row
    return StatsPoint(
        at=minute_start(number),
        started=started,
        completed=completed,
        retried=retried,
        dead=dead,
        runtime=tuple(runtime),
        runtime_total_ms=total_ms,
        runtime_max_ms=max_ms,
    )
