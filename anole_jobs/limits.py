"""Flow control across every worker: a queue's `global_concurrency`, `rate_limit` and
`partition`, and the one plan every store follows to claim within them (docs/limits.md).

- `global_concurrency` N: at most N jobs of the queue claimed and not yet finished, across
  every process and host (a job claimed ahead by a worker counts).
- `rate_limit` (N, period): at most N claims in any window of `period` (a sliding window,
  counted from the claims themselves).
- `partition`: an args field name, or several: each limit then holds per distinct value
  (per customer, per API key), the way a separate queue per value would.

The store enforces them inside its claim (a row lock, the SQLite write, a Lua script, a lock):
it reads what runs and the recent claims, and asks `plan` which candidates it may take. A job
held back stays ``available`` with its attempt unchanged; the plan says when the rate window
lets the next claim in, so a worker sleeps until then instead of polling.

The plan exists three times: `Planner` here (the memory store, and the SQL stores' limited
claims that PostgreSQL's function does not take: SQLite's, partitioned ones), PostgreSQL's
claim function and the Redis claim script (`_limits.lua`, `claim_limited.lua`), each in the
store's own language so that a claim stays one round trip. One table of scenarios in the
tests (`tests/contract/limit_scenarios.py`) runs against all three, and every store: change
the plan in one, and the table says where the others differ.

A leaf module: it imports nothing of anole_jobs but `bounds` and `durations`.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from anole_jobs.bounds import COUNT_MAX, count_problem
from anole_jobs.durations import to_timedelta

#: `jobs.set_limits`'s default: leave that limit as it is stored.
KEEP: Any = type("Keep", (), {"__repr__": lambda self: "KEEP"})()
#: The options of a queue in QUEUES that set its limits.
LIMIT_KEYS = ("global_concurrency", "rate_limit", "partition", "fairness")
PERIODS = {"s": 1.0, "m": 60.0, "h": 3600.0}
_RATE = re.compile(r"^\s*([0-9]+)\s*/\s*([smh])\s*$")


@dataclass(frozen=True)
class RateLimit:
    """At most `count` claims in any window of `period`."""

    count: int
    period: timedelta

    @property
    def seconds(self) -> float:
        return self.period.total_seconds()

    def __str__(self) -> str:
        seconds = self.seconds
        for unit, size in PERIODS.items():
            if seconds == size:
                return f"{self.count}/{unit}"
        return f"{self.count}/{seconds:g}s"

    def as_json(self) -> dict[str, Any]:
        return {"count": self.count, "period": self.seconds, "text": str(self)}


def parse_rate(value: object, *, name: str = "rate_limit") -> RateLimit:
    """``"N/s"``, ``"N/m"``, ``"N/h"`` or ``(N, duration)`` (a timedelta or seconds) as a
    `RateLimit`; `ValueError` naming `name` for anything else."""
    if isinstance(value, RateLimit):
        return value
    if isinstance(value, str):
        match = _RATE.match(value)
        if match is None:
            raise ValueError(
                f'{name} must look like "N/s", "N/m" or "N/h" (N a whole number), got {value!r}'
            )
        digits = match.group(1).lstrip("0") or "0"
        if len(digits) > len(str(COUNT_MAX)):  # int() of thousands of digits refuses anyway
            raise ValueError(f"{name} may allow at most {COUNT_MAX} jobs per period")
        count = int(digits)
        period = timedelta(seconds=PERIODS[match.group(2)])
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        count = value[0]
        if isinstance(count, bool) or not isinstance(count, int):
            raise ValueError(
                f"{name}: the count of (count, duration) must be an int, got {count!r}"
            )
        period = to_timedelta(value[1], name=f"{name}'s duration")
    else:
        raise ValueError(
            f'{name} must be "N/s", "N/m", "N/h" or a pair (N, duration), got {value!r}'
        )
    if count < 1:
        raise ValueError(f"{name} must allow at least 1 job per period, got {count}")
    if count > COUNT_MAX:
        raise ValueError(f"{name} may allow at most {COUNT_MAX} jobs per period, got {count}")
    if period <= timedelta(0):
        raise ValueError(f"{name}'s period must be positive, got {period}")
    return RateLimit(count, period)


def parse_concurrency(value: object, *, name: str = "global_concurrency") -> int:
    """A whole number from 1 to `bounds.COUNT_MAX`; `ValueError` naming `name` otherwise."""
    problem = count_problem(value, what=name)
    if problem is not None:
        raise ValueError(problem)
    return value  # type: ignore[return-value]  # checked: an int


def parse_partition(value: object, *, name: str = "partition") -> tuple[str, ...]:
    """An args field name, or a non-empty list of them, as a tuple."""
    fields = [value] if isinstance(value, str) else value
    if (
        not isinstance(fields, (list, tuple))
        or not fields
        or not all(isinstance(f, str) and f for f in fields)
    ):
        raise ValueError(
            f"{name} must be an args field name or a non-empty list of them, got {value!r}"
        )
    if len(set(fields)) != len(fields):
        raise ValueError(f"{name} names a field twice: {value!r}")
    return tuple(fields)


@dataclass(frozen=True)
class Fairness:
    """A queue's fairness (docs/flow-control.md): the args fields whose values take turns, and
    the weight of some values (a value not listed weighs 1). A value is keyed as a partition
    is (`partition_key`): the JSON of the field's value, or of the list of the fields'."""

    fields: tuple[str, ...]
    weights: Mapping[str, float] = field(default_factory=dict)

    def key(self, args: Mapping[str, Any]) -> str:
        return partition_key(args, self.fields)

    def weight(self, key: str) -> float:
        return self.weights.get(key, 1.0)


def parse_fairness(value: object, *, name: str = "fairness") -> Fairness:
    """An args field name, a list of them, or ``{"key": field(s), "weights": {value: weight}}``
    as a `Fairness`; `ValueError` naming `name` for anything else."""
    weights: Mapping[Any, Any] = {}
    key = value
    if isinstance(value, Mapping):
        unknown = set(value) - {"key", "weights"}
        if unknown or "key" not in value:
            raise ValueError(
                f'{name} as a dict takes "key" (an args field name or a list of them) and'
                f' optionally "weights" ({{value: weight}}), got {value!r}'
            )
        key = value["key"]
        weights = value.get("weights") or {}
        if not isinstance(weights, Mapping):
            raise ValueError(f"{name}['weights'] must be a dict {{value: weight}}, got {weights!r}")
    fields = parse_partition(key, name=name if not isinstance(value, Mapping) else f"{name}['key']")
    parsed: dict[str, float] = {}
    for raw, weight in weights.items():
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not 0 < weight <= 1_000_000
            or weight != weight
        ):
            raise ValueError(
                f"{name}['weights'][{raw!r}] must be a positive number (at most 1000000),"
                f" got {weight!r}"
            )
        values = raw if isinstance(raw, tuple) and len(fields) > 1 else None
        if values is not None:
            parsed[json.dumps(list(values), sort_keys=True, default=str)] = float(weight)
        else:
            parsed[json.dumps(raw, sort_keys=True, default=str)] = float(weight)
    return Fairness(fields, parsed)


@dataclass(frozen=True, kw_only=True)
class Limits:
    """A queue's limits in force (from the settings, or set at runtime), and the flow rules its
    claim keeps: its `fairness`, and `sequenced` when jobs of a kind with a sequence may be
    among those claimed (docs/flow-control.md)."""

    global_concurrency: int | None = None
    rate_limit: RateLimit | None = None
    partition: tuple[str, ...] = ()
    fairness: Fairness | None = None
    sequenced: bool = False

    @property
    def active(self) -> bool:
        return self.global_concurrency is not None or self.rate_limit is not None

    @property
    def flow(self) -> bool:
        """Whether a claim must keep fairness or sequences (the flow claim)."""
        return self.fairness is not None or self.sequenced

    def key(self, args: Mapping[str, Any]) -> str:
        """The partition a job's args fall in ("" without a partition): the JSON of the
        fields' values, a missing field as null."""
        return partition_key(args, self.partition)

    def overlay(self, runtime: RuntimeLimits | None) -> Limits:
        """These limits with what was set at runtime in their place."""
        if runtime is None or runtime.empty:
            return self
        return Limits(
            global_concurrency=(
                runtime.global_concurrency
                if runtime.global_concurrency is not None
                else self.global_concurrency
            ),
            rate_limit=runtime.rate_limit if runtime.rate_limit is not None else self.rate_limit,
            partition=self.partition,
            fairness=self.fairness,
            sequenced=self.sequenced,
        )


@dataclass(frozen=True, kw_only=True)
class RuntimeLimits:
    """What `jobs.set_limits` stored for a queue (None: the setting applies)."""

    global_concurrency: int | None = None
    rate_limit: RateLimit | None = None

    @property
    def empty(self) -> bool:
        return self.global_concurrency is None and self.rate_limit is None


def partition_key(args: Mapping[str, Any], fields: Sequence[str]) -> str:
    if not fields:
        return ""
    values = [args.get(name) for name in fields]
    return json.dumps(values[0] if len(values) == 1 else values, sort_keys=True, default=str)


@dataclass(kw_only=True)
class Plan:
    """What one claim may take: the indexes of the candidates taken (in order), the window
    of recent claims as it is after this claim, whether a limit held some candidate back,
    and when the earliest rate window reopens (epoch seconds, None when only a finish can
    make room)."""

    taken: list[int] = field(default_factory=list)
    window: dict[str, list[float]] = field(default_factory=dict)
    held: bool = False
    reopens_at: float | None = None
    #: Partitions full now: a store that pages through candidates skips them.
    full: set[str] = field(default_factory=set)


class Planner:
    """Decides, candidate by candidate in claim order, what one claim may take.

    `running` counts the queue's claimed, unfinished jobs per partition; `window` holds the
    claim times (epoch seconds) of each partition's recent claims. Feed candidates with
    `offer` (page by page if the store pages), then `finish` to get the window to store."""

    def __init__(
        self,
        limits: Limits,
        *,
        now: float,
        want: int,
        running: Mapping[str, int],
        window: Mapping[str, Sequence[float]],
    ) -> None:
        self.limits = limits
        self.now = now
        self.want = want
        self.running = dict(running)
        rate = limits.rate_limit
        # A claim counts the claims whose times fall in its window, (now - period, ...]:
        # later ones too, made by claimers whose clocks read later before they took their
        # turn. Claims stay stored for one period more than that, so a claimer whose clock
        # read earlier (up to a period: it waited for its turn) still finds every claim of
        # its own window, even those a later-clocked claimer no longer counted.
        keep = now - 2 * rate.seconds if rate is not None else math.inf
        self.since = now - rate.seconds if rate is not None else math.inf
        self.window = {
            key: kept
            for key, times in window.items()
            if (kept := sorted(t for t in times if t > keep))
        }
        self.plan = Plan()

    def counted(self, key: str) -> list[float]:
        """The claims of partition `key` in this claim's window, oldest first."""
        times = self.window.get(key, [])
        return times[bisect.bisect_right(times, self.since) :]

    @property
    def done(self) -> bool:
        return len(self.plan.taken) >= self.want

    def room(self, key: str) -> int:
        """How many more jobs of partition `key` this claim may take."""
        room = math.inf
        limits = self.limits
        if limits.global_concurrency is not None:
            room = min(room, limits.global_concurrency - self.running.get(key, 0))
        if limits.rate_limit is not None:
            room = min(room, limits.rate_limit.count - len(self.counted(key)))
        return int(max(0, min(room, self.want - len(self.plan.taken))))

    def offer(self, candidates: Iterable[tuple[int, str]]) -> None:
        """Candidates as (index, partition key), in claim order."""
        plan = self.plan
        for index, key in candidates:
            if self.done:
                return
            if key in plan.full:
                continue
            if self.room(key) <= 0:
                self._hold(key)
                continue
            plan.taken.append(index)
            self.running[key] = self.running.get(key, 0) + 1
            if self.limits.rate_limit is not None:
                bisect.insort(self.window.setdefault(key, []), self.now)

    def _hold(self, key: str) -> None:
        plan = self.plan
        plan.held = True
        plan.full.add(key)
        rate = self.limits.rate_limit
        if rate is None:
            return
        times = self.counted(key)
        concurrency = self.limits.global_concurrency
        if len(times) >= rate.count and (
            concurrency is None or self.running.get(key, 0) < concurrency
        ):
            # Held by the rate alone: room comes back when the oldest claim leaves the window.
            reopens = times[len(times) - rate.count] + rate.seconds
            if plan.reopens_at is None or reopens < plan.reopens_at:
                plan.reopens_at = reopens

    def finish(self) -> Plan:
        self.plan.window = self.window
        return self.plan


def held_count(
    limits: Limits,
    *,
    now: float,
    available: Mapping[str, int],
    running: Mapping[str, int],
    window: Mapping[str, Sequence[float]],
) -> int:
    """How many ``available`` jobs (counted per partition in `available`) the limits hold
    back at `now`: in each partition, those beyond the room its limits leave."""
    if not limits.active:
        return 0
    planner = Planner(limits, now=now, want=1 << 62, running=running, window=window)
    held = 0
    for key, waiting in available.items():
        held += max(0, waiting - planner.room(key))
    return held


def fair_orders(start: float, last: float | None, weight: float, n: int) -> list[float]:
    """The turn orders of `n` new jobs of one fairness value (weighted fair queuing): each job
    of a value takes the turn 1/weight after the one before it, and a value with no job
    waiting since `last` starts from the queue's current turn `start`. A claim takes a
    fair queue's jobs of equal priority in this order."""
    base = start if last is None else max(last, start)
    step = 1.0 / weight
    return [base + step * (i + 1) for i in range(n)]
