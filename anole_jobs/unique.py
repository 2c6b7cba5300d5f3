"""Unique jobs: the `Unique` option and the key it gives a job. Pure functions.

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
    until it is pruned (an idempotency key).
    """

    key: str | None
    period: timedelta | None
    scope: Literal["live", "any"]

    def __init__(
        self,
        key: str | None = None,
        period: Duration | None = None,
        scope: Literal["live", "any"] = "live",
    ) -> None:
        if key is not None and not isinstance(key, str):
            raise InvalidJob(f"Unique(key=...) must be a string, got {type(key).__name__}")
        if scope not in ("live", "any"):
            raise InvalidJob(f'Unique(scope=...) must be "live" or "any", got {scope!r}')
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
