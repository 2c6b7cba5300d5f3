"""Helpers for testing code that uses anole_jobs.

`FakeClock` is the `CLOCK` that moves only when told; `assert_enqueued`, `refute_enqueued`,
`all_enqueued` and `drain` read and run the configured store in manual mode;
`manual_mode()` sets that mode up (for `django.test.TestCase`). The pytest
fixtures `anole_clock` and `anole_jobs` live in `anole_jobs.testing.pytest_plugin`, which
pytest loads through the `pytest11` entry point.

Importing this package needs no settings (projects import `FakeClock` in settings modules):
the helpers reach the `jobs` facade only when called.
"""

from __future__ import annotations

from anole_jobs.testing.assertions import (
    all_enqueued,
    assert_enqueued,
    drain,
    empty_store,
    refute_enqueued,
)
from anole_jobs.testing.clock import FakeClock
from anole_jobs.testing.mode import manual_mode

__all__ = [
    "FakeClock",
    "all_enqueued",
    "assert_enqueued",
    "drain",
    "empty_store",
    "manual_mode",
    "refute_enqueued",
]
