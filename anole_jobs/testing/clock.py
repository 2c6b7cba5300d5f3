"""`FakeClock`: the `CLOCK` for tests, one that only moves when told."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from anole_jobs.durations import Duration, to_timedelta

DEFAULT_START = datetime(2030, 1, 1, tzinfo=UTC)


class FakeClock:
    """A settable clock: calling it returns an aware UTC datetime that changes only through
    `advance(d)` and `set(dt)`. Thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._now = self._aware(start or DEFAULT_START)

    @staticmethod
    def _aware(value: datetime) -> datetime:
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise ValueError(f"FakeClock needs an aware datetime, got {value!r}")
        return value.astimezone(UTC)

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, delta: Duration) -> datetime:
        step = to_timedelta(delta, name="advance")
        with self._lock:
            self._now += step
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = self._aware(moment)

    def __repr__(self) -> str:
        return f"FakeClock({self():%Y-%m-%dT%H:%M:%S%z})"
