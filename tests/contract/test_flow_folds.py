"""Debounce and latest-wins enqueues keep fair flow and sequences, on every store: a job that
went in through a debounced or a replacing enqueue takes its turn in a fair queue and its
place in its sequence, as a plain enqueue's job does."""

from __future__ import annotations

from datetime import timedelta

from anole_jobs import Debounce, Unique
from anole_jobs.stores.base import Finish
from tests.contract.flow_kinds import AccountJob, TenantJob
from tests.contract.test_fairness import claim, fair
from tests.contract.test_sequence import claim as claim_sequenced
from tests.contract.test_sequence import ids

LEASE = timedelta(seconds=30)


def first_claims(env, limits, count):
    started = []
    for _ in range(count):
        (job,) = claim(env, limits).jobs
        started.append(job.record.id)
        env.store.finish([Finish(run=job.run, state="completed", at=env.clock())])
    return started


def test_a_debounced_job_takes_its_turn_in_a_fair_queue(env):
    limits = fair(env, "customer")
    env.jobs.enqueue_many([TenantJob(customer="A", n=i) for i in range(20)])
    b = env.jobs.enqueue(TenantJob(customer="B"), debounce=Debounce(by="customer", wait=10))
    again = env.jobs.enqueue(
        TenantJob(customer="B", n=1), debounce=Debounce(by="customer", wait=10)
    )
    assert again.id == b.id and again.duplicate  # the burst folded
    env.clock.advance(10)
    env.store.stage(now=env.clock())  # what the leader's maintenance does: due jobs go available
    # B's one job is claimed among the first two, not after A's twenty.
    assert b.id in first_claims(env, limits, 2)


def test_a_replacing_job_takes_its_turn_in_a_fair_queue(env):
    limits = fair(env, "customer")
    env.jobs.enqueue_many([TenantJob(customer="A", n=i) for i in range(20)])
    latest = Unique(key="b-latest", on_conflict="replace")
    env.jobs.enqueue(TenantJob(customer="B"), unique=latest)
    b = env.jobs.enqueue(TenantJob(customer="B", n=1), unique=latest)
    assert b.inserted
    # It starts among the first three (second or third: a store may or may not count the
    # turn of the job it replaced), not after A's twenty.
    assert b.id in first_claims(env, limits, 3)


def test_a_debounced_job_waits_for_its_sequence(env):
    holder = env.jobs.enqueue(AccountJob(account_id=1)).id
    folded = env.jobs.enqueue(
        AccountJob(account_id=1, n=1), debounce=Debounce(by="account_id", wait=10)
    ).id
    env.clock.advance(10)
    env.store.stage(now=env.clock())
    taken = claim_sequenced(env)
    assert ids(taken) == [holder]  # the debounced job waits: the holder has not ended
    assert env.store.sequence_holder(folded) == holder
    env.store.finish([Finish(run=taken[0].run, state="completed", at=env.clock())])
    assert ids(claim_sequenced(env)) == [folded]


def test_a_replacing_job_waits_for_its_sequence(env):
    holder = env.jobs.enqueue(AccountJob(account_id=1)).id
    latest = Unique(key="acct-latest", on_conflict="replace")
    env.jobs.enqueue(AccountJob(account_id=1, n=1), unique=latest)
    replacing = env.jobs.enqueue(AccountJob(account_id=1, n=2), unique=latest).id
    taken = claim_sequenced(env)
    assert ids(taken) == [holder]
    assert env.store.sequence_holder(replacing) == holder
    env.store.finish([Finish(run=taken[0].run, state="completed", at=env.clock())])
    assert ids(claim_sequenced(env)) == [replacing]
