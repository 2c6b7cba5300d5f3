"""`jobs.why(id)` for the reasons that come from other features, on every store: a job parked
by `job.wait_for_signal` waits for its signal (until its deadline), a durable sleep is
`scheduled` until it wakes, and a job of a sequence waits for the job before it.

Driven through `jobs.step()` (manual mode) and the fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from anole_jobs import Job, kind
from tests.sampleapp.jobs import HOOKS, Work


@kind("test.why_across.sequenced", sequence="account")
@dataclass
class Sequenced:
    account: int = 0


@pytest.fixture
def sequenced_handler(env):
    """A handler for the sequenced kind for one test only: a process that handles a kind with
    a sequence claims the flow way, which the other tests should not."""
    from anole_jobs.kinds import registry

    @env.jobs.handler(Sequenced)
    def run_sequenced(job: Job, args: Sequenced) -> None:
        raise RuntimeError("keeps its sequence while it retries")

    yield
    registry.remove_handler("test.why_across.sequenced")


def test_a_job_parked_for_a_signal_waits_for_it_until_its_deadline(env):
    def handler(job, args):
        return job.wait_for_signal("paid", timeout=timedelta(hours=2))

    HOOKS["durable"] = handler
    job = env.jobs.enqueue(Work(action="durable"))
    started = env.clock()
    env.jobs.step()
    waiting = env.jobs.why(job.id)
    assert waiting is not None
    assert waiting.reason == "signal"
    assert "'paid'" in waiting.detail
    assert waiting.until == started + timedelta(hours=2)

    assert env.jobs.signal(job.id, "paid", {"amount": 3}) is True
    assert env.jobs.why(job.id).reason != "signal"  # available again: no longer parked
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    assert env.jobs.why(job.id) is None


def test_a_durable_sleep_is_scheduled_until_it_wakes(env):
    def handler(job, args):
        job.sleep_for("nap", timedelta(minutes=30))

    HOOKS["durable"] = handler
    job = env.jobs.enqueue(Work(action="durable"))
    started = env.clock()
    env.jobs.step()
    waiting = env.jobs.why(job.id)
    assert waiting is not None
    assert waiting.reason == "scheduled"
    assert waiting.until == started + timedelta(minutes=30)


def test_a_job_of_a_sequence_waits_for_the_one_before_it(env, sequenced_handler):
    first = env.jobs.enqueue(Sequenced(account=7))
    second = env.jobs.enqueue(Sequenced(account=7))
    other = env.jobs.enqueue(Sequenced(account=8))
    assert env.jobs.step().outcomes() == {first.id: "retried", other.id: "retried"}

    waiting = env.jobs.why(second.id)
    assert waiting is not None
    assert waiting.reason == "sequence"
    assert str(first.id) in waiting.detail
    assert env.jobs.why(first.id).reason == "retry_backoff"  # it holds the sequence meanwhile

    env.jobs.cancel(first.id)  # a cancelled job lets its sequence go
    assert env.jobs.why(second.id).reason != "sequence"
