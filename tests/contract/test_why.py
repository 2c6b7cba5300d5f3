"""`jobs.why(id)` on every store: each reason a job can wait for, with its detail and `until`,
None for a running or finished job, and `LookupError` for an unknown id.

Workers are recorded through the store's presence records (no runtime starts: a process in
manual mode is no live worker); time moves only with the fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from anole_jobs import Debounce, Job, Waiting, Workflow, jobs, kind
from anole_jobs.limits import Limits
from anole_jobs.records import WAITING_REASONS
from anole_jobs.stores.workers import QueueSlots, WorkerRecord


@kind("test.why.job", attempts=3)
@dataclass
class WJob:
    customer: int = 0
    fail: bool = False


@jobs.handler(WJob)
def run_wjob(job: Job, args: WJob) -> None:
    if args.fail:
        raise ValueError("failing on purpose")


@kind("test.why.unhandled")
@dataclass
class Unhandled:
    n: int = 0


def live_worker(env, *, kinds=("test.why.job",), queue="default", busy=0):
    now = env.clock()
    env.store.record_worker(
        WorkerRecord(
            id=f"w-{queue}-{len(kinds)}",
            host="host",
            pid=1,
            version="test",
            queues=(QueueSlots(name=queue, busy=busy, total=2),),
            started_at=now,
            last_seen=now,
            expires_at=now + timedelta(minutes=5),
            kinds=tuple(kinds),
        )
    )


def claim_one(env, queue="default"):
    now = env.clock()
    claimed = env.store.claim_limited(
        queue,
        limits=Limits(),
        kinds=None,
        limit=1,
        now=now,
        lease_until=now + timedelta(seconds=30),
        worker="test",
    )
    return claimed.jobs


def test_the_reasons_are_exactly_the_documented_ones():
    assert WAITING_REASONS == (
        "scheduled",
        "retry_backoff",
        "queue_paused",
        "concurrency_limit",
        "rate_limit",
        "sequence",
        "dependencies",
        "signal",
        "debounce",
        "no_worker",
        "ready",
    )


def test_unknown_running_and_finished(env):
    with pytest.raises(LookupError):
        env.jobs.why(10_000_000)
    job = env.jobs.enqueue(WJob())
    (claimed,) = claim_one(env)
    assert claimed.record.id == job.id
    assert env.jobs.why(job.id) is None
    done = env.jobs.enqueue(WJob())
    env.jobs.cancel(done.id)
    assert env.jobs.why(done.id) is None


def test_scheduled_and_retry_backoff(env):
    job = env.jobs.enqueue(WJob(), delay=90)
    waiting = env.jobs.why(job.id)
    assert isinstance(waiting, Waiting)
    assert waiting.reason == "scheduled" and waiting.until == env.clock() + timedelta(seconds=90)
    failing = env.jobs.enqueue(WJob(fail=True))
    env.jobs.step()
    waiting = env.jobs.why(failing.id)
    record = env.jobs.get(failing.id)
    assert waiting.reason == "retry_backoff" and waiting.until == record.scheduled_at
    assert "ValueError" in waiting.detail and "failing on purpose" in waiting.detail


def test_queue_paused(env):
    job = env.jobs.enqueue(WJob())
    env.jobs.pause("default")
    waiting = env.jobs.why(job.id)
    assert waiting.reason == "queue_paused" and "'default'" in waiting.detail
    env.jobs.resume("default")
    assert env.jobs.why(job.id).reason == "no_worker"


def test_concurrency_limit(env):
    env.jobs.set_limits("default", global_concurrency=1)
    running = env.jobs.enqueue(WJob())
    held = env.jobs.enqueue(WJob())
    assert [c.record.id for c in claim_one(env)] == [running.id]
    waiting = env.jobs.why(held.id)
    assert waiting.reason == "concurrency_limit" and waiting.until is None
    assert "1 running of at most 1" in waiting.detail


def test_rate_limit_says_when_it_reopens(env):
    env.clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    env.jobs.set_limits("default", rate_limit="1/m")
    first = env.jobs.enqueue(WJob())
    held = env.jobs.enqueue(WJob())
    assert [c.record.id for c in claim_one(env)] == [first.id]
    waiting = env.jobs.why(held.id)
    assert waiting.reason == "rate_limit"
    assert waiting.until == env.clock() + timedelta(minutes=1)


def test_dependencies_name_the_awaited_steps(env):
    workflow = Workflow("why")
    workflow.add(WJob(), name="extract")
    workflow.add(WJob(), name="load", after=["extract"])
    enqueued = env.jobs.enqueue_workflow(workflow)
    waiting = env.jobs.why(enqueued.jobs["load"])
    assert waiting.reason == "dependencies" and "'extract'" in waiting.detail


def test_debounce_until_its_time(env):
    job = env.jobs.enqueue(WJob(customer=4), debounce=Debounce(by="customer", wait=30))
    waiting = env.jobs.why(job.id)
    assert waiting.reason == "debounce" and "customer=4" in waiting.detail
    assert waiting.until == env.clock() + timedelta(seconds=30)


def test_no_worker_then_no_handler_then_ready(env):
    job = env.jobs.enqueue(WJob())
    other = env.jobs.enqueue(Unhandled())
    waiting = env.jobs.why(job.id)
    assert waiting.reason == "no_worker" and "runs its queue" in waiting.detail
    live_worker(env, queue="mail")
    assert env.jobs.why(job.id).reason == "no_worker"
    live_worker(env, busy=2)
    assert env.jobs.why(job.id).reason == "ready"
    waiting = env.jobs.why(other.id)
    assert waiting.reason == "no_worker" and "'test.why.unhandled'" in waiting.detail
