"""A running attempt's log lines, stored while it runs and at its end (worker/joblog.py): the
lines a flush stored are not carried again by the end's write; a flush the store refuses
(the run is no longer current) or that fails ends the flushes and the end carries them; a
flush in flight when the attempt ends is waited for, so each line is written once."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime

import pytest

from anole_jobs.worker import joblog

log = logging.getLogger("tests.joblog_flush")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def capture():
    capture = joblog.begin(keep=3, attempt=1, clock=lambda: NOW)
    try:
        yield capture
    finally:
        joblog.end(capture)


def messages(text: str | None) -> list[str]:
    return [] if text is None else [line["message"] for line in json.loads(text)]


def test_stored_lines_are_not_carried_by_the_end(capture) -> None:
    log.info("a")
    log.info("b")
    written: list[list[str]] = []
    capture.store_pending(lambda text: written.append(messages(text)) or True)
    assert written == [["a", "b"]] and not capture.has_pending
    capture.store_pending(lambda text: pytest.fail("nothing new to store"))
    log.info("c")
    assert messages(capture.encoded()) == ["c"]


def test_more_lines_than_kept_between_two_stores_sends_the_newest(capture) -> None:
    log.info("a")
    capture.store_pending(lambda text: True)
    for name in "bcde":
        log.info(name)
    written: list[list[str]] = []
    capture.store_pending(lambda text: written.append(messages(text)) or True)
    assert written == [["c", "d", "e"]]


@pytest.mark.parametrize("outcome", ["refused", "failed"])
def test_a_refused_or_failed_store_ends_the_flushes_and_the_end_carries_the_lines(
    capture, outcome
) -> None:
    log.info("a")

    def write(text: str) -> bool:
        if outcome == "failed":
            raise ConnectionError("the store is down")
        return False

    if outcome == "failed":
        with pytest.raises(ConnectionError):
            capture.store_pending(write)
    else:
        capture.store_pending(write)
    log.info("b")
    assert not capture.has_pending
    capture.store_pending(lambda text: pytest.fail("no flush after a refusal"))
    assert messages(capture.encoded()) == ["a", "b"]


def test_the_end_waits_for_a_flush_in_flight_and_carries_only_what_it_did_not_store(
    capture,
) -> None:
    log.info("a")
    writing, release = threading.Event(), threading.Event()

    def slow_write(text: str) -> bool:
        writing.set()
        assert release.wait(10)
        return True

    flusher = threading.Thread(target=capture.store_pending, args=(slow_write,))
    flusher.start()
    assert writing.wait(10)
    log.info("b")  # logged while the flush is in flight: not part of it
    ended: list[str | None] = []
    end = threading.Thread(target=lambda: ended.append(capture.encoded()))
    end.start()
    end.join(0.2)
    assert end.is_alive(), "the end must wait for the flush in flight"
    release.set()
    flusher.join(10)
    end.join(10)
    assert [messages(text) for text in ended] == [["b"]]
    capture.store_pending(lambda text: pytest.fail("no flush after the end"))


class _DownStore:
    def record_logs(self, run, logs, keep):
        raise ConnectionError("the store is down")


class _Service:
    store = _DownStore()


class _Executor:
    def __init__(self) -> None:
        self.live_logs = joblog.LiveCaptures()


def test_a_lost_runs_last_lines_get_one_try_and_a_failure_says_they_were_dropped(caplog) -> None:
    from anole_jobs.stores.base import RunRef
    from anole_jobs.worker.logflush import LogFlusher

    executor = _Executor()
    run = RunRef(id=7, attempt=1, token=3)
    capture = joblog.begin(keep=3, attempt=1, clock=lambda: NOW)
    capture.live, capture.run = executor.live_logs, run
    try:
        log.info("winding down")
    finally:
        joblog.end(capture)
    capture.last = True  # as the executor marks a lost run's capture
    flusher = LogFlusher(_Service(), executor)  # type: ignore[arg-type]
    with caplog.at_level(logging.DEBUG, logger="anole_jobs.worker"):
        flusher.run_once()
    assert executor.live_logs.items() == []  # forgotten after its one try: the set cannot grow
    assert [r.getMessage() for r in caplog.records] == ["job 7: its last log lines were not stored"]
