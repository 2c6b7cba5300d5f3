"""What a person reads about each run (logger `anole_jobs`), captured with `caplog`: the error
type and message of a failed attempt and when it runs again, `dead` at ERROR with the last
error, a completion at INFO, tracebacks only at DEBUG, and the run's fields as `extra` for a
structured formatter. Also `runjobs`' refusal of the memory store and its `-v` levels.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from anole_jobs import events, jobs
from anole_jobs.clock import monotonic
from anole_jobs.errors import StoreUnavailable
from anole_jobs.management.commands.runjobs import Command
from anole_jobs.testing import FakeClock
from anole_jobs.worker.runner import wait_for_store
from tests.sampleapp.jobs import Work

FIELDS = ("job_id", "kind", "queue", "attempt", "max_attempts", "outcome", "duration")


@pytest.fixture
def manual(settings: Any, recorder: Any) -> FakeClock:
    clock = FakeClock()
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "CLOCK": clock}
    yield clock
    jobs.reset()


def run_lines(caplog: Any, job_id: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "job_id", None) == job_id]


def test_a_failed_attempt_logs_the_error_and_when_it_runs_again(manual, caplog) -> None:
    caplog.set_level(logging.INFO, logger="anole_jobs")
    job_id = jobs.enqueue(Work(action="fail")).id
    jobs.step()
    (line,) = run_lines(caplog, job_id)
    assert line.levelno == logging.WARNING
    message = line.getMessage()
    assert "ValueError: failed on attempt 1" in message
    assert "runs again in" in message and "attempt 1/3" in message
    assert line.outcome == "retried" and line.error_type == "ValueError"
    assert line.next_run_at == jobs.get(job_id).scheduled_at.isoformat()
    # The traceback is only for DEBUG.
    assert "Traceback" not in caplog.text and 'File "' not in caplog.text


def test_every_run_line_carries_the_run_fields(manual, caplog) -> None:
    caplog.set_level(logging.INFO, logger="anole_jobs")
    job_id = jobs.enqueue(Work()).id
    jobs.step()
    (line,) = run_lines(caplog, job_id)
    assert {name: getattr(line, name) for name in FIELDS} == {
        "job_id": job_id,
        "kind": "test.work",
        "queue": "default",
        "attempt": 1,
        "max_attempts": 3,
        "outcome": "completed",
        "duration": line.duration,
    }
    assert isinstance(line.duration, float) and line.duration >= 0


def test_a_completion_is_logged_at_info(manual, caplog) -> None:
    caplog.set_level(logging.INFO, logger="anole_jobs")
    job_id = jobs.enqueue(Work()).id
    jobs.step()
    (line,) = run_lines(caplog, job_id)
    assert line.levelno == logging.INFO
    assert line.getMessage().startswith(f"job {job_id} test.work attempt 1/3 on default: completed")


def test_a_dead_job_is_an_error_with_its_last_error(manual, caplog) -> None:
    caplog.set_level(logging.INFO, logger="anole_jobs")
    job_id = jobs.enqueue(Work(action="fail")).id
    for _ in range(3):  # attempts=3
        jobs.step()
        manual.advance(timedelta(days=1))
    assert jobs.get(job_id).state == "dead"
    *_, line = run_lines(caplog, job_id)
    assert line.levelno == logging.ERROR
    assert line.outcome == "dead"
    assert "dead" in line.getMessage() and "ValueError: failed on attempt 3" in line.getMessage()


def test_the_traceback_is_logged_at_debug(manual, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="anole_jobs")
    job_id = jobs.enqueue(Work(action="fail")).id
    jobs.step()
    debug = [r for r in run_lines(caplog, job_id) if r.levelno == logging.DEBUG]
    assert len(debug) == 1
    assert 'raise ValueError(f"failed on attempt {job.attempt}")' in debug[0].getMessage()


def test_a_snooze_says_until_when(manual, caplog) -> None:
    caplog.set_level(logging.INFO, logger="anole_jobs")
    job_id = jobs.enqueue(Work(action="snooze", seconds=60)).id
    jobs.step()
    (line,) = run_lines(caplog, job_id)
    assert line.levelno == logging.INFO
    assert f"snoozed until {jobs.get(job_id).scheduled_at.isoformat(timespec='seconds')}" in (
        line.getMessage()
    )


# -- runjobs ---------------------------------------------------------------------------------
def test_runjobs_refuses_the_memory_store(settings) -> None:
    settings.ANOLE_JOBS = {"STORE": "memory"}
    try:
        with pytest.raises(CommandError, match="memory.*no other process") as caught:
            call_command("runjobs")
        assert "\n" not in str(caught.value)
    finally:
        jobs.reset()


@pytest.mark.parametrize(
    ("verbosity", "level"),
    [(0, logging.WARNING), (1, logging.INFO), (2, logging.DEBUG), (3, logging.DEBUG)],
)
def test_runjobs_verbosity_sets_the_level(verbosity: int, level: int) -> None:
    package = logging.getLogger("anole_jobs")
    root = logging.getLogger()
    saved = package.level, root.level, list(package.handlers)
    try:
        Command()._configure_logging(None, verbosity)
        assert package.level == level
        assert (root.level == logging.DEBUG) is (verbosity == 3) or root.level == saved[1]
    finally:
        package.setLevel(saved[0])
        root.setLevel(saved[1])
        package.handlers[:] = saved[2]


def test_runjobs_keeps_a_level_from_logging_unless_told(settings) -> None:
    package = logging.getLogger("anole_jobs")
    saved = package.level, list(package.handlers)
    try:
        package.setLevel(logging.ERROR)  # as LOGGING would
        Command()._configure_logging(None, None)
        assert package.level == logging.ERROR
        Command()._configure_logging("DEBUG", None)
        assert package.level == logging.DEBUG
    finally:
        package.setLevel(saved[0])
        package.handlers[:] = saved[1]


def test_each_run_emits_started_then_one_finished_with_every_field(manual) -> None:
    seen: list[Any] = []
    unsubscribe = events.bus.subscribe(seen.append)
    try:
        job_id = jobs.enqueue(Work(action="fail")).id
        jobs.step()
    finally:
        unsubscribe()
    runs = [e for e in seen if e.name in (events.RUN_STARTED, events.RUN_FINISHED)]
    assert [e.name for e in runs] == [events.RUN_STARTED, events.RUN_FINISHED]
    finished = runs[1].fields
    assert finished == {
        "queue": "default",
        "kind": "test.work",
        "job_id": job_id,
        "attempt": 1,
        "max_attempts": 3,
        "outcome": "retried",
        "seconds": finished["seconds"],
        "saved": True,
        "error_type": "ValueError",
    }


# -- the start-up probe ------------------------------------------------------------------------
def test_the_start_up_probe_returns_once_the_store_answers(manual) -> None:
    wait_for_store(jobs.service, 5.0)


def test_the_start_up_probe_names_the_error_of_a_store_that_refuses(manual, monkeypatch) -> None:
    def refuse() -> None:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")

    monkeypatch.setattr(jobs.service.store, "ping", refuse)
    began = monotonic()
    with pytest.raises(StoreUnavailable) as caught:
        wait_for_store(jobs.service, 0.5)
    assert monotonic() - began < 3.0
    message = str(caught.value)
    assert "did not answer within 0.5 s: ConnectionError: Error 111" in message
    assert "STARTUP_TIMEOUT" in message and "\n" not in message


def test_the_start_up_probe_gives_up_on_a_connection_that_hangs(manual, monkeypatch) -> None:
    release = threading.Event()
    monkeypatch.setattr(jobs.service.store, "ping", lambda: release.wait(30))
    began = monotonic()
    try:
        with pytest.raises(StoreUnavailable, match="no answer"):
            wait_for_store(jobs.service, 0.5)
        assert monotonic() - began < 3.0
    finally:
        release.set()
