"""The async runtime in one process (memory store): `async def` handlers run as tasks on the
process's one event loop, a queue's concurrency counts them like sync jobs without a thread
each, and a timeout, a drain or a cancel made elsewhere cancels the task at once."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from anole_jobs import jobs
from anole_jobs.errors import Canceled
from anole_jobs.worker import aloop
from tests.sampleapp.async_jobs import (
    BOARD,
    RELEASE,
    SHARED,
    AsyncEnqueues,
    AsyncHold,
    AsyncHoldTimeout,
    AsyncNap,
    AsyncShared,
)
from tests.sampleapp.jobs import Work
from tests.unit.test_runtime import Runtime, handler_threads
from tests.unit.test_runtime import rt as rt  # noqa: F401 - the fixture

#: How soon a cancel must reach the handler's task once the worker knows of it.
AT_ONCE = 0.5


@pytest.fixture(autouse=True)
def _board() -> Any:
    BOARD.clear()
    RELEASE.clear()
    SHARED.clear()
    yield
    RELEASE.set()  # no handler outlives its test


def test_canceled_is_a_cancelled_error() -> None:
    assert issubclass(Canceled, asyncio.CancelledError)
    assert not issubclass(Canceled, Exception)


def test_async_jobs_share_the_process_loop_and_one_queue_with_sync_jobs(rt: Runtime) -> None:
    rt.configure(QUEUES={"default": {"concurrency": 4, "drain_timeout": 1}})
    ids = [jobs.enqueue(AsyncNap(seconds=0.01)).id for _ in range(3)]
    sync_id = jobs.enqueue(Work()).id
    jobs.start()
    for job_id in [*ids, sync_id]:
        rt.log.wait_finished(job_id=job_id, outcome="completed")
    loops = {jobs.result(job_id)["loop"] for job_id in ids}
    assert loops == {id(aloop.shared_loop())}
    # The loop outlives the runtime: a later start runs on the same one.
    jobs.stop()
    again = jobs.enqueue(AsyncNap(seconds=0)).id
    jobs.start()
    rt.log.wait_finished(job_id=again, outcome="completed")
    assert jobs.result(again)["loop"] == id(aloop.shared_loop())


def test_objects_built_on_the_loop_serve_later_jobs_and_each_job_has_its_own_context(
    rt: Runtime,
) -> None:
    rt.configure(QUEUES={"default": {"concurrency": 1, "drain_timeout": 1}})
    first = jobs.enqueue(AsyncShared(n=1)).id
    second = jobs.enqueue(AsyncShared(n=2)).id
    jobs.start()
    rt.log.wait_finished(job_id=second, outcome="completed")
    assert jobs.result(first) == {"reused": False, "seen": None, "own": True}
    assert jobs.result(second) == {"reused": True, "seen": None, "own": True}


def test_concurrency_counts_async_jobs_and_they_take_no_thread(rt: Runtime) -> None:
    rt.configure(QUEUES={"default": {"concurrency": 3, "drain_timeout": 1}})
    ids = [jobs.enqueue(AsyncHold(name=f"h{i}")).id for i in range(5)]
    jobs.start()
    for i in range(3):
        BOARD.wait(f"h{i}.started")
    rt.log.wait_for(lambda: BOARD.running == 3, "three running")
    # The queue is full: the other two wait, claimed or not, and no slot thread was made.
    assert BOARD.running == 3 and "h3.started" not in BOARD.notes
    assert [t.name for t in handler_threads() if not t.name.endswith(("dispatch", "cancels"))] == []
    RELEASE.set()
    for job_id in ids:
        rt.log.wait_finished(job_id=job_id, outcome="completed")
    assert BOARD.most == 3


def test_a_thousand_async_jobs_run_at_once_with_few_threads(rt: Runtime) -> None:
    rt.configure(QUEUES={"default": {"concurrency": 1000, "drain_timeout": 1}})
    ids = [e.id for e in jobs.enqueue_many([AsyncNap(seconds=0.1) for _ in range(1000)])]
    began = time.monotonic()
    jobs.start()
    rt.log.wait_finished(count=1000, outcome="completed", timeout=30)
    took = time.monotonic() - began
    threads = max(jobs.result(job_id)["threads"] for job_id in ids)
    assert took < 3.0, f"1,000 async jobs of 0.1 s took {took:.2f} s"
    assert threads < 60, threads
    assert BOARD.most > 100  # they ran together, not a few at a time


def test_sync_and_async_jobs_share_the_slots(rt: Runtime) -> None:
    rt.configure(QUEUES={"default": {"concurrency": 2, "drain_timeout": 1}})
    gate = rt.gate()
    entered = threading.Event()

    def block(job: Any, args: Any) -> None:
        entered.set()
        gate.wait(10)

    sync_id = jobs.enqueue(Work(action=rt.hook(block)), priority=5).id
    held = [jobs.enqueue(AsyncHold(name=f"h{i}")).id for i in range(2)]
    jobs.start()
    assert entered.wait(10)
    BOARD.wait("h0.started")
    rt.log.wait_for(lambda: BOARD.running == 1, "one async job beside the sync one")
    assert "h1.started" not in BOARD.notes  # two slots: one sync, one async
    gate.set()
    BOARD.wait("h1.started")
    RELEASE.set()
    for job_id in [sync_id, *held]:
        rt.log.wait_finished(job_id=job_id, outcome="completed")


def test_a_timeout_cancels_the_task_at_once(rt: Runtime) -> None:
    job_id = jobs.enqueue(AsyncHoldTimeout(name="t")).id
    jobs.start()
    started, _ = BOARD.wait("t.started")
    canceled, error = BOARD.wait("t.canceled")
    assert error == "CancelledError"
    assert 0.3 - 0.05 <= canceled - started < 0.3 + AT_ONCE
    (event,) = rt.log.wait_finished(job_id=job_id)
    assert (event["outcome"], event["error_type"]) == ("dead", "Timeout")


def test_an_admin_cancel_reaches_the_task_at_once(rt: Runtime) -> None:
    job_id = jobs.enqueue(AsyncHold(name="c")).id
    jobs.start()
    BOARD.wait("c.started")
    jobs.cancel(job_id)
    cancelled_at = time.monotonic()
    canceled, error = BOARD.wait("c.canceled", timeout=5)
    assert error == "CancelledError"
    assert canceled - cancelled_at < AT_ONCE
    (event,) = rt.log.wait_finished(job_id=job_id)
    assert event["outcome"] == "lost"  # the store holds the cancel: nothing more written
    assert jobs.get(job_id).state == "cancelled"


def test_a_drain_deadline_cancels_the_task_and_gives_the_job_back(rt: Runtime) -> None:
    rt.configure(QUEUES={"default": {"concurrency": 2, "drain_timeout": 0.2}})
    job_id = jobs.enqueue(AsyncHold(name="d")).id
    jobs.start()
    BOARD.wait("d.started")
    began = time.monotonic()
    jobs.stop()
    canceled, _ = BOARD.wait("d.canceled")
    assert canceled - began < 0.2 + AT_ONCE
    (event,) = rt.log.wait_finished(job_id=job_id)
    assert event["outcome"] == "interrupted"
    record = jobs.get(job_id)
    assert (record.state, record.attempt) == ("available", 0)


def test_a_failing_async_job_is_retried_like_a_sync_one(rt: Runtime) -> None:
    job_id = jobs.enqueue(AsyncNap(seconds=0, fail=True)).id
    jobs.start()
    (event,) = rt.log.wait_finished(job_id=job_id)
    assert (event["outcome"], event["error_type"]) == ("retried", "ValueError")
    record = jobs.get(job_id)
    assert record.state == "retrying" and record.errors[0]["message"] == "failed on purpose"


def test_the_async_twins_work_from_a_handler_on_the_loop(rt: Runtime) -> None:
    job_id = jobs.enqueue(AsyncEnqueues(count=3)).id
    jobs.start()
    rt.log.wait_finished(job_id=job_id, outcome="completed")
    ids = jobs.result(job_id)
    assert len(ids) == 3
    for nap in ids:
        rt.log.wait_finished(job_id=nap, outcome="completed")


def test_a_job_started_by_the_end_of_another_does_not_inherit_its_context(rt: Runtime) -> None:
    # One slot, and every job claimed at once: each next job is started by the end of the
    # one before, on the loop, in that job's task.
    rt.configure(QUEUES={"default": {"concurrency": 1, "drain_timeout": 1}})
    runtime = jobs.start()
    pool = runtime.workers[0]
    pool.stop_claiming()
    pool.join_dispatcher(5)
    ids = [jobs.enqueue(AsyncShared(n=i)).id for i in range(3)]
    now = rt.clock()
    lease_until = now + jobs.service.settings.lease
    claimed = jobs.service.store.claim(
        "default", kinds=None, limit=3, now=now, lease_until=lease_until, worker="w"
    )
    pool.hand_out(claimed)
    for job_id in ids:
        rt.log.wait_finished(job_id=job_id, outcome="completed")
    assert [jobs.result(job_id)["seen"] for job_id in ids] == [None, None, None]


def test_slot_threads_are_made_for_sync_jobs_only_and_never_past_the_concurrency(
    rt: Runtime,
) -> None:
    rt.configure(QUEUES={"default": {"concurrency": 3, "drain_timeout": 1}})
    ids = [e.id for e in jobs.enqueue_many([Work() for _ in range(60)])]
    ids += [e.id for e in jobs.enqueue_many([AsyncNap(seconds=0) for _ in range(60)])]
    runtime = jobs.start()
    rt.log.wait_finished(count=len(ids), outcome="completed")
    assert 1 <= len(runtime.workers[0]._threads) <= 3
