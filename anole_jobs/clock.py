"""The ONLY reader of time in anole_jobs.

Every time written to a store comes from the configured `CLOCK`; the runtime's timeouts and
waits use `monotonic()`. Keeping both here makes the fake clock cover every code path: a lint
rule bans other reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The default `CLOCK`: the wall time, aware, in UTC."""
    return datetime.now(UTC)


def monotonic() -> float:
    """Seconds on a clock that never goes back; for deadlines and intervals, never stored."""
    return time.monotonic()


def checked(clock: Clock) -> Clock:
    """Wrap `clock` so a naive or non-datetime reading fails loudly instead of corrupting rows."""

    def read() -> datetime:
        now = clock()
        if not isinstance(now, datetime) or now.tzinfo is None:
            raise TypeError(f"CLOCK must return an aware datetime, got {now!r}")
        return now.astimezone(UTC)

    read.__wrapped__ = clock  # type: ignore[attr-defined]
    return read


def log_record_ns() -> int:
    """Nanoseconds since the epoch, as `logging` stamps a record: for the per-job log record
    `worker.logline` makes itself. A log line's time is the real one, never `CLOCK`'s."""
    return time.time_ns()
