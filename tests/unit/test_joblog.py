"""The job's log capture (anole_jobs/worker/joblog.py): records of level INFO and above from
any logger in the capturing thread and in the asyncio tasks started there; none from other
threads, none below INFO, none after the capture ends; other handlers see only what their
loggers' levels let through."""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import UTC, datetime

from anole_jobs.worker import joblog

T0 = datetime(2030, 1, 1, tzinfo=UTC)
log = logging.getLogger("tests.joblog")


def messages(capture):
    return [line["message"] for line in capture.lines or ()]


def test_a_capture_keeps_its_threads_and_tasks_records_only():
    capture = joblog.begin(10, 1, lambda: T0)
    try:
        log.debug("below INFO")
        log.info("in the thread")

        async def child():
            log.warning("in a child task")

        async def handler():
            log.info("in the task")
            await asyncio.gather(asyncio.create_task(child()))

        asyncio.run(handler())
        other = threading.Thread(target=lambda: log.error("another thread"))
        other.start()
        other.join()
    finally:
        joblog.end(capture)
    log.error("after the end")
    assert messages(capture) == ["in the thread", "in the task", "in a child task"]
    assert capture.lines[0] == {
        "attempt": 1,
        "at": T0.isoformat(),
        "level": "INFO",
        "logger": "tests.joblog",
        "message": "in the thread",
    }
    assert joblog.current() is None


def test_two_captures_at_once_keep_their_own_lines():
    results = {}

    def attempt(name):
        capture = joblog.begin(100, 1, lambda: T0)
        try:
            for i in range(50):
                log.info("%s %d", name, i)
        finally:
            joblog.end(capture)
        results[name] = messages(capture)

    threads = [threading.Thread(target=attempt, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: [f"{n} {i}" for i in range(50)] for n in ("a", "b")}


def test_the_newest_lines_are_kept_and_a_bad_format_is_skipped():
    capture = joblog.begin(2, 3, lambda: T0)
    try:
        bad = log.makeRecord(log.name, logging.WARNING, __file__, 1, "%d", ("x",), None)
        capture.add(bad)  # a message that cannot be formatted is skipped, never raised
        for i in range(5):
            log.warning("line %d", i)
    finally:
        joblog.end(capture)
    assert messages(capture) == ["line 3", "line 4"]
    assert joblog.begin(0, 1, lambda: T0) is None  # JOB_LOG_LINES = 0: nothing captured
