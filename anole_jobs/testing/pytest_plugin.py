"""The pytest plugin, loaded through the `pytest11` entry point named ``anole_jobs``.

Fixtures:

- ``anole_clock``: a fresh `FakeClock` installed as ``ANOLE_JOBS["CLOCK"]`` for the test.
- ``anole_jobs``: the `jobs` facade in manual mode on the store the settings configure, with
  that clock, and the store emptied before and after the test.

Both change settings with `override_settings`, so they need no other plugin; with
pytest-django, a database store also needs the test to have database access (the
``django_db`` mark), as any test that touches the database does. This module imports
nothing from Django at import time: pytest loads it before Django is configured.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from anole_jobs.testing.clock import FakeClock

if TYPE_CHECKING:
    from anole_jobs.api import JobsFacade


@pytest.fixture
def anole_clock() -> Iterator[FakeClock]:
    """A `FakeClock` installed as the `CLOCK` for this test (2030-01-01 00:00 UTC)."""
    from anole_jobs.testing.mode import using_clock

    with using_clock(FakeClock()) as clock:
        yield clock


@pytest.fixture
def anole_jobs(anole_clock: FakeClock) -> Iterator[JobsFacade]:
    """The `jobs` facade in manual mode on the configured store, emptied before and after."""
    from anole_jobs.testing.mode import manual_mode

    with manual_mode(anole_clock) as jobs:
        yield jobs
