"""`manual_mode()`: the settings and clean store every jobs test starts from.

The pytest fixtures are built on it, and a `django.test.TestCase` uses it directly with
``self.enterContext(manual_mode())``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from anole_jobs.testing.clock import FakeClock

if TYPE_CHECKING:
    from anole_jobs.api import JobsFacade


def configured() -> dict[str, Any]:
    """A copy of ``settings.ANOLE_JOBS`` as it is now (``{}`` when unset)."""
    from django.conf import settings

    return dict(getattr(settings, "ANOLE_JOBS", None) or {})


@contextmanager
def using_clock(clock: FakeClock) -> Iterator[FakeClock]:
    """Install `clock` as ``ANOLE_JOBS["CLOCK"]`` inside the block."""
    from django.test import override_settings

    with override_settings(ANOLE_JOBS={**configured(), "CLOCK": clock}):
        yield clock


@contextmanager
def manual_mode(clock: FakeClock | None = None) -> Iterator[JobsFacade]:
    """Inside the block: ``RUN="manual"`` on the configured store, `clock` (a new `FakeClock`
    when None) as `CLOCK`, and a store emptied on the way in and on the way out. Yields the
    `jobs` facade; ``jobs.service.clock`` reads the clock."""
    from django.test import override_settings

    from anole_jobs.api import jobs
    from anole_jobs.testing.assertions import empty_store

    overrides = {"RUN": "manual", "CLOCK": clock if clock is not None else FakeClock()}
    with override_settings(ANOLE_JOBS={**configured(), **overrides}):
        empty_store()
        try:
            yield jobs
        finally:
            empty_store()
            jobs.reset()
