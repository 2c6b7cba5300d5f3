"""Sequences, on every store: jobs of a kind with `sequence=` and the same value run one at a
time in enqueue order; the next becomes claimable only once the one before is completed, dead
or cancelled (scheduled, retrying, running, available or pending, it holds the sequence)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from anole_jobs.limits import Limits
from anole_jobs.stores.base import Finish
from tests.contract.flow_kinds import AccountJob

LEASE = timedelta(seconds=30)
SEQUENCED = Limits(sequenced=True)


def claim(env, *, limit=10, limits=SEQUENCED, queue="default"):
    now = env.clock()
    return env.store.claim_limited(
        queue, limits=limits, kinds=None, limit=limit, now=now, lease_until=now + LEASE, worker="w"
    ).jobs


def ids(claimed):
    return [c.record.id for c in claimed]


def end(env, claimed, state="completed", **extra):
    assert env.store.finish(
        [Finish(run=c.run, state=state, at=env.clock(), **extra) for c in claimed]
    ) == [True] * len(claimed)


def test_one_at_a_time_in_enqueue_order_per_value(env):
    first = [env.jobs.enqueue(AccountJob(account_id=1, n=i)).id for i in range(3)]
    other = env.jobs.enqueue(AccountJob(account_id=2)).id
    taken = claim(env)
    assert ids(taken) == [first[0], other]
    assert claim(env) == []
    assert env.store.sequence_holder(first[1]) == first[0]
    assert env.store.sequence_holder(first[2]) == first[0]
    assert env.store.sequence_holder(first[0]) is None
    assert env.store.sequence_holder(other) is None
    end(env, taken[:1])
    assert env.store.sequence_holder(first[2]) == first[1]
    (second,) = claim(env)
    assert second.record.id == first[1]
    end(env, [second])
    assert ids(claim(env)) == [first[2]]


def test_enqueue_order_wins_over_priority_and_schedule(env):
    later = env.clock() + timedelta(seconds=60)
    a = env.jobs.enqueue(AccountJob(account_id=7), run_at=later).id
    b = env.jobs.enqueue(AccountJob(account_id=7), priority=10).id
    assert claim(env) == []  # the scheduled one holds the sequence
    assert env.store.sequence_holder(b) == a
    env.clock.advance(61)
    env.store.stage(now=env.clock())
    (taken,) = claim(env)
    assert taken.record.id == a
    end(env, [taken])
    assert ids(claim(env)) == [b]


@pytest.mark.parametrize("outcome", ["dead", "cancelled"])
def test_dead_or_cancelled_releases_the_sequence(env, outcome):
    a = env.jobs.enqueue(AccountJob(account_id=3)).id
    b = env.jobs.enqueue(AccountJob(account_id=3)).id
    (taken,) = claim(env)
    assert taken.record.id == a
    if outcome == "dead":
        end(env, [taken], state="dead")
    else:
        env.jobs.cancel(a)
    assert env.store.sequence_holder(b) is None
    assert ids(claim(env)) == [b]


def test_a_retrying_job_holds_its_sequence(env):
    a = env.jobs.enqueue(AccountJob(account_id=4)).id
    b = env.jobs.enqueue(AccountJob(account_id=4)).id
    (taken,) = claim(env)
    retry_at = env.clock() + timedelta(seconds=10)
    end(env, [taken], state="retrying", scheduled_at=retry_at)
    assert claim(env) == []
    assert env.store.sequence_holder(b) == a
    env.clock.advance(11)
    env.store.stage(now=env.clock())
    (again,) = claim(env)
    assert again.record.id == a
    end(env, [again])
    assert ids(claim(env)) == [b]


def test_a_cancelled_waiting_job_releases_the_one_after(env):
    a = env.jobs.enqueue(AccountJob(account_id=5)).id
    b = env.jobs.enqueue(AccountJob(account_id=5)).id
    c = env.jobs.enqueue(AccountJob(account_id=5)).id
    env.jobs.cancel(a)
    env.jobs.delete(b) if hasattr(env.jobs, "delete") else env.jobs.cancel(b)
    assert ids(claim(env)) == [c]


def test_a_sequence_within_limits(env):
    queues = dict(env.settings.ANOLE_JOBS["QUEUES"])
    queues["default"] = {**queues.get("default", {}), "global_concurrency": 5}
    env.configure(QUEUES=queues)
    limits = env.jobs.service.settings.queues["default"].limits
    a = [env.jobs.enqueue(AccountJob(account_id=1)).id for _ in range(2)]
    b = [env.jobs.enqueue(AccountJob(account_id=2)).id for _ in range(2)]
    from dataclasses import replace

    taken = claim(env, limits=replace(limits, sequenced=True))
    assert ids(taken) == [a[0], b[0]]


def test_a_batch_takes_one_job_per_sequence(env):
    for n in range(5):
        for account in range(4):
            env.jobs.enqueue(AccountJob(account_id=account, n=n))
    taken = claim(env, limit=20)
    assert sorted(c.record.args["account_id"] for c in taken) == [0, 1, 2, 3]
    assert {c.record.args["n"] for c in taken} == {0}


@pytest.fixture
def ran(env):
    """Register handlers for the flow kinds for one test; the job ids in the order they ran."""
    from anole_jobs.kinds import registry
    from tests.contract.flow_kinds import TenantJob

    order: list[int] = []

    @env.jobs.handler(AccountJob)
    def account(job, args):
        order.append(job.id)

    @env.jobs.handler(TenantJob)
    def tenant(job, args):
        order.append(job.id)

    yield order
    registry.remove_handler("flow.account")
    registry.remove_handler("flow.tenant")


def test_a_worker_step_keeps_the_sequence(env, ran):
    a = [env.jobs.enqueue(AccountJob(account_id=9, n=i)).id for i in range(3)]
    other = env.jobs.enqueue(AccountJob(account_id=10)).id
    env.jobs.step()
    assert ran == [a[0], other]
    env.jobs.step()
    env.jobs.step()
    assert ran == [a[0], other, a[1], a[2]]


def test_a_worker_step_takes_turns_in_a_fair_queue(env, ran):
    from tests.contract.flow_kinds import TenantJob

    queues = dict(env.settings.ANOLE_JOBS["QUEUES"])
    queues["fair"] = {"fairness": "customer"}
    env.configure(QUEUES=queues)
    env.jobs.enqueue_many([TenantJob(customer="A") for _ in range(100)])
    b = {e.id for e in env.jobs.enqueue_many([TenantJob(customer="B") for _ in range(3)])}
    env.jobs.step()
    assert b <= set(ran[:8])


def test_a_workflow_step_of_a_sequence_holds_it_while_pending(env):
    from anole_jobs import Workflow

    flow = Workflow("ledger")
    first = flow.add(AccountJob(account_id=11, n=0), name="first")
    flow.add(AccountJob(account_id=11, n=1), name="second", after=[first])
    env.jobs.enqueue_workflow(flow)
    later = env.jobs.enqueue(AccountJob(account_id=11, n=2)).id
    (taken,) = claim(env)
    assert taken.record.step_name == "first"
    end(env, [taken])
    # The second step, pending until now, comes before the later job of the sequence.
    (second,) = claim(env)
    assert second.record.step_name == "second"
    assert env.store.sequence_holder(later) == second.record.id
    end(env, [second])
    assert ids(claim(env)) == [later]


def test_the_plain_claim_keeps_sequences_too(env):
    a = env.jobs.enqueue(AccountJob(account_id=12)).id
    b = env.jobs.enqueue(AccountJob(account_id=12)).id
    now = env.clock()
    taken = env.store.claim(
        "default", kinds=None, limit=10, now=now, lease_until=now + LEASE, worker="w"
    )
    assert ids(taken) == [a]
    end(env, taken)
    again = env.store.claim(
        "default", kinds=["flow.account"], limit=10, now=now, lease_until=now + LEASE, worker="w"
    )
    assert ids(again) == [b]


def test_a_job_retried_by_hand_after_it_ended_holds_its_place_again(env):
    a = env.jobs.enqueue(AccountJob(account_id=13)).id
    b = env.jobs.enqueue(AccountJob(account_id=13)).id
    (taken,) = claim(env)
    end(env, [taken], state="dead")
    env.jobs.retry(a)  # b has not started: it waits for a again
    assert env.store.sequence_holder(b) == a
    assert ids(claim(env)) == [a]


def test_cron_jobs_of_a_kind_with_a_sequence_keep_it(env):
    from anole_jobs.stores.base import NewJob

    now = env.clock()
    first = env.jobs.enqueue(AccountJob(account_id=14)).id

    def job() -> NewJob:
        return NewJob(
            kind="flow.account",
            queue="default",
            args={"account_id": 14, "n": 0},
            meta={},
            priority=0,
            max_attempts=3,
            state="available",
            scheduled_at=now,
            created_at=now,
            sequence_key="flow.account:14",
        )

    ticked = env.store.cron_advance(name="ledger", tick=now, job=job())
    triggered = env.store.cron_trigger(name="ledger", job=job())
    assert env.store.sequence_holder(ticked.id) == first
    assert env.store.sequence_holder(triggered.id) == first
    assert ids(claim(env)) == [first]


def test_concurrent_enqueues_to_one_sequence_become_visible_in_id_order(env):
    """Two threads enqueue to one sequence while a third claims: a job is never claimed while
    an earlier job of its sequence is still to come (its transaction not yet committed)."""
    import threading

    if env.name == "redis_cluster":
        pytest.skip(
            "a cluster's ids are reserved before its insert script runs: two enqueuers'"
            " ids may go in out of order (docs/flow-control.md)"
        )
    if env.name == "sqlite":
        pytest.skip(
            "one writer at a time: enqueues cannot interleave (and the test database"
            " is not shared across threads)"
        )
    claimed: list[int] = []
    stop = threading.Event()

    from django.db import connections

    def enqueue(offset: int) -> None:
        try:
            for n in range(15):
                env.jobs.enqueue(AccountJob(account_id=15, n=offset + n))
        finally:
            connections.close_all()

    def claim_and_finish() -> None:
        try:
            while not stop.is_set():
                taken = claim(env)
                claimed.extend(ids(taken))
                if taken:
                    end(env, taken)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=enqueue, args=(k * 100,)) for k in range(2)]
    claimer = threading.Thread(target=claim_and_finish)
    claimer.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    claimer.join()
    while True:  # the rest, one at a time
        taken = claim(env)
        if not taken:
            break
        claimed.extend(ids(taken))
        end(env, taken)
    assert len(claimed) == 30 and claimed == sorted(claimed)
