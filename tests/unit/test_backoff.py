"""The default backoff: attempt n waits between half and all of min(15 s * 2**(n-1), 6 h),
property-tested."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anole_jobs.backoff import CAP, ceiling, default_backoff


@given(attempt=st.integers(min_value=1, max_value=10_000), r=st.floats(min_value=0, max_value=1))
def test_default_backoff_is_within_equal_jitter_bounds(attempt, r):
    d = min(timedelta(seconds=15) * 2 ** min(attempt - 1, 30), timedelta(hours=6))
    delay = default_backoff(attempt, rand=lambda: r)
    assert d / 2 <= delay <= d


@given(attempt=st.integers(min_value=1, max_value=64))
def test_ceiling_doubles_until_the_cap(attempt):
    assert ceiling(attempt).total_seconds() == min(15 * 2 ** (attempt - 1), CAP.total_seconds())


def test_first_attempts():
    assert ceiling(1) == timedelta(seconds=15)
    assert ceiling(2) == timedelta(seconds=30)
    assert ceiling(12) == CAP
    assert default_backoff(1, rand=lambda: 0.0) == timedelta(seconds=7.5)
    assert default_backoff(1, rand=lambda: 1.0) == timedelta(seconds=15)


def test_attempts_are_one_based():
    with pytest.raises(ValueError):
        ceiling(0)


def test_real_randomness_stays_in_bounds():
    delays = {default_backoff(3) for _ in range(200)}
    assert all(timedelta(seconds=30) <= d <= timedelta(seconds=60) for d in delays)
    assert len(delays) > 1  # jittered, not constant


@pytest.mark.parametrize("returned", [timedelta.max, timedelta(days=10**8)])
def test_a_kinds_backoff_past_what_a_date_holds_falls_back_to_the_default(
    settings, caplog, returned
) -> None:
    from types import SimpleNamespace

    from anole_jobs import jobs
    from anole_jobs.testing import FakeClock
    from anole_jobs.worker.executor import Executor

    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "CLOCK": FakeClock()}
    try:
        executor = Executor(jobs.service, manual=True)
        handler = SimpleNamespace(kind=SimpleNamespace(name="k", backoff=lambda attempt: returned))
        delay = executor.backoff(handler, 1)  # type: ignore[arg-type]
        # `now + delay` must stay a date, or the retry's write fails every time the job runs.
        assert delay <= ceiling(1)
        jobs.service.clock() + delay
        assert "not a timedelta of at most 1,000 years" in caplog.text
    finally:
        jobs.reset()
