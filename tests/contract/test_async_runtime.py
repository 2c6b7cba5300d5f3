"""The async runtime on every store: `async def` handlers run as tasks on the process's one
event loop (in a worker started with `jobs.start()`, and in `jobs.step()`), counted by the
queue's concurrency like sync jobs, with outcomes, results and retries as for sync ones; a
timeout, a drain's deadline and `jobs.cancel` cancel the handler's task (its `await` raises
`asyncio.CancelledError`) — an admin cancel within 2 s of `jobs.cancel` returning, whether
the store pushes it to the worker or the worker polls; and the facade's async twins."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from anole_jobs.worker import aloop
from tests.sampleapp.async_jobs import (
    BOARD,
    RELEASE,
    AsyncHold,
    AsyncHoldTimeout,
    AsyncNap,
    AsyncSyncCalls,
)
from tests.sampleapp.jobs import Work
from tests.support.waiting import wait_until

#: End to end: from `jobs.cancel` returning to the handler's `CancelledError`.
END_TO_END = 2.0
WAIT = 20.0


@pytest.fixture
def running(env: Any) -> Iterator[Any]:
    """`env` with workers started in this process (queue "default", concurrency 20)."""
    BOARD.clear()
    RELEASE.clear()
    env.configure(
        RUN="auto",
        QUEUES={"default": {"concurrency": 20, "drain_timeout": 0.3}, "mail": {"concurrency": 1}},
    )
    try:
        yield env
    finally:
        RELEASE.set()
        env.jobs.stop(drain=False)


def wait_states(env: Any, ids: list[int], *states: str) -> dict[int, Any]:
    def done() -> dict[int, Any] | None:
        records = {job_id: env.jobs.get(job_id) for job_id in ids}
        return records if all(r.state in states for r in records.values()) else None

    return wait_until(done, f"jobs {ids} {states}", WAIT)  # type: ignore[no-any-return]


def test_async_jobs_run_on_the_shared_loop_within_the_queue_concurrency(running: Any) -> None:
    env = running
    ids = [e.id for e in env.jobs.enqueue_many([AsyncNap(seconds=0.05) for _ in range(40)])]
    failing = env.jobs.enqueue(AsyncNap(seconds=0, fail=True)).id
    sync_id = env.jobs.enqueue(Work()).id
    env.jobs.start()
    wait_states(env, [*ids, sync_id], "completed")
    results = [env.jobs.result(job_id) for job_id in ids]
    assert {r["loop"] for r in results} == {id(aloop.shared_loop())}
    assert 1 < BOARD.most <= 20  # together, never past the queue's concurrency
    (record,) = wait_states(env, [failing], "retrying").values()
    assert [(e["type"], e["message"], e["attempt"]) for e in record.errors] == [
        ("ValueError", "failed on purpose", 1)
    ]


def cancel_lands(env: Any, name: str) -> int:
    """Start the workers with one running `AsyncHold` named `name`, cancel it, and check its
    task sees the cancel within `END_TO_END` of `jobs.cancel` returning; its id."""
    job_id = env.jobs.enqueue(AsyncHold(name=name)).id
    env.jobs.start()
    BOARD.wait(f"{name}.started", WAIT)
    env.jobs.cancel(job_id)
    returned = time.monotonic()
    seen, error = BOARD.wait(f"{name}.canceled", WAIT)
    assert error == "CancelledError"
    assert seen - returned < END_TO_END, f"the cancel took {seen - returned:.2f} s"
    wait_states(env, [job_id], "cancelled")
    return int(job_id)


def test_a_cancel_reaches_a_running_async_handler_within_two_seconds(running: Any) -> None:
    env = running
    job_id = cancel_lands(env, "admin")
    # Nothing the cancelled run wrote afterwards replaced the cancel.
    record = env.jobs.get(job_id)
    assert (record.state, record.attempt) == ("cancelled", 1)


def test_a_cancel_whose_wake_up_is_lost_still_lands_within_two_seconds(
    running: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch for cancels does not rely on the wake-up alone: one sent before its
    subscription was in place, or lost on the way (here: every one), is made up for by its
    own looks at the store, not left to the heartbeat (LEASE/3, 10 s here)."""
    env = running
    hub = env.jobs.service.store.finished_wakeups
    monkeypatch.setattr(hub, "wake", lambda queues: None)  # no process hears a job end
    cancel_lands(env, "unheard")


def test_a_timeout_cancels_the_task_and_retries_or_kills_the_job(running: Any) -> None:
    env = running
    job_id = env.jobs.enqueue(AsyncHoldTimeout(name="late")).id
    env.jobs.start()
    started, _ = BOARD.wait("late.started", WAIT)
    seen, error = BOARD.wait("late.canceled", WAIT)
    assert error == "CancelledError" and seen - started < 0.3 + 0.5
    (record,) = wait_states(env, [job_id], "dead").values()
    assert [(e["type"], e["attempt"]) for e in record.errors] == [("Timeout", 1)]


def test_a_drain_deadline_cancels_the_task_and_gives_the_job_back(running: Any) -> None:
    env = running
    job_id = env.jobs.enqueue(AsyncHold(name="drained")).id
    env.jobs.start()
    BOARD.wait("drained.started", WAIT)
    began = time.monotonic()
    env.jobs.stop()  # drain_timeout 0.3 s
    seen, _ = BOARD.wait("drained.canceled", WAIT)
    assert seen - began < 0.3 + 0.5
    record = env.jobs.get(job_id)
    assert (record.state, record.attempt) == ("available", 0)


def test_step_runs_async_handlers_on_the_shared_loop(env: Any) -> None:
    ids = [e.id for e in env.jobs.enqueue_many([AsyncNap(seconds=0), AsyncNap(seconds=0)])]
    outcomes = env.jobs.step().outcomes()
    assert outcomes == {job_id: "completed" for job_id in ids}
    assert {env.jobs.result(job_id)["loop"] for job_id in ids} == {id(aloop.shared_loop())}


def test_the_async_twins_are_coroutine_functions_that_use_the_store(env: Any) -> None:
    for name in ("aenqueue", "aenqueue_many", "aget", "alist", "aresult"):
        assert inspect.iscoroutinefunction(getattr(env.jobs, name)), name

    async def view() -> tuple[Any, ...]:
        # As a Django async view would: no SynchronousOnlyOperation.
        one = await env.jobs.aenqueue(AsyncNap(seconds=0), priority=3)
        many = await env.jobs.aenqueue_many(AsyncNap(seconds=0) for _ in range(2))
        record = await env.jobs.aget(one.id)
        listed = await env.jobs.alist(kind="asyncrt.nap")
        missing = await env.jobs.aget(10**9)
        return one, many, record, listed, missing

    one, many, record, listed, missing = async_to_sync(view)()
    assert record.id == one.id and record.priority == 3 and record.state == "available"
    assert {r.id for r in listed} == {one.id, *(e.id for e in many)}
    assert missing is None
    env.jobs.step()
    assert asyncio.run(env.jobs.aresult(one.id))["loop"] == id(aloop.shared_loop())


def test_a_workflow_of_async_steps_runs_in_order(running: Any) -> None:
    from anole_jobs import Workflow

    env = running
    wf = Workflow("async")
    first = wf.add(AsyncNap(seconds=0.01), name="first")
    wf.group(AsyncNap(seconds=0.01), AsyncNap(seconds=0.01), after=[first])
    created = env.jobs.enqueue_workflow(wf)
    env.jobs.start()
    wait_states(env, list(created.jobs.values()), "completed")
    record = env.jobs.workflow(created.id)
    assert record.state == "completed"
    done = record.steps["first"].finished_at
    assert all(s.attempted_at >= done for n, s in record.steps.items() if n != "first")


def test_an_async_handler_may_call_the_jobs_sync_methods(running: Any) -> None:
    # job.record_meta / record_output / step / dependency_results write or read the store:
    # from the loop's thread, on the database store, they run off the loop.
    from anole_jobs import Workflow

    env = running
    alone = env.jobs.enqueue(AsyncSyncCalls(tag="alone")).id
    wf = Workflow("sync-calls")
    first = wf.add(AsyncNap(seconds=0), name="first")
    wf.add(AsyncSyncCalls(tag="after"), name="after", after=[first])
    created = env.jobs.enqueue_workflow(wf)
    env.jobs.start()
    after = created.jobs["after"]
    records = wait_states(env, [alone, after], "completed", "retrying", "dead")
    for job_id, tag in ((alone, "alone"), (after, "after")):
        record = records[job_id]
        assert record.state == "completed", record.errors
        assert record.meta["tag"] == tag and record.meta["output"] == {"half": True}
        assert list(record.steps) == ["double", "off_loop"]
        assert record.steps["double"]["result"] == 42
        assert record.progress is not None and record.progress["message"] == "done"
    assert env.jobs.result(alone)["doubled"] == 42
    assert env.jobs.result(alone)["off_loop"] is True
    assert env.jobs.result(alone)["deps"] == {}
    assert env.jobs.result(after)["deps"] == {"first": env.jobs.result(created.jobs["first"])}


def test_a_queue_limit_holds_for_async_jobs(running: Any) -> None:
    env = running
    env.configure(
        RUN="auto",
        QUEUES={"default": {"concurrency": 20, "drain_timeout": 0.3, "global_concurrency": 2}},
    )
    ids = [env.jobs.enqueue(AsyncHold(name=f"l{i}")).id for i in range(4)]
    env.jobs.start()
    BOARD.wait("l0.started", WAIT)
    BOARD.wait("l1.started", WAIT)
    assert BOARD.running == 2 and "l2.started" not in BOARD.notes  # the limit, not the slots
    RELEASE.set()
    wait_states(env, ids, "completed")
    assert BOARD.most == 2
