"""The base of the runtime's threads: back-off while the store fails, one WARNING when an
outage starts and one when it ends (whatever the number of threads and tries), tracebacks at
DEBUG only, and a stale connection (one failure, then success) is not an outage."""

from __future__ import annotations

import logging
import threading

import pytest

from anole_jobs.background import (
    BACKOFF_CAP,
    BackgroundThread,
    Idle,
    StoreHealth,
    backoff_delay,
)

WAIT = 10.0


class Flaky(BackgroundThread):
    """Fails `failures` rounds in a row, then succeeds; records the waits it was given."""

    def __init__(self, health: StoreHealth, failures: int, *, idle: bool = False) -> None:
        super().__init__(name="flaky", store_health=health)
        self.left = failures
        self.idle = idle
        self.waits: list[float] = []
        self.done = threading.Event()

    def run_once(self) -> float:
        if self.left:
            self.left -= 1
            raise ConnectionError("connection refused to 127.0.0.1:1")
        self.done.set()
        return Idle(0.0) if self.idle else 0.0

    def pause(self, seconds: float) -> None:  # no real waiting in a unit test
        self.waits.append(seconds)
        if self.done.is_set():
            self.request_stop()


def store_lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "anole_jobs.store" and r.levelno == level
    ]


def run(thread: Flaky) -> None:
    thread.start()
    assert thread.join(WAIT), "the thread did not stop"


def test_an_outage_is_two_warnings_whatever_the_number_of_tries(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="anole_jobs")
    health = StoreHealth()
    run(Flaky(health, failures=12))
    warnings = store_lines(caplog, logging.WARNING)
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("store unreachable: ConnectionError: connection refused to ")
    assert warnings[1].startswith("store reachable again after ")
    # Every failed try is at DEBUG, with its traceback.
    debug = [r for r in caplog.records if r.name == "anole_jobs.store" and r.levelno == 10]
    assert len(debug) == 12 and all(r.exc_info for r in debug)
    assert not any(r.exc_info for r in caplog.records if r.levelno > logging.DEBUG)


def test_one_failure_then_success_is_not_an_outage(caplog) -> None:
    caplog.set_level(logging.INFO, logger="anole_jobs")
    run(Flaky(StoreHealth(), failures=1))
    assert store_lines(caplog, logging.WARNING) == []


def test_several_threads_share_one_outage(caplog) -> None:
    caplog.set_level(logging.INFO, logger="anole_jobs")
    health = StoreHealth()
    error = ConnectionError("connection refused")
    for failures in (1, 2, 3):
        for where in ("dispatch", "heartbeat", "completer"):
            health.failed(error, where=where, failures=failures, retry_in=0.5)
    for _ in range(3):  # each thread's first success after the outage
        health.answered()
    lines = store_lines(caplog, logging.WARNING)
    assert [" ".join(line.split()[:2]) for line in lines] == [
        "store unreachable:",
        "store reachable",
    ]
    assert "(dispatch); retrying in 0.5 s" in lines[0]


def test_a_round_without_a_store_call_says_nothing_about_health(caplog) -> None:
    caplog.set_level(logging.INFO, logger="anole_jobs")
    health = StoreHealth()
    run(Flaky(health, failures=3, idle=True))
    assert store_lines(caplog, logging.WARNING)[-1].startswith("store unreachable")
    assert health.down


def test_the_waits_back_off_with_jitter_up_to_the_cap() -> None:
    thread = Flaky(StoreHealth(), failures=12)
    run(thread)
    failed_waits = thread.waits[:12]
    assert all(0 < wait <= BACKOFF_CAP for wait in failed_waits)
    assert failed_waits[-1] >= BACKOFF_CAP / 2  # capped, jittered down by half at most
    assert sum(failed_waits[:3]) < 2.0  # the first retries come quickly
    ceilings = [backoff_delay(n) for n in range(1, 30)]
    assert max(ceilings) <= BACKOFF_CAP
