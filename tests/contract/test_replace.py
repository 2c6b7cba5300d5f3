"""`Unique(on_conflict="replace")` on every store: the newest enqueue wins. A waiting duplicate
ends cancelled with a `Replaced` error, a running one too (its worker loses it), and the new
job is inserted holding the key; concurrent replacing enqueues leave one live job.

Driven through the public facade in manual mode; time moves only with the fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from anole_jobs import Enqueued, InvalidJob, Job, Unique, jobs, kind
from anole_jobs.core import LIVE_STATES
from anole_jobs.testing.contract import race

LATEST = Unique(key="latest", on_conflict="replace")


@kind("test.replace.render", unique=Unique(key="render", on_conflict="replace"))
@dataclass
class Render:
    n: int


@jobs.handler(Render)
def run_render(job: Job, args: Render) -> int:
    return args.n


@kind("test.replace.plain")
@dataclass
class Plain:
    n: int


@jobs.handler(Plain)
def run_plain(job: Job, args: Plain) -> None:
    return None


def _live(env):
    return [job for job in env.jobs.list(limit=100) if job.state in LIVE_STATES]


def test_a_new_enqueue_replaces_the_waiting_duplicate(env):
    first = env.jobs.enqueue(Render(1))
    second = env.jobs.enqueue(Render(2))
    assert first.inserted and second.inserted and second.id != first.id
    assert not second.duplicate
    old = env.jobs.get(first.id)
    assert old.state == "cancelled" and old.finished_at == env.clock()
    assert [error["type"] for error in old.errors] == ["Replaced"]
    assert old.errors[0]["attempt"] == 0
    assert [job.id for job in _live(env)] == [second.id]
    assert env.jobs.get(second.id).unique_key == old.unique_key
    assert env.jobs.step().outcomes() == {second.id: "completed"}
    assert env.jobs.result(second.id) == 2


def test_a_scheduled_duplicate_is_replaced_too_and_keep_stays_the_default(env):
    first = env.jobs.enqueue(Plain(1), unique=LATEST, delay=60)
    kept = env.jobs.enqueue(Plain(2), unique=Unique(key="latest"))
    assert kept == Enqueued(first.id, False) and kept.duplicate
    second = env.jobs.enqueue(Plain(3), unique=LATEST)
    assert env.jobs.get(first.id).state == "cancelled"
    assert env.jobs.get(second.id).state == "available"


def test_a_running_duplicate_is_cancelled_and_its_worker_loses_it(env):
    first = env.jobs.enqueue(Render(1))
    now = env.clock()
    (claimed,) = env.store.claim(
        "default",
        kinds=None,
        limit=1,
        now=now,
        lease_until=now + timedelta(seconds=30),
        worker="test",
    )
    assert claimed.record.id == first.id
    second = env.jobs.enqueue(Render(2))
    old = env.jobs.get(first.id)
    assert old.state == "cancelled"
    assert old.errors[-1]["type"] == "Replaced" and old.errors[-1]["attempt"] == 1
    assert env.store.heartbeat([claimed.run], lease_until=now + timedelta(seconds=60)) == set()
    assert env.jobs.get(second.id).state == "available"


def test_a_finished_holder_is_left_alone(env):
    first = env.jobs.enqueue(Render(1))
    env.jobs.step()
    second = env.jobs.enqueue(Render(2))
    assert second.inserted
    assert env.jobs.get(first.id).state == "completed"
    assert env.jobs.get(first.id).errors == ()


def test_enqueue_many_keeps_the_last(env):
    results = env.jobs.enqueue_many([Render(1), Render(2), Render(3)])
    assert all(result.inserted for result in results)
    assert [job.id for job in _live(env)] == [results[2].id]
    assert [env.jobs.get(r.id).state for r in results] == ["cancelled", "cancelled", "available"]


def test_concurrent_replacing_enqueues_leave_one_live_job(env):
    results = race(6, lambda i: env.jobs.enqueue(Render(i)))
    assert all(result.inserted for result in results)
    live = _live(env)
    assert len(live) == 1
    cancelled = [r.id for r in results if env.jobs.get(r.id).state == "cancelled"]
    assert len(cancelled) == 5


def test_replace_refuses_scope_any():
    with pytest.raises(InvalidJob, match="scope"):
        Unique(scope="any", on_conflict="replace")
    with pytest.raises(InvalidJob, match="on_conflict"):
        Unique(on_conflict="newest")  # type: ignore[arg-type]
