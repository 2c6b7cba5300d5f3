"""The job's log while the job runs, on every store: in a worker started in this process, the
lines a long attempt logged show on `jobs.get` before the attempt ends (stored about once a
second), the attempt's end adds only the lines not stored yet (none twice), and an attempt
cancelled while it runs keeps its lines, also those it logs as it winds down after the cancel.
Sync and async handlers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.sampleapp.timeline_jobs import LIVE_GATE, AsyncLiveLog, DeafLiveLog, LiveLog
from tests.support.waiting import wait_until

WAIT = 20.0


@pytest.fixture
def running(env: Any) -> Iterator[Any]:
    """`env` with workers started in this process."""
    LIVE_GATE.clear()
    env.configure(RUN="auto", QUEUES={"default": {"concurrency": 4, "drain_timeout": 0.3}})
    try:
        yield env
    finally:
        LIVE_GATE.set()
        env.jobs.stop(drain=False)


def messages(env: Any, job_id: int) -> list[str]:
    return [line["message"] for line in env.jobs.get(job_id).logs]


def wait_for(env: Any, job_id: int, what: str, check: Any) -> Any:
    return wait_until(lambda: check(env.jobs.get(job_id)), f"job {job_id}: {what}", WAIT)


def cancelled_after_its_first_line(env: Any, args: Any) -> int:
    """Enqueue `args`, start the workers, and cancel the job once its first line is stored
    (the handler still runs); its id."""
    job_id = env.jobs.enqueue(args).id
    env.jobs.start()
    wait_for(env, job_id, "its first line stored while it runs", lambda r: r.logs and r)
    env.jobs.cancel(job_id)
    assert env.jobs.get(job_id).state == "cancelled"
    return job_id


@pytest.mark.parametrize("kind", [LiveLog, AsyncLiveLog], ids=["sync", "async"])
def test_a_running_jobs_log_shows_before_its_end_and_no_line_twice(running: Any, kind) -> None:
    env = running
    job_id = env.jobs.enqueue(kind(name="long")).id
    env.jobs.start()
    record = wait_for(env, job_id, "its first line stored while it runs", lambda r: r.logs and r)
    assert record.state == "running"
    assert [line["message"] for line in record.logs] == ["long: before the gate"]
    assert record.logs[0]["attempt"] == 1
    LIVE_GATE.set()
    wait_for(env, job_id, "completed", lambda r: r.state == "completed")
    assert messages(env, job_id) == ["long: before the gate", "long: after the gate"]


@pytest.mark.parametrize("kind", [LiveLog, AsyncLiveLog], ids=["sync", "async"])
def test_a_job_cancelled_while_it_runs_keeps_its_lines_and_those_it_logs_winding_down(
    running: Any, kind
) -> None:
    env = running
    job_id = cancelled_after_its_first_line(env, kind(name="doomed"))
    # The cancel ended the job, so the run's own end is refused; the line the handler logged
    # as it saw the cancel still reaches the job's log, after it.
    record = wait_for(env, job_id, "its last line", lambda r: len(r.logs) == 2 and r)
    assert [line["message"] for line in record.logs] == [
        "doomed: before the gate",
        "doomed: cancelled, cleaning up",
    ]
    assert {line["attempt"] for line in record.logs} == {1}
    assert [a["outcome"] for a in record.attempts] == ["cancelled"]
    env.jobs.stop(drain=True)  # every run has ended: no line may come twice
    assert messages(env, job_id) == ["doomed: before the gate", "doomed: cancelled, cleaning up"]


def test_a_handler_that_never_sees_its_cancel_keeps_the_lines_it_logs_before_returning(
    running: Any,
) -> None:
    env = running
    job_id = cancelled_after_its_first_line(env, DeafLiveLog(name="deaf"))
    LIVE_GATE.set()  # it returns as if nothing happened: the store refuses that end
    record = wait_for(env, job_id, "its last line", lambda r: len(r.logs) == 2 and r)
    assert record.state == "cancelled"
    assert [line["message"] for line in record.logs] == [
        "deaf: before the gate",
        "deaf: after the gate",
    ]
    assert [a["outcome"] for a in record.attempts] == ["cancelled"]
    env.jobs.stop(drain=True)  # every run has ended: no line may come twice
    assert messages(env, job_id) == ["deaf: before the gate", "deaf: after the gate"]
