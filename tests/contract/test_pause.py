"""Queue pause and resume on every store, through the facade and the store contract.

A paused queue's jobs stay ``available``; no claim (the runtime's or `step()`'s) takes them
until the queue is resumed. The pause lives in the store: another store object on the same
backend (another instance) sees it, and durable stores keep it when the service is rebuilt.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from anole_jobs import InvalidJob, NewQueue, conf
from anole_jobs.records import QueueRecord
from anole_jobs.stores import open_store
from anole_jobs.testing.contract import race
from tests.contract.test_store_contract import claim_at
from tests.sampleapp.jobs import Work

#: The stores that tell other processes of new work (PostgreSQL NOTIFY, Redis PUBLISH).


def other_instance(env):
    """A second store object on the same backend: what another process would open."""
    return open_store(conf.parse(env.settings.ANOLE_JOBS))


def test_a_paused_queue_is_not_claimed_and_its_jobs_stay_available(env):
    waiting = env.jobs.enqueue(Work(tag="paused"))
    elsewhere = env.jobs.enqueue(Work(tag="mail"), queue="mail")
    record = env.jobs.pause("default")
    oldest = env.jobs.get(waiting.id).scheduled_at
    assert record == QueueRecord(
        name="default", paused=True, counts={"available": 1}, oldest_available=oldest
    )
    assert claim_at(env.store, env.clock(), limit=10) == []
    report = env.jobs.step()
    assert [run.job_id for run in report.runs] == [elsewhere.id]  # other queues run
    assert env.jobs.get(waiting.id).state == "available"
    assert env.jobs.get(waiting.id).attempt == 0

    resumed = env.jobs.resume("default")
    assert resumed == QueueRecord(
        name="default", paused=False, counts={"available": 1}, oldest_available=oldest
    )
    assert env.jobs.step().outcomes() == {waiting.id: "completed"}


def test_a_job_enqueued_while_paused_waits_for_resume(env):
    env.jobs.pause("default")
    job = env.jobs.enqueue(Work())
    env.clock.advance(timedelta(hours=1))
    assert env.jobs.step().runs == []
    env.jobs.resume("default")
    assert env.jobs.step().outcomes() == {job.id: "completed"}


def test_running_jobs_finish_while_their_queue_is_paused(env):
    job = env.jobs.enqueue(Work())
    (claimed,) = claim_at(env.store, env.clock(), limit=1)
    env.jobs.pause("default")
    from anole_jobs.stores.base import Finish

    assert env.store.finish([Finish(run=claimed.run, state="completed", at=env.clock())]) == [True]
    assert env.jobs.get(job.id).state == "completed"


def test_scheduled_jobs_of_a_paused_queue_are_staged_but_not_claimed(env):
    job = env.jobs.enqueue(Work(), delay=60)
    env.jobs.pause("default")
    env.clock.advance(timedelta(minutes=2))
    report = env.jobs.step()
    assert report.staged == 1 and report.runs == []
    assert env.jobs.get(job.id).state == "available"


def test_pause_and_resume_are_idempotent(env):
    assert env.store.pause("default", now=env.clock()) is True
    first = env.store.paused_queues()["default"]
    env.clock.advance(5)
    assert env.store.pause("default", now=env.clock()) is False
    assert env.store.paused_queues() == {"default": first}  # the first pause time is kept
    assert env.jobs.pause("default").paused is True
    assert env.store.resume("default") is True
    assert env.store.resume("default") is False
    assert env.jobs.resume("default").paused is False
    assert env.store.paused_queues() == {}


def test_any_queue_name_may_be_paused(env):
    odd = "reports/nightly: 'x'; DROP TABLE jobs; --"
    record = env.jobs.pause(odd)
    assert record == QueueRecord(name=odd, paused=True, counts={})
    job = env.jobs.enqueue(Work(), queue=NewQueue(odd))
    assert claim_at(env.store, env.clock(), limit=5, queue=odd) == []
    env.jobs.resume(odd)
    (claimed,) = claim_at(env.store, env.clock(), limit=5, queue=odd)
    assert claimed.record.id == job.id


def test_pausing_one_queue_leaves_a_similar_name_alone(env):
    env.jobs.pause("mail")
    job = env.jobs.enqueue(Work(), queue=NewQueue("mail2"))
    assert [c.record.id for c in claim_at(env.store, env.clock(), limit=5, queue="mail2")] == [
        job.id
    ]


@pytest.mark.parametrize("name", ["", None, 3, "a\x00b", "\ud800"])
def test_bad_queue_names_are_refused(env, name):
    with pytest.raises(InvalidJob, match="queue name"):
        env.jobs.pause(name)
    with pytest.raises(InvalidJob, match="queue name"):
        env.jobs.resume(name)


def test_queues_lists_configured_queues_queues_with_jobs_and_paused_queues(env):
    env.jobs.enqueue_many([Work(), Work()])
    env.jobs.enqueue(Work(), queue=NewQueue("reports"), delay=30)
    env.jobs.pause("idle")
    assert env.jobs.queues() == [
        QueueRecord(
            name="default", paused=False, counts={"available": 2}, oldest_available=env.clock()
        ),
        QueueRecord(name="idle", paused=True, counts={}),
        QueueRecord(name="mail", paused=False, counts={}),
        QueueRecord(name="reports", paused=False, counts={"scheduled": 1}),
    ]
    env.jobs.resume("idle")
    assert [q.name for q in env.jobs.queues()] == ["default", "mail", "reports"]


def test_resume_wakes_this_process_workers_at_once(env):
    subscription = env.store.subscribe(["default"])
    try:
        env.jobs.pause("default")
        subscription.wait(0)  # forget any earlier wake-up
        env.jobs.resume("default")
        assert subscription.wait(5.0) == {"default"}
    finally:
        subscription.close()


def test_the_pause_holds_for_another_instance(env):
    env.require("supports_other_processes")
    job = env.jobs.enqueue(Work())
    other = other_instance(env)
    try:
        env.jobs.pause("default")
        assert claim_at(other, env.clock(), limit=5) == []
        assert other.paused_queues().keys() == {"default"}
        other.resume("default")
        assert [c.record.id for c in claim_at(env.store, env.clock(), limit=5)] == [job.id]
    finally:
        other.close()


def test_resume_wakes_the_workers_of_another_instance(env):
    env.require("supports_cross_process_wakeups")
    other = other_instance(env)
    subscription = other.subscribe(["default"])
    try:
        env.jobs.pause("default")
        # The listener is up once a wake-up sent now reaches it.
        env.store.wake(["default"])
        assert subscription.wait(10.0) == {"default"}
        env.jobs.resume("default")
        assert subscription.wait(10.0) == {"default"}
    finally:
        subscription.close()
        other.close()


def test_the_pause_survives_a_restart_on_durable_stores(env):
    job = env.jobs.enqueue(Work())
    env.jobs.pause("default")
    env.jobs.reset()  # a new service and store, as after a restart
    if env.has("supports_other_processes"):
        assert env.jobs.queues()[0] == QueueRecord(
            name="default",
            paused=True,
            counts={"available": 1},
            oldest_available=env.jobs.get(job.id).scheduled_at,
        )
        assert env.jobs.step().runs == []
        env.jobs.resume("default")
        assert env.jobs.step().outcomes() == {job.id: "completed"}
    else:
        assert env.store.paused_queues() == {}  # memory: nothing survives


def test_two_instances_stepping_at_once_run_none_while_paused_then_each_job_once(env):
    ids = [r.id for r in env.jobs.enqueue_many([Work(tag=str(i)) for i in range(6)])]
    env.jobs.pause("default")
    reports = race(2, lambda i: env.jobs.step())
    assert [run for report in reports for run in report.runs] == []
    env.jobs.resume("default")
    reports = race(2, lambda i: env.jobs.step())
    ran = sorted(run.job_id for report in reports for run in report.runs)
    assert ran == ids  # each exactly once, between the two instances


def test_a_pause_during_concurrent_claims_stops_every_later_claim(env):
    """Claims racing a pause: once `pause` has returned, no claim that starts takes a job."""
    env.jobs.enqueue_many([Work(tag=str(i)) for i in range(40)])
    paused = threading.Event()
    late_claims: list[int] = []

    def act(i: int) -> None:
        if i == 0:
            env.jobs.pause("default")
            paused.set()
            return
        for _ in range(20):
            started_after_pause = paused.is_set()
            claimed = claim_at(env.store, env.clock(), limit=1, worker=f"w{i}")
            if started_after_pause:
                late_claims.extend(c.record.id for c in claimed)

    race(3, act)
    assert late_claims == []
    assert env.jobs.queues()[0].paused is True
