"""Fair flow, on every store: a queue with `fairness` claims its jobs of equal priority taking
turns across the values of its key (weighted round robin), in single claims and in batches,
and composes with the queue's limits without starving a value."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from anole_jobs.stores.base import Finish
from tests.contract.flow_kinds import TenantJob

LEASE = timedelta(seconds=30)


def fair(env, fairness, **options):
    queues = dict(env.settings.ANOLE_JOBS["QUEUES"])
    queues["fair"] = {"fairness": fairness, **options}
    env.configure(QUEUES=queues)
    return env.jobs.service.settings.queues["fair"].limits


def claim(env, limits, *, limit=1):
    now = env.clock()
    return env.store.claim_limited(
        "fair", limits=limits, kinds=None, limit=limit, now=now, lease_until=now + LEASE, worker="w"
    )


def complete(env, claimed):
    env.store.finish([Finish(run=c.run, state="completed", at=env.clock()) for c in claimed])


def test_a_late_customer_gets_turns_at_once(env):
    limits = fair(env, "customer")
    env.jobs.enqueue_many([TenantJob(customer="A", n=i) for i in range(1000)])
    b_ids = {e.id for e in env.jobs.enqueue_many([TenantJob(customer="B", n=i) for i in range(10)])}
    started = []
    for _ in range(25):
        (job,) = claim(env, limits).jobs
        started.append(job.record.id)
        complete(env, [job])
    # Turns alternate while both wait: B's 10 start within the first 21 claims.
    assert b_ids <= set(started[:21])
    a_ns = [env.jobs.get(i).args["n"] for i in started if env.jobs.get(i).args["customer"] == "A"]
    assert a_ns == sorted(a_ns)


def test_a_batch_claim_takes_turns_too(env):
    limits = fair(env, "customer")
    env.jobs.enqueue_many([TenantJob(customer="A") for _ in range(50)])
    env.jobs.enqueue_many([TenantJob(customer="B") for _ in range(5)])
    env.jobs.enqueue_many([TenantJob(customer="C") for _ in range(5)])
    batch = claim(env, limits, limit=9).jobs
    assert Counter(c.record.args["customer"] for c in batch) == {"A": 3, "B": 3, "C": 3}


def test_weights_give_a_value_more_turns(env):
    limits = fair(env, {"key": "customer", "weights": {"gold": 3}})
    env.jobs.enqueue_many([TenantJob(customer="free") for _ in range(40)])
    env.jobs.enqueue_many([TenantJob(customer="gold") for _ in range(40)])
    taken = claim(env, limits, limit=20).jobs
    counts = Counter(c.record.args["customer"] for c in taken)
    assert counts["gold"] == 15 and counts["free"] == 5


def test_priority_comes_before_turns(env):
    limits = fair(env, "customer")
    env.jobs.enqueue_many([TenantJob(customer="A") for _ in range(5)])
    urgent = env.jobs.enqueue(TenantJob(customer="A"), priority=5).id
    env.jobs.enqueue_many([TenantJob(customer="B") for _ in range(5)])
    assert claim(env, limits).jobs[0].record.id == urgent


def test_a_value_held_by_a_limit_gets_its_turns_once_the_limit_allows(env):
    limits = fair(env, "customer", global_concurrency=1, partition="customer")
    env.jobs.enqueue_many([TenantJob(customer="A") for _ in range(20)])
    env.jobs.enqueue_many([TenantJob(customer="B") for _ in range(20)])
    first = claim(env, limits, limit=5)
    assert sorted(c.record.args["customer"] for c in first.jobs) == ["A", "B"]
    assert first.held
    # A finishes, B keeps running: A's next turn comes at once.
    a = next(c for c in first.jobs if c.record.args["customer"] == "A")
    complete(env, [a])
    (again,) = claim(env, limits, limit=5).jobs
    assert again.record.args["customer"] == "A"


def test_a_rate_limited_queue_keeps_turns(env):
    limits = fair(env, "customer", rate_limit="4/m")
    env.jobs.enqueue_many([TenantJob(customer="A") for _ in range(20)])
    env.jobs.enqueue_many([TenantJob(customer="B") for _ in range(4)])
    taken = claim(env, limits, limit=10)
    assert Counter(c.record.args["customer"] for c in taken.jobs) == {"A": 2, "B": 2}
    assert taken.held


def test_a_value_with_nothing_waiting_does_not_bank_turns(env):
    limits = fair(env, "customer")
    env.jobs.enqueue_many([TenantJob(customer="A") for _ in range(30)])
    env.jobs.enqueue(TenantJob(customer="B"))
    for _ in range(20):
        complete(env, claim(env, limits).jobs)
    # B ran long ago; its new jobs take turns with A's from now on, not all at once.
    env.jobs.enqueue_many([TenantJob(customer="B") for _ in range(10)])
    taken = claim(env, limits, limit=6).jobs
    assert Counter(c.record.args["customer"] for c in taken) == {"A": 3, "B": 3}


def test_the_store_reports_a_fair_queues_turns(env):
    fair(env, "customer")
    env.jobs.enqueue_many([TenantJob(customer="A") for _ in range(3)])
    env.jobs.enqueue(TenantJob(customer="B"))
    state = env.store.fairness_state("fair")
    assert dict(state.waiting) == {'"A"': 3, '"B"': 1}
    assert env.store.fairness_state("default").waiting == {}


def test_single_enqueues_take_turns_too(env):
    limits = fair(env, "customer")
    for i in range(60):
        env.jobs.enqueue(TenantJob(customer="A", n=i))
    b_ids = {env.jobs.enqueue(TenantJob(customer="B", n=i)).id for i in range(10)}
    started = []
    for _ in range(21):
        (job,) = claim(env, limits).jobs
        started.append(job.record.id)
        complete(env, [job])
    assert b_ids <= set(started)


@pytest.mark.parametrize("options", [{}, {"global_concurrency": 50}])
def test_jobs_enqueued_before_the_queue_had_fairness_still_run(env, options):
    if env.name == "memory":
        pytest.skip("new settings make a new memory store: no job enqueued before is left")
    queues = dict(env.settings.ANOLE_JOBS["QUEUES"])
    queues["fair"] = {}
    env.configure(QUEUES=queues)
    before = {e.id for e in env.jobs.enqueue_many([TenantJob(customer="A") for _ in range(3)])}
    limits = fair(env, "customer", **options)
    after = {e.id for e in env.jobs.enqueue_many([TenantJob(customer="B") for _ in range(2)])}
    taken = [c.record.id for c in claim(env, limits, limit=10).jobs]
    assert set(taken) == before | after
    assert set(taken[:2]) == after  # those with a turn first
