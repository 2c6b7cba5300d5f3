"""Unique and debounced jobs: the `Unique` and `Debounce` options and the keys they give a job.
Pure functions.

Leaf rule: imports only `durations`, `errors` and `codec`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from anole_jobs.codec import canonical_json
from anole_jobs.durations import Duration, to_timedelta
from anole_jobs.errors import InvalidJob

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, init=False)
class Unique:
    """While a job with the same key is waiting or running, enqueue returns it instead.

    `key` replaces the arguments in the key; `period` makes the key unique per window of that
    length, aligned to the Unix epoch; `scope="any"` keeps the key after the job finished,
    until it is pruned (an idempotency key). `on_conflict="replace"` makes the newest enqueue
    win instead: the waiting duplicate is cancelled (error type ``Replaced``), a running one is
    cancelled too, and the new job is inserted, in one store write.
    """

    key: str | None
    period: timedelta | None
    scope: Literal["live", "any"]
    on_conflict: Literal["keep", "replace"]

    def __init__(
        self,
        key: str | None = None,
        period: Duration | None = None,
        scope: Literal["live", "any"] = "live",
        on_conflict: Literal["keep", "replace"] = "keep",
    ) -> None:
        if key is not None and not isinstance(key, str):
            raise InvalidJob(f"Unique(key=...) must be a string, got {type(key).__name__}")
        if scope not in ("live", "any"):
            raise InvalidJob(f'Unique(scope=...) must be "live" or "any", got {scope!r}')
        if on_conflict not in ("keep", "replace"):
            raise InvalidJob(
                f'Unique(on_conflict=...) must be "keep" or "replace", got {on_conflict!r}'
            )
        if on_conflict == "replace" and scope == "any":
            raise InvalidJob(
                'Unique(on_conflict="replace") replaces waiting or running duplicates; it cannot '
                'go with scope="any", which keeps the key of finished jobs'
            )
        window = None
        if period is not None:
            try:
                window = to_timedelta(period, name="Unique(period=...)")
            except ValueError as exc:
                raise InvalidJob(str(exc)) from None
            if window <= timedelta(0):
                raise InvalidJob("Unique(period=...) must be positive")
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "period", window)
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "on_conflict", on_conflict)


def window_start(now: datetime, period: timedelta) -> datetime:
    """The start of the epoch-aligned window of length `period` that holds `now`."""
    elapsed = now - EPOCH
    return EPOCH + (elapsed // period) * period


def unique_key(kind: str, args: dict[str, Any], unique: Unique, *, now: datetime) -> str:
    """The stored key: the kind, then a digest of the arguments (or `key`) and the window."""
    basis = canonical_json(args) if unique.key is None else "key:" + unique.key
    if unique.period is not None:
        basis += "@" + window_start(now, unique.period).isoformat()
    digest = hashlib.sha256(basis.encode()).hexdigest()[:40]
    return f"{kind}:{digest}"


@dataclass(frozen=True, init=False)
class Debounce:
    """Fold a burst of enqueues into one job: enqueues of the same kind whose `by` fields have
    the same values, each within `wait` of the one before, make one waiting job that runs
    `wait` after the last of them (or `max_wait` after the first, at the latest) with the last
    one's arguments. `by` is a field name or a tuple of them (empty: every job of the kind)."""

    by: tuple[str, ...]
    wait: timedelta
    max_wait: timedelta | None

    def __init__(
        self,
        by: str | tuple[str, ...] | list[str] = (),
        wait: Duration = 1.0,
        max_wait: Duration | None = None,
    ) -> None:
        fields = (by,) if isinstance(by, str) else by
        if not isinstance(fields, (tuple, list)) or not all(
            isinstance(name, str) and name for name in fields
        ):
            raise InvalidJob(
                f"Debounce(by=...) must be a field name or a tuple of them, got {by!r}"
            )
        try:
            wait_td = to_timedelta(wait, name="Debounce(wait=...)")
            max_td = None
            if max_wait is not None:
                max_td = to_timedelta(max_wait, name="Debounce(max_wait=...)")
        except ValueError as exc:
            raise InvalidJob(str(exc)) from None
        if wait_td <= timedelta(0):
            raise InvalidJob("Debounce(wait=...) must be positive")
        if max_td is not None and max_td < wait_td:
            raise InvalidJob("Debounce(max_wait=...) must be at least wait")
        object.__setattr__(self, "by", tuple(fields))
        object.__setattr__(self, "wait", wait_td)
        object.__setattr__(self, "max_wait", max_td)

    def values(self, args: dict[str, Any], *, where: str) -> dict[str, Any]:
        """The values of the `by` fields in a job's encoded `args`."""
        missing = [name for name in self.by if name not in args]
        if missing:
            raise InvalidJob(
                f"{where}: Debounce(by=...) names {', '.join(map(repr, missing))}, which the "
                f"job's arguments do not have"
            )
        return {name: args[name] for name in self.by}


#: The start of every debounce key: unique keys are "<kind>:<digest>", so none begins so.
DEBOUNCE_PREFIX = "debounce:"


def debounce_key(kind: str, values: dict[str, Any]) -> str:
    """The key that folds a kind's enqueues whose `by` fields have `values`."""
    digest = hashlib.sha256(canonical_json(values).encode()).hexdigest()[:40]
    return f"{DEBOUNCE_PREFIX}{kind}:{digest}"
