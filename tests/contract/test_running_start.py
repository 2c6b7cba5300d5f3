"""A job's `attempted_at` is when its handler started, not when a worker claimed it: a job
claimed ahead may wait in its worker a moment before a slot starts it, and the run's write
records the real start (every store)."""

from __future__ import annotations

from datetime import timedelta

from anole_jobs.stores.base import Finish
from tests.contract.test_store_contract import claim_at
from tests.sampleapp.jobs import HOOKS, Work


def test_a_finish_that_names_the_handlers_start_stores_it_as_attempted_at(env):
    store = env.store
    done = env.jobs.enqueue(Work())
    back = env.jobs.enqueue(Work())
    claimed_at = env.clock()
    first, second = claim_at(store, claimed_at, limit=2)
    assert {first.record.id, second.record.id} == {done.id, back.id}
    started = claimed_at + timedelta(seconds=3, microseconds=7)
    ended = started + timedelta(seconds=1)
    by_id = {first.record.id: first, second.record.id: second}
    assert store.finish(
        [
            Finish(run=by_id[done.id].run, state="completed", at=ended, started_at=started),
            # A give-back with no start (never started): the claim's time stays.
            Finish(
                run=by_id[back.id].run,
                state="available",
                at=ended,
                scheduled_at=ended,
                give_back_attempt=True,
            ),
        ]
    ) == [True, True]
    assert env.jobs.get(done.id).attempted_at == started
    assert env.jobs.get(back.id).attempted_at == claimed_at


def test_each_job_of_a_batch_records_when_its_own_handler_started(env):
    # One step claims both jobs at once and runs them one after the other: the second starts
    # once the first has taken its five (fake) seconds.
    HOOKS["slow"] = lambda job, args: env.clock.advance(timedelta(seconds=5))
    claimed_at = env.clock()
    ids = [e.id for e in env.jobs.enqueue_many([Work(action="slow"), Work(action="slow")])]
    report = env.jobs.step()
    assert [run.outcome for run in report.runs] == ["completed", "completed"]
    starts = sorted(env.jobs.get(job_id).attempted_at for job_id in ids)
    assert starts == [claimed_at, claimed_at + timedelta(seconds=5)]
