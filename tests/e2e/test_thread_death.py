"""A worker whose background thread dies does not live on doing nothing: `runjobs` logs the
death at CRITICAL (the thread and its error), drains, and exits with status 70, and under
`--processes` the supervisor starts the worker again. The death is real: the heartbeat's round
raises a `BaseException` no loop catches (tests/e2e/faults.py)."""

from __future__ import annotations

import signal

import pytest

from tests.e2e.conftest import Backend

pytestmark = pytest.mark.e2e

DIED = "background thread anole-heartbeat died: Fatal: injected by the e2e test"


def test_runjobs_exits_70_after_logging_a_dead_thread_at_critical(sqlite_backend: Backend) -> None:
    worker = sqlite_backend.spawn(THREAD_DEATH="heartbeat")
    assert worker.wait(30) == 70, worker.output()
    output = worker.output()
    critical = [line for line in output.splitlines() if " CRITICAL " in line]
    assert any(DIED in line for line in critical), output
    assert any("exiting with status 70 so that it is started again" in line for line in critical)
    assert "draining" in output  # it stopped the way a signal stops it, its jobs given back


def test_the_supervisor_restarts_a_worker_whose_thread_died(sqlite_backend: Backend) -> None:
    supervisor = sqlite_backend.spawn("--processes", "2", THREAD_DEATH="heartbeat")
    supervisor.wait_output("exited with code 70 (one of its background threads died)", 60)
    supervisor.wait_output("restarting it in", 30)
    supervisor.signal(signal.SIGTERM)
    supervisor.wait(60)
    assert DIED in supervisor.output()
