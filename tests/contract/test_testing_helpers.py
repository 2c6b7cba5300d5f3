"""The test helpers and the pytest plugin's fixtures, on every store.

Each test takes `env` (which store) and then the plugin's `anole_jobs` fixture, which puts
that store in manual mode with a fresh `FakeClock` and empties it around the test.
"""

from __future__ import annotations

import inspect
from datetime import timedelta
from importlib.metadata import entry_points

import pytest

from anole_jobs.testing import (
    FakeClock,
    all_enqueued,
    assert_enqueued,
    drain,
    empty_store,
    refute_enqueued,
)
from tests.sampleapp.jobs import Orphan, Prioritized, Work


def test_the_fixtures_install_a_fake_clock_and_manual_mode(env, anole_jobs, anole_clock):
    service = anole_jobs.service
    assert inspect.unwrap(service.clock) is anole_clock and isinstance(anole_clock, FakeClock)
    assert service.settings.run == "manual"
    assert service.settings.store == env.jobs.service.settings.store
    job = anole_jobs.enqueue(Work())
    assert anole_jobs.get(job.id).created_at == anole_clock()


def test_assert_enqueued_returns_the_one_matching_job(env, anole_jobs):
    anole_jobs.enqueue(Work(tag="a"))
    wanted = anole_jobs.enqueue(Work(action="fail", tag="b"), queue="mail")
    anole_jobs.enqueue(Prioritized(name="x"))

    record = assert_enqueued(Work, args={"tag": "b"})
    assert record.id == wanted.id
    assert assert_enqueued("test.work", queue="mail").id == wanted.id
    assert assert_enqueued(Work, args=Work(action="fail", tag="b")).id == wanted.id
    assert assert_enqueued(Prioritized).args == {"name": "x"}


def test_assert_enqueued_fails_listing_what_it_saw(env, anole_jobs):
    first = anole_jobs.enqueue(Work(tag="a"))
    anole_jobs.enqueue(Work(tag="b"))

    with pytest.raises(AssertionError) as none_found:
        assert_enqueued(Work, args={"tag": "c"})
    message = str(none_found.value)
    assert "found no job" in message and "args including {'tag': 'c'}" in message
    assert f"#{first.id} test.work queue=default state=available" in message
    assert "'tag': 'b'" in message

    with pytest.raises(AssertionError, match="found 2 jobs"):
        assert_enqueued(Work)


def test_states_waiting_by_default_or_as_asked(env, anole_jobs, anole_clock):
    scheduled = anole_jobs.enqueue(Work(tag="later"), delay=60)
    done = anole_jobs.enqueue(Work(tag="now"))
    anole_jobs.step()

    assert assert_enqueued(Work).id == scheduled.id  # the completed one is not waiting
    assert assert_enqueued(Work, state="completed").id == done.id
    refute_enqueued(Work, state="dead")
    with pytest.raises(ValueError, match="unknown state 'finished'"):
        assert_enqueued(Work, state="finished")


def test_refute_enqueued(env, anole_jobs):
    refute_enqueued(Work)
    anole_jobs.enqueue(Work(tag="a"))
    refute_enqueued(Work, args={"tag": "b"})
    refute_enqueued(Work, queue="mail")
    refute_enqueued(Orphan)
    with pytest.raises(AssertionError, match="expected no job with kind 'test.work'") as info:
        refute_enqueued("test.work")
    assert "1 job(s) matching" in str(info.value)


def test_all_enqueued_oldest_first_with_filters(env, anole_jobs):
    a = anole_jobs.enqueue(Work(tag="a"))
    b = anole_jobs.enqueue(Prioritized(name="b"))
    c = anole_jobs.enqueue(Work(tag="c"), delay=30)
    assert [r.id for r in all_enqueued()] == [a.id, b.id, c.id]
    assert [r.id for r in all_enqueued(Work)] == [a.id, c.id]
    assert [r.id for r in all_enqueued(queue="mail")] == [b.id]


def test_drain_runs_retries_and_delays_by_moving_the_fake_clock(
    env, anole_jobs, anole_clock, recorder
):
    start = anole_clock()
    anole_jobs.enqueue(Work(tag="ok"))
    anole_jobs.enqueue(Work(tag="later"), delay=timedelta(hours=2))
    failing = anole_jobs.enqueue(Work(action="fail"))  # 3 attempts

    outcomes = drain()
    assert outcomes == {"completed": 2, "retried": 2, "dead": 1}
    assert outcomes["snoozed"] == 0
    assert anole_jobs.get(failing.id).state == "dead"
    assert anole_clock() >= start + timedelta(hours=2)
    assert all_enqueued() == []


def test_drain_without_advance_runs_only_what_is_due(env, anole_jobs, anole_clock):
    anole_jobs.enqueue(Work(), delay=60)
    anole_jobs.enqueue(Work())
    before = anole_clock()
    assert drain(advance=False) == {"completed": 1}
    assert anole_clock() == before
    assert len(all_enqueued()) == 1


def test_drain_gives_up_after_max_steps(env, anole_jobs):
    anole_jobs.enqueue(Work(action="snooze", seconds=10))
    with pytest.raises(AssertionError, match="still running after 5 steps") as info:
        drain(max_steps=5)
    assert "state=scheduled" in str(info.value)


def test_empty_store_deletes_every_job(env, anole_jobs):
    anole_jobs.enqueue_many([Work(tag=str(n)) for n in range(3)])
    anole_jobs.step()
    anole_jobs.enqueue(Work(), delay=10)
    assert empty_store() == 4
    assert anole_jobs.counts() == {}


def test_empty_store_resumes_paused_queues(env, anole_jobs):
    anole_jobs.pause("mail")
    empty_store()
    assert [queue.name for queue in anole_jobs.queues() if queue.paused] == []


def test_bad_arguments_say_what_to_pass(anole_jobs):
    with pytest.raises(TypeError, match="kind name .* or an args dataclass"):
        assert_enqueued(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="args must be a dict"):
        assert_enqueued(Work, args=["tag"])
    with pytest.raises(ValueError, match="max_steps must be a positive int"):
        drain(max_steps=0)


def test_the_plugin_is_registered_under_pytest11(pytestconfig):
    (entry,) = [ep for ep in entry_points(group="pytest11") if ep.name == "anole_jobs"]
    assert entry.value == "anole_jobs.testing.pytest_plugin"
    assert pytestconfig.pluginmanager.has_plugin("anole_jobs")
