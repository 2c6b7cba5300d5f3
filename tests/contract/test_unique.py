"""Unique jobs on every store: each mode, each way a key is freed or kept, batches, and
real concurrent enqueues of one key.

Driven through the public facade in manual mode (some tests through the pytest plugin's
`anole_jobs` fixture and the `anole_jobs.testing` assertions); time moves only when a test
advances the fake clock, and threads meet at a barrier — nothing sleeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from anole_jobs import Enqueued, Job, Unique, jobs, kind
from anole_jobs.core import LIVE_STATES
from anole_jobs.events import ENQUEUED, Event
from anole_jobs.stores.base import Finish
from anole_jobs.testing import all_enqueued, assert_enqueued, drain, refute_enqueued
from anole_jobs.testing.contract import race


@kind("test.unique.job", attempts=2)
@dataclass
class UJob:
    n: int
    outcome: str = "ok"
    extra: dict[str, int] = field(default_factory=dict)


@jobs.handler(UJob)
def run_ujob(job: Job, args: UJob) -> None:
    if args.outcome == "fail":
        raise ValueError("failing on purpose")
    if args.outcome == "discard":
        job.discard("not wanted")


@kind("test.unique.other")
@dataclass
class UOther:
    n: int
    outcome: str = "ok"
    extra: dict[str, int] = field(default_factory=dict)


@jobs.handler(UOther)
def run_uother(job: Job, args: UOther) -> None:
    return None


@kind("test.unique.kind_live", unique=Unique())
@dataclass
class UKindLive:
    n: int


@jobs.handler(UKindLive)
def run_ukind_live(job: Job, args: UKindLive) -> None:
    return None


@kind("test.unique.kind_any", unique=Unique(scope="any"))
@dataclass
class UKindAny:
    n: int


@jobs.handler(UKindAny)
def run_ukind_any(job: Job, args: UKindAny) -> None:
    return None


def record(env, job_id):
    found = env.jobs.get(job_id)
    assert found is not None, f"job {job_id} vanished"
    return found


def claim_all(env):
    now = env.clock()
    return env.store.claim(
        "default",
        kinds=None,
        limit=100,
        now=now,
        lease_until=now + timedelta(seconds=30),
        worker="test",
    )


# -- the key --------------------------------------------------------------------------------------


def test_default_key_is_the_kind_and_the_arguments(env):
    first = env.jobs.enqueue(UJob(1), unique=Unique())
    again = env.jobs.enqueue(UJob(1), unique=Unique())
    other = env.jobs.enqueue(UJob(2), unique=Unique())
    plain = env.jobs.enqueue(UJob(1))  # not unique: always inserted
    assert first == Enqueued(first.id, True)
    assert again == Enqueued(first.id, False)
    assert other.inserted and other.id != first.id
    assert plain.inserted and plain.id not in (first.id, other.id)
    key = record(env, first.id).unique_key
    assert key is not None and key.startswith("test.unique.job:")
    assert record(env, other.id).unique_key not in (None, key)
    assert record(env, plain.id).unique_key is None
    assert env.jobs.counts() == {"default": {"available": 3}}


def test_default_key_does_not_depend_on_dict_order(env):
    first = env.jobs.enqueue(UJob(1, extra={"a": 1, "b": 2}), unique=Unique())
    again = env.jobs.enqueue(UJob(1, extra={"b": 2, "a": 1}), unique=Unique())
    assert again == Enqueued(first.id, False)


def test_same_arguments_of_another_kind_are_another_key(env):
    first = env.jobs.enqueue(UJob(1), unique=Unique())
    other_kind = env.jobs.enqueue(UOther(1), unique=Unique())
    assert first.inserted and other_kind.inserted and other_kind.id != first.id


def test_key_replaces_the_arguments(env):
    first = env.jobs.enqueue(UJob(1), unique=Unique(key="account-9"))
    same_key = env.jobs.enqueue(UJob(2, outcome="fail"), unique=Unique(key="account-9"))
    other_key = env.jobs.enqueue(UJob(1), unique=Unique(key="account-10"))
    by_args = env.jobs.enqueue(UJob(1), unique=Unique())
    assert same_key == Enqueued(first.id, False)
    assert record(env, first.id).args["n"] == 1  # the holder is returned untouched
    assert other_key.inserted and by_args.inserted
    assert len({first.id, other_key.id, by_args.id}) == 3


def test_period_windows_are_aligned_to_the_epoch_and_roll_over(env):
    hour = Unique(period=timedelta(hours=1))
    env.clock.set(datetime(2030, 1, 1, 0, 59, tzinfo=UTC))
    first = env.jobs.enqueue(UJob(1), unique=hour)
    env.clock.advance(59)  # 00:59:59, same window
    assert env.jobs.enqueue(UJob(1), unique=hour) == Enqueued(first.id, False)
    env.clock.advance(1)  # 01:00:00: a new window after one minute, not one hour
    second = env.jobs.enqueue(UJob(1), unique=hour)
    assert second.inserted and second.id != first.id
    assert record(env, first.id).state == "available"  # the first job still waits
    env.clock.advance(timedelta(hours=1) - timedelta(seconds=1))  # 01:59:59
    assert env.jobs.enqueue(UJob(1), unique=hour) == Enqueued(second.id, False)
    env.clock.advance(1)
    third = env.jobs.enqueue(UJob(1), unique=hour)
    assert third.inserted and third.id not in (first.id, second.id)


def test_period_accepts_seconds_and_combines_with_key(env):
    env.clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    daily = Unique(key="report", period=86_400)
    first = env.jobs.enqueue(UJob(1), unique=daily)
    env.clock.advance(timedelta(hours=23))
    assert env.jobs.enqueue(UJob(2), unique=daily) == Enqueued(first.id, False)
    env.clock.advance(timedelta(hours=1))
    assert env.jobs.enqueue(UJob(2), unique=daily).inserted


# -- live scope (the default) ---------------------------------------------------------------------


def test_live_key_holds_while_scheduled_retrying_and_running(env):
    unique = Unique()
    job = env.jobs.enqueue(UJob(1, outcome="fail"), unique=unique, delay=60)
    assert record(env, job.id).state == "scheduled"
    assert env.jobs.enqueue(UJob(1, outcome="fail"), unique=unique) == Enqueued(job.id, False)

    env.clock.advance(60)
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    assert record(env, job.id).state == "retrying"
    assert env.jobs.enqueue(UJob(1, outcome="fail"), unique=unique) == Enqueued(job.id, False)

    env.clock.set(record(env, job.id).scheduled_at)
    assert env.store.stage(now=env.clock()) == 1
    (claimed,) = claim_all(env)
    assert claimed.record.id == job.id and claimed.record.state == "running"
    assert env.jobs.enqueue(UJob(1, outcome="fail"), unique=unique) == Enqueued(job.id, False)

    # Finished: the key is free again.
    assert env.store.finish([Finish(run=claimed.run, state="completed", at=env.clock())]) == [True]
    again = env.jobs.enqueue(UJob(1, outcome="fail"), unique=unique)
    assert again.inserted and again.id != job.id


@pytest.mark.parametrize("ending", ["completed", "dead", "cancelled"])
def test_live_key_is_freed_when_the_job_ends(env, ending):
    outcome = {"completed": "ok", "dead": "discard", "cancelled": "ok"}[ending]
    job = env.jobs.enqueue(UJob(1, outcome=outcome), unique=Unique())
    if ending == "cancelled":
        assert env.jobs.cancel(job.id).state == "cancelled"
    else:
        env.jobs.step()
    assert record(env, job.id).state == ending
    again = env.jobs.enqueue(UJob(1, outcome=outcome), unique=Unique())
    assert again.inserted and again.id != job.id
    # And the new holder is unique in turn.
    assert env.jobs.enqueue(UJob(1, outcome=outcome), unique=Unique()) == Enqueued(again.id, False)


def test_live_key_is_freed_when_rescue_kills_the_job(env):
    job = env.jobs.enqueue(UJob(1), unique=Unique())
    lease = timedelta(seconds=30)
    for _ in range(2):  # UJob has two attempts; each lapses
        now = env.clock()
        (claimed,) = env.store.claim(
            "default", kinds=None, limit=1, now=now, lease_until=now + lease, worker="w"
        )
        env.clock.advance(lease + timedelta(seconds=1))
        (rescued,) = env.store.rescue(now=env.clock())
        assert rescued.id == job.id
    assert record(env, job.id).state == "dead"
    again = env.jobs.enqueue(UJob(1), unique=Unique())
    assert again.inserted and again.id != job.id


def test_admin_retry_takes_the_key_back(env, anole_jobs):
    job = anole_jobs.enqueue(UJob(1, outcome="discard"), unique=Unique())
    assert drain() == {"dead": 1}
    refute_enqueued(UJob)
    assert anole_jobs.retry(job.id).state == "available"
    assert assert_enqueued(UJob, args={"n": 1}).id == job.id
    assert anole_jobs.enqueue(UJob(1, outcome="discard"), unique=Unique()) == Enqueued(
        job.id, False
    )


def test_admin_retry_never_makes_two_live_jobs_with_one_key(env):
    dead = env.jobs.enqueue(UJob(1, outcome="discard"), unique=Unique())
    env.jobs.step()
    holder = env.jobs.enqueue(UJob(1, outcome="discard"), unique=Unique())
    assert holder.inserted
    env.jobs.retry(dead.id)
    live = [job_id for job_id in (dead.id, holder.id) if record(env, job_id).state in LIVE_STATES]
    assert live == [holder.id]
    assert env.jobs.enqueue(UJob(1, outcome="discard"), unique=Unique()) == Enqueued(
        holder.id, False
    )


# -- any scope (idempotency keys) -----------------------------------------------------------------


def test_any_key_holds_after_the_job_finished_until_it_is_pruned(env):
    unique = Unique(key="payment-42", scope="any")
    job = env.jobs.enqueue(UJob(1), unique=unique)
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    assert env.jobs.enqueue(UJob(2), unique=unique) == Enqueued(job.id, False)
    env.clock.advance(timedelta(hours=24))  # the completed horizon, not yet past it
    assert env.jobs.step().pruned == 0
    assert env.jobs.enqueue(UJob(2), unique=unique) == Enqueued(job.id, False)
    env.clock.advance(timedelta(seconds=1))
    assert env.jobs.step().pruned == 1
    assert env.jobs.get(job.id) is None
    again = env.jobs.enqueue(UJob(2), unique=unique)
    assert again.inserted and again.id != job.id


@pytest.mark.parametrize("ending", ["dead", "cancelled"])
def test_any_key_holds_after_dead_and_cancelled(env, ending):
    unique = Unique(scope="any")
    job = env.jobs.enqueue(UJob(1, outcome="discard"), unique=unique)
    if ending == "cancelled":
        env.jobs.cancel(job.id)
    else:
        env.jobs.step()
    assert record(env, job.id).state == ending
    assert env.jobs.enqueue(UJob(1, outcome="discard"), unique=unique) == Enqueued(job.id, False)


def test_deleting_the_holder_frees_an_any_key(env, anole_jobs):
    unique = Unique(scope="any")
    job = anole_jobs.enqueue(UJob(1), unique=unique)
    assert drain() == {"completed": 1}
    assert anole_jobs.delete(job.id) is True
    again = anole_jobs.enqueue(UJob(1), unique=unique)
    assert again.inserted and again.id != job.id
    assert assert_enqueued(UJob).id == again.id


# -- declared on the kind ----------------------------------------------------------------------


def test_kind_level_unique_applies_without_an_option(env, anole_jobs):
    first = anole_jobs.enqueue(UKindLive(1))
    assert anole_jobs.enqueue(UKindLive(1)) == Enqueued(first.id, False)
    assert anole_jobs.enqueue(UKindLive(2)).inserted
    assert assert_enqueued(UKindLive, args={"n": 1}).unique_key is not None
    assert [job.args["n"] for job in all_enqueued(UKindLive)] == [1, 2]


def test_per_enqueue_unique_overrides_the_kind(env):
    by_args = env.jobs.enqueue(UKindLive(1))
    by_key = env.jobs.enqueue(UKindLive(1), unique=Unique(key="k"))
    assert by_key.inserted and by_key.id != by_args.id  # another key than the kind's
    assert env.jobs.enqueue(UKindLive(2), unique=Unique(key="k")) == Enqueued(by_key.id, False)

    # The kind keeps its key after finishing (scope "any")...
    held = env.jobs.enqueue(UKindAny(1))
    env.jobs.step()
    assert env.jobs.enqueue(UKindAny(1)) == Enqueued(held.id, False)
    # ...a live-scoped override does not keep its own key once its job finished.
    live = env.jobs.enqueue(UKindAny(2), unique=Unique())
    env.jobs.step()
    assert record(env, live.id).state == "completed"
    again = env.jobs.enqueue(UKindAny(2), unique=Unique())
    assert again.inserted and again.id != live.id
    # The scope belongs to the holder: a finished "any" holder blocks every later scope.
    assert env.jobs.enqueue(UKindAny(1), unique=Unique()) == Enqueued(held.id, False)


# -- batches and events ----------------------------------------------------------------------------


def test_enqueue_many_reports_each_job(env, anole_jobs):
    existing = anole_jobs.enqueue(UJob(1), unique=Unique())
    results = anole_jobs.enqueue_many([UJob(1), UJob(2), UJob(2), UJob(3)], unique=Unique())
    assert results[0] == Enqueued(existing.id, False)
    assert results[1].inserted and results[2] == Enqueued(results[1].id, False)
    assert results[3].inserted and results[3].id not in (existing.id, results[1].id)
    assert [job.args["n"] for job in all_enqueued(UJob)] == [1, 2, 3]


def test_enqueue_many_uses_the_kind_level_unique(env, anole_jobs):
    existing = anole_jobs.enqueue(UKindLive(5))
    results = anole_jobs.enqueue_many([UKindLive(5), UKindLive(6), UKindLive(6)])
    assert [r.inserted for r in results] == [False, True, False]
    assert results[0].id == existing.id and results[2].id == results[1].id
    assert assert_enqueued(UKindLive, args={"n": 6}).id == results[1].id


def test_duplicates_are_reported_as_enqueued_events_with_inserted_false(env):
    seen: list[Event] = []
    unsubscribe = env.jobs.service.bus.subscribe(
        lambda event: seen.append(event) if event.name == ENQUEUED else None
    )
    try:
        env.jobs.enqueue(UJob(1), unique=Unique())
        env.jobs.enqueue(UJob(1), unique=Unique())
    finally:
        unsubscribe()
    assert [(e["kind"], e["queue"], e["inserted"]) for e in seen] == [
        ("test.unique.job", "default", True),
        ("test.unique.job", "default", False),
    ]


# -- real concurrency --------------------------------------------------------------------------


@pytest.mark.parametrize("before", ["nothing", "a finished job with that key"])
def test_eight_threads_enqueuing_one_unique_job_insert_exactly_one(env, before):
    if before != "nothing":
        finished = env.jobs.enqueue(UJob(8), unique=Unique())
        env.jobs.step()
        assert record(env, finished.id).state == "completed"
    env.jobs.service  # build the service (and open the store) before the race

    results = race(8, lambda i: env.jobs.enqueue(UJob(8), unique=Unique()))

    assert sum(r.inserted for r in results) == 1
    assert len({r.id for r in results}) == 1
    assert env.jobs.counts()["default"].get("available") == 1


def test_eight_threads_enqueuing_batches_that_share_one_key(env):
    env.jobs.service

    results = race(8, lambda i: env.jobs.enqueue_many([UJob(99), UJob(i)], unique=Unique()))

    shared = [batch[0] for batch in results]
    own = [batch[1] for batch in results]
    assert sum(r.inserted for r in shared) == 1 and len({r.id for r in shared}) == 1
    assert all(r.inserted for r in own) and len({r.id for r in own}) == 8
    assert env.jobs.counts() == {"default": {"available": 9}}


def test_eight_threads_with_distinct_keys_all_insert(env):
    env.jobs.service

    results = race(8, lambda i: env.jobs.enqueue(UJob(100 + i), unique=Unique(scope="any")))

    assert all(r.inserted for r in results)
    assert len({r.id for r in results}) == 8
