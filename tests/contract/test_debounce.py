"""Debounced enqueues on every store: a burst folds into one waiting job that runs `wait` after
the last enqueue (or `max_wait` after the first) with the last arguments; other keys, a job
that started and concurrent enqueues each make their own job.

Driven through the public facade in manual mode; time moves only with the fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from anole_jobs import Debounce, Enqueued, InvalidJob, Job, Unique, Workflow, jobs, kind
from anole_jobs.testing.contract import race

RAN: list[dict[str, object]] = []


@kind("test.debounce.sync", debounce=Debounce(by="account", wait=10))
@dataclass
class Sync:
    account: int
    n: int = 0


@jobs.handler(Sync)
def run_sync(job: Job, args: Sync) -> None:
    RAN.append({"id": job.id, "account": args.account, "n": args.n})


@kind("test.debounce.plain")
@dataclass
class Plain:
    account: int
    n: int = 0


@jobs.handler(Plain)
def run_plain(job: Job, args: Plain) -> None:
    RAN.append({"id": job.id, "n": args.n})


@pytest.fixture(autouse=True)
def _forget_runs():
    RAN.clear()
    yield
    RAN.clear()


def test_a_burst_folds_into_one_job_with_the_last_arguments(env):
    first = env.jobs.enqueue(Sync(account=1, n=1))
    assert first.inserted and not first.duplicate
    ids = [first.id]
    for n in range(2, 6):
        env.clock.advance(3)
        result = env.jobs.enqueue(Sync(account=1, n=n))
        assert result == Enqueued(first.id, False) and result.duplicate
        ids.append(result.id)
    job = env.jobs.get(first.id)
    assert job.state == "scheduled" and job.args == {"account": 1, "n": 5}
    # Due `wait` after the last enqueue.
    assert job.scheduled_at == env.clock() + timedelta(seconds=10)
    assert job.created_at == env.clock() - timedelta(seconds=12)
    assert env.jobs.counts() == {"default": {"scheduled": 1}}
    env.clock.advance(9)
    assert env.jobs.step().runs == []
    env.clock.advance(1)
    assert env.jobs.step().outcomes() == {first.id: "completed"}
    assert [{"id": first.id, "account": 1, "n": 5}] == RAN


def test_other_values_of_by_are_other_jobs_and_other_fields_do_not_count(env):
    a = env.jobs.enqueue(Sync(account=1, n=1))
    b = env.jobs.enqueue(Sync(account=2, n=1))
    a_again = env.jobs.enqueue(Sync(account=1, n=2))
    assert a.inserted and b.inserted and a.id != b.id
    assert a_again == Enqueued(a.id, False)


def test_an_enqueue_after_the_wait_makes_a_new_job(env):
    first = env.jobs.enqueue(Sync(account=1, n=1))
    env.clock.advance(10)  # due now: no enqueue folds into it any more
    second = env.jobs.enqueue(Sync(account=1, n=2))
    assert second.inserted and second.id != first.id
    assert env.jobs.get(first.id).args["n"] == 1
    env.jobs.step()
    assert [run["id"] for run in RAN] == [first.id]
    third = env.jobs.enqueue(Sync(account=1, n=3))  # folds into the second
    assert third == Enqueued(second.id, False)


def test_a_started_or_finished_job_lets_the_key_go(env):
    first = env.jobs.enqueue(Sync(account=1))
    env.clock.advance(10)
    assert env.jobs.step().outcomes() == {first.id: "completed"}
    again = env.jobs.enqueue(Sync(account=1, n=9))
    assert again.inserted and again.id != first.id
    # A retry of the finished job never takes the key back.
    assert env.jobs.retry(first.id).state == "available"
    folded = env.jobs.enqueue(Sync(account=1, n=10))
    assert folded == Enqueued(again.id, False)


def test_max_wait_caps_the_delay_after_the_first_enqueue(env):
    debounce = Debounce(by=("account",), wait=10, max_wait=25)
    first = env.jobs.enqueue(Plain(account=1, n=1), debounce=debounce)
    for n in range(2, 6):
        env.clock.advance(6)
        assert env.jobs.enqueue(Plain(account=1, n=n), debounce=debounce).id == first.id
    job = env.jobs.get(first.id)
    # The last enqueue came 24 s after the first: the cap, 25 s after it, wins over 34 s.
    assert job.scheduled_at == job.created_at + timedelta(seconds=25)
    assert job.args == {"account": 1, "n": 5}
    env.clock.advance(1)  # the cap has passed: a new job
    assert env.jobs.enqueue(Plain(account=1, n=6), debounce=debounce).inserted


def test_debounce_per_enqueue_and_empty_by(env):
    everyone = Debounce(wait=5)
    a = env.jobs.enqueue(Plain(account=1, n=1), debounce=everyone)
    b = env.jobs.enqueue(Plain(account=2, n=2), debounce=everyone)
    plain = env.jobs.enqueue(Plain(account=2, n=3))
    assert b == Enqueued(a.id, False) and plain.inserted
    assert env.jobs.get(a.id).args == {"account": 2, "n": 2}
    assert env.jobs.get(a.id).meta["debounce"] == {"by": {}}


def test_enqueue_many_folds_in_order(env):
    results = env.jobs.enqueue_many([Sync(account=1, n=1), Plain(account=1), Sync(account=1, n=2)])
    assert results[0].inserted and results[1].inserted
    assert results[2] == Enqueued(results[0].id, False)
    assert env.jobs.get(results[0].id).args["n"] == 2


def test_refused_combinations():
    with pytest.raises(InvalidJob, match="not both"):
        jobs.enqueue(Sync(account=1), unique=Unique())
    with pytest.raises(InvalidJob, match="delay"):
        jobs.enqueue(Sync(account=1), delay=5)
    with pytest.raises(InvalidJob, match="do not have"):
        jobs.enqueue(Plain(account=1), debounce=Debounce(by="missing", wait=1))
    with pytest.raises(InvalidJob, match="positive"):
        Debounce(wait=0)
    with pytest.raises(InvalidJob, match="at least wait"):
        Debounce(wait=10, max_wait=5)
    with pytest.raises(InvalidJob, match="workflow step"):
        Workflow("w").add(Sync(account=1))


def test_concurrent_enqueues_of_one_key_make_one_job(env):
    results = race(8, lambda i: env.jobs.enqueue(Sync(account=7, n=i)))
    ids = {result.id for result in results}
    assert len(ids) == 1
    assert sum(result.inserted for result in results) == 1
    assert env.jobs.counts() == {"default": {"scheduled": 1}}
