"""Durable execution on every store (docs/durable.md): memoised steps, durable sleeps and
signals, driven through `jobs.step()` (manual mode) and the fake clock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from anole_jobs import JobNotFound, SignalTimeout, jobs, kind
from anole_jobs.errors import Canceled
from tests.sampleapp.jobs import HOOKS, Work


@kind("test.durable_async")
@dataclass
class DurableAsync:
    tag: str = ""


ASYNC_CALLS: list[str] = []


@jobs.handler(DurableAsync)
async def durable_async(job, args):
    async def fetch(n):
        await asyncio.sleep(0)
        ASYNC_CALLS.append("fetch")
        return {"n": n}

    value = await job.astep("fetch", fetch, 7)
    plain = await job.astep("plain", lambda: ASYNC_CALLS.append("plain") or "p")
    if job.attempt == 1:
        raise RuntimeError("after the steps")
    return [value, plain]


@kind("test.durable_async_wait")
@dataclass
class DurableAsyncWait:
    atomic: bool = False


@jobs.handler(DurableAsyncWait)
async def durable_async_wait(job, args):
    job.sleep_for("nap", timedelta(hours=1))
    payload = job.wait_for_signal("go", timeout=timedelta(hours=2))
    if args.atomic:

        async def write():
            # Django's ORM from async code goes through sync_to_async, which runs it in the
            # thread holding the step's transaction.
            enqueued = await sync_to_async(jobs.enqueue)(Work(tag="from-async-atomic"))
            return enqueued.id

        await job.astep("write", write, atomic=True)
    return payload


def run(env, handler, **args):
    HOOKS["durable"] = handler
    return env.jobs.enqueue(Work(action="durable", **args))


def step_again(env, hours=1):
    env.clock.advance(timedelta(hours=hours))
    return env.jobs.step().outcomes()


# -- steps ---------------------------------------------------------------------------------
def test_a_step_runs_once_across_attempts(env):
    calls = []

    def handler(job, args):
        value = job.step("charge", lambda: calls.append(1) or {"charged": len(calls)})
        assert value == {"charged": 1}
        if job.attempt == 1:
            raise RuntimeError("crash after the step")

    job = run(env, handler)
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    assert step_again(env) == {job.id: "completed"}
    assert calls == [1]
    steps = env.jobs.get(job.id).steps
    assert list(steps) == ["charge"]
    assert steps["charge"]["result"] == {"charged": 1}


def test_steps_keep_their_order_and_time_and_args_reach_fn(env):
    at = env.clock()

    def handler(job, args):
        for name in ("zeta", "alpha", "mid", "b", "a"):
            job.step(name, lambda x, *, y: [x, y], name, y=len(name))

    job = run(env, handler)
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    steps = env.jobs.get(job.id).steps
    assert list(steps) == ["zeta", "alpha", "mid", "b", "a"]
    assert steps["alpha"] == {"result": ["alpha", 5], "at": at}
    assert env.jobs.list()[0].steps == steps


def test_a_raising_step_records_nothing_and_runs_again(env):
    calls = []

    def handler(job, args):
        def flaky():
            calls.append(job.attempt)
            if job.attempt == 1:
                raise ValueError("first time")
            return "ok"

        assert job.step("flaky", flaky) == "ok"

    job = run(env, handler)
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    assert env.jobs.get(job.id).steps == {}
    assert step_again(env) == {job.id: "completed"}
    assert calls == [1, 2]


def test_none_is_recorded_and_memoised(env):
    calls = []

    def handler(job, args):
        assert job.step("nothing", lambda: calls.append(1)) is None
        if job.attempt == 1:
            raise RuntimeError("again")

    job = run(env, handler)
    env.jobs.step()
    step_again(env)
    assert calls == [1]
    assert env.jobs.get(job.id).steps["nothing"]["result"] is None


def test_a_value_that_is_not_json_fails_the_attempt_with_type_error(env):
    job = run(env, lambda job, args: job.step("bad", lambda: {1, 2}))
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    record = env.jobs.get(job.id)
    assert record.errors[-1]["type"] == "TypeError"
    assert record.steps == {}


def test_a_value_over_max_result_bytes_fails_with_result_too_large(env):
    env.configure(MAX_RESULT_BYTES=50)
    job = run(env, lambda job, args: job.step("big", lambda: "x" * 100))
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    record = env.jobs.get(job.id)
    assert record.errors[-1]["type"] == "ResultTooLarge"
    assert record.steps == {}


@pytest.mark.parametrize("name", ["", "x" * 201, 5, None])
def test_a_bad_step_name_is_refused_before_fn_runs(env, name):
    calls = []
    seen = []

    def handler(job, args):
        with pytest.raises(ValueError):
            job.step(name, lambda: calls.append(1))
        with pytest.raises(ValueError):
            job.sleep_for(name, 10)
        seen.append(job.step("x" * 200, lambda: "longest name is fine"))

    run(env, handler)
    env.jobs.step()
    assert calls == []
    assert seen == ["longest name is fine"]


def test_retry_keeps_the_steps(env):
    calls = []

    def handler(job, args):
        job.step("once", lambda: calls.append(1) or 1)

    job = run(env, handler)
    env.jobs.step()
    assert env.jobs.get(job.id).state == "completed"
    assert list(env.jobs.retry(job.id).steps) == ["once"]
    env.jobs.step()
    assert env.jobs.get(job.id).state == "completed"
    assert calls == [1]
    assert list(env.jobs.get(job.id).steps) == ["once"]


def test_a_stale_run_records_no_step(env):
    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = env.store.claim(
        "default", kinds=None, limit=1, now=now, lease_until=now + timedelta(seconds=30), worker="w"
    )
    assert env.store.record_step(claimed.run, name="a", value="1", at=now) is True
    env.jobs.retry(job.id)  # an admin retry: the claim above is stale now
    assert env.store.record_step(claimed.run, name="b", value="2", at=now) is False
    assert env.store.await_signal(claimed.run, name="s", deadline=now) is False
    assert list(env.jobs.get(job.id).steps) == ["a"]


def test_atomic_needs_the_database_store(env):
    calls = []

    def handler(job, args):
        if env.alias is None:
            with pytest.raises(ValueError, match="database"):
                job.step("a", lambda: calls.append(1), atomic=True)
        else:
            job.step("a", lambda: calls.append(1), atomic=True)

    job = run(env, handler)
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    assert calls == ([] if env.alias is None else [1])


def test_an_atomic_step_commits_its_writes_with_its_record_or_neither(env):
    env.require("supports_transactions")

    def handler(job, args):
        def write_then_maybe_fail():
            env.jobs.enqueue(Work(tag=f"written-{job.attempt}"))
            if job.attempt == 1:
                raise RuntimeError("rolled back with the step")
            return "done"

        job.step("write", write_then_maybe_fail, atomic=True)

    job = run(env, handler)
    outcomes = env.jobs.step().outcomes()
    assert outcomes[job.id] == "retried"
    tags = {r.args.get("tag") for r in env.jobs.list(kind="test.work")}
    assert "written-1" not in tags
    env.clock.advance(timedelta(hours=1))
    env.jobs.step()
    assert env.jobs.get(job.id).state == "completed"
    tags = [r.args.get("tag") for r in env.jobs.list(kind="test.work")]
    assert tags.count("written-2") == 1
    assert env.jobs.get(job.id).steps["write"]["result"] == "done"


def test_an_atomic_step_of_a_stale_run_rolls_back(env):
    env.require("supports_transactions")
    from anole_jobs.worker.cancel import CancelScope
    from anole_jobs.worker.durable import DurableRun

    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = env.store.claim(
        "default", kinds=None, limit=1, now=now, lease_until=now + timedelta(seconds=30), worker="w"
    )
    env.jobs.retry(job.id)  # the run is stale
    durable = DurableRun(env.jobs.service, claimed, CancelScope(waits=False), lambda: now)
    with pytest.raises(Canceled):
        durable.step("w", lambda: env.jobs.enqueue(Work(tag="stale")), (), {}, atomic=True)
    assert all(r.args.get("tag") != "stale" for r in env.jobs.list())


def test_astep_awaits_an_async_fn_and_is_memoised(env):
    ASYNC_CALLS.clear()
    job = env.jobs.enqueue(DurableAsync())
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    assert step_again(env) == {job.id: "completed"}
    assert ASYNC_CALLS == ["fetch", "plain"]
    record = env.jobs.get(job.id)
    assert record.result == [{"n": 7}, "p"]
    assert list(record.steps) == ["fetch", "plain"]


# -- sleeps --------------------------------------------------------------------------------
def test_sleep_for_parks_the_job_without_an_attempt_and_wakes_it_later(env):
    seen = []
    start = env.clock()

    def handler(job, args):
        seen.append(("before", job.attempt))
        job.sleep_for("nap", timedelta(days=2))
        seen.append(("after", job.attempt))

    job = run(env, handler)
    assert env.jobs.step().outcomes() == {job.id: "snoozed"}
    record = env.jobs.get(job.id)
    assert record.state == "scheduled"
    assert record.scheduled_at == start + timedelta(days=2)
    assert record.attempt == 0
    assert list(record.steps) == ["nap"]
    assert step_again(env, hours=47) == {}
    assert step_again(env, hours=2) == {job.id: "completed"}
    assert seen == [("before", 1), ("before", 1), ("after", 1)]
    assert env.jobs.get(job.id).attempt == 1


def test_a_sleep_woken_early_parks_again_to_the_same_time(env):
    start = env.clock()
    when = start + timedelta(hours=5)
    job = run(env, lambda job, args: job.sleep_until("until", when))
    env.jobs.step()
    env.clock.advance(timedelta(hours=1))
    env.jobs.retry(job.id)
    assert env.jobs.step().outcomes() == {job.id: "snoozed"}
    record = env.jobs.get(job.id)
    assert (record.state, record.scheduled_at) == ("scheduled", when)
    assert step_again(env, hours=5) == {job.id: "completed"}


def test_sleeps_and_steps_share_one_namespace(env):
    def handler(job, args):
        job.step("same", lambda: 1)
        with pytest.raises(ValueError, match="namespace"):
            job.sleep_for("same", 10)

    job = run(env, handler)
    assert env.jobs.step().outcomes() == {job.id: "completed"}


# -- signals -------------------------------------------------------------------------------
def test_signal_answers_stored_duplicate_finished_and_unknown(env):
    job = env.jobs.enqueue(Work())
    assert env.jobs.signal(job.id, "paid", {"amount": 5}) is True
    assert env.jobs.signal(job.id, "paid", {"amount": 6}) is False
    assert env.jobs.signal(job.id, "other") is True
    env.jobs.step()
    assert env.jobs.get(job.id).state == "completed"
    assert env.jobs.signal(job.id, "late") is False
    with pytest.raises(JobNotFound):
        env.jobs.signal(10**9, "paid")
    with pytest.raises(LookupError):
        env.jobs.signal(10**9, "paid")
    with pytest.raises(ValueError):
        env.jobs.signal(job.id, "")
    with pytest.raises(TypeError):
        env.jobs.signal(job.id, "x", {1, 2})


def test_asignal_is_async(env):
    import inspect

    assert inspect.iscoroutinefunction(jobs.asignal)
    job = env.jobs.enqueue(Work())

    async def send():
        try:
            return await env.jobs.asignal(job.id, "s", 1)
        finally:  # the connection asgiref's thread opened
            await sync_to_async(connections.close_all)()

    assert asyncio.run(send()) is True
    assert env.store.durable_state(job.id).signals == {"s": 1}


def test_wait_for_signal_parks_until_the_signal_wakes_the_job_in_the_same_write(env):
    got = []
    start = env.clock()

    def handler(job, args):
        got.append(job.wait_for_signal("paid", timeout=timedelta(days=3)))

    job = run(env, handler)
    assert env.jobs.step().outcomes() == {job.id: "snoozed"}
    record = env.jobs.get(job.id)
    assert (record.state, record.scheduled_at, record.attempt) == (
        "scheduled",
        start + timedelta(days=3),
        0,
    )
    assert env.jobs.signal(job.id, "other", 1) is True
    assert env.jobs.get(job.id).state == "scheduled"  # not the name awaited
    env.clock.advance(timedelta(minutes=1))
    assert env.jobs.signal(job.id, "paid", {"id": "ch_1"}) is True
    record = env.jobs.get(job.id)
    assert (record.state, record.scheduled_at) == ("available", env.clock())
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    assert got == [{"id": "ch_1"}]
    assert env.jobs.get(job.id).attempt == 1


def test_a_signal_stored_first_is_returned_at_once(env):
    got = []
    job = run(env, lambda job, args: got.append(job.wait_for_signal("go", timedelta(hours=1))))
    env.jobs.signal(job.id, "go", None)
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    assert got == [None]


def test_a_signal_to_a_running_job_is_seen_by_a_later_wait(env):
    got = []

    def handler(job, args):
        assert env.jobs.signal(job.id, "mid", [1]) is True
        got.append(job.wait_for_signal("mid", timeout=60))

    job = run(env, handler)
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    assert got == [[1]]


def test_the_deadline_passes_and_the_rerun_raises_signal_timeout(env):
    seen = []

    def handler(job, args):
        try:
            job.wait_for_signal("paid", timeout=timedelta(hours=1))
        except SignalTimeout as exc:
            seen.append(isinstance(exc, TimeoutError))
            raise

    job = run(env, handler)
    env.jobs.step()
    env.clock.advance(timedelta(minutes=30))
    env.jobs.retry(job.id)  # woken early: it parks again, to the same deadline
    assert env.jobs.step().outcomes() == {job.id: "snoozed"}
    assert env.jobs.get(job.id).scheduled_at == env.clock() + timedelta(minutes=30)
    assert step_again(env, hours=1) == {job.id: "retried"}
    record = env.jobs.get(job.id)
    assert record.errors[-1]["type"] == "SignalTimeout"
    assert seen == [True]


def test_a_signal_between_the_wait_and_the_park_still_wakes_the_job(env):
    from anole_jobs.stores.base import Finish

    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = env.store.claim(
        "default", kinds=None, limit=1, now=now, lease_until=now + timedelta(seconds=30), worker="w"
    )
    deadline = now + timedelta(hours=1)
    assert env.store.await_signal(claimed.run, name="s", deadline=deadline) is True
    assert env.jobs.signal(job.id, "s", 1) is True  # running: stored, not woken
    assert env.jobs.get(job.id).state == "running"
    parked = Finish(
        run=claimed.run, state="scheduled", at=now, scheduled_at=deadline, give_back_attempt=True
    )
    assert env.store.finish([parked]) == [True]
    assert env.store.durable_state(job.id).awaiting == "s"
    assert env.store.wake_signalled(job.id, now=now) is True
    assert env.jobs.get(job.id).state == "available"
    assert env.store.wake_signalled(job.id, now=now) is False


def test_counts_follow_a_signal_wake_up(env):
    job = run(env, lambda job, args: job.wait_for_signal("s", timeout=60))
    env.jobs.step()
    assert env.jobs.service.store.counts()["default"] == {"scheduled": 1}
    env.jobs.signal(job.id, "s")
    assert env.jobs.service.store.counts()["default"] == {"available": 1}


def test_async_handlers_sleep_and_wait_for_signals(env):
    atomic = env.alias is not None
    job = env.jobs.enqueue(DurableAsyncWait(atomic=atomic))
    assert env.jobs.step().outcomes() == {job.id: "snoozed"}
    assert step_again(env, hours=1) == {job.id: "snoozed"}
    assert env.jobs.get(job.id).state == "scheduled"
    assert env.jobs.signal(job.id, "go", "now") is True
    assert env.jobs.step().outcomes() == {job.id: "completed"}, env.jobs.get(job.id).errors
    record = env.jobs.get(job.id)
    assert (record.result, record.attempt) == ("now", 1)
    written = [
        r for r in env.jobs.list(kind="test.work") if r.args.get("tag") == "from-async-atomic"
    ]
    assert len(written) == (1 if atomic else 0)


def test_a_signal_payload_no_store_can_keep_is_refused_before_the_store(env):
    """A NUL character (PostgreSQL's jsonb has none) or a value that is not JSON is refused
    with a clear TypeError, and the job keeps no signal."""

    def handler(job, args):
        return job.wait_for_signal("paid", timeout=timedelta(hours=1))

    job = run(env, handler)
    env.jobs.step()
    with pytest.raises(TypeError, match="NUL"):
        env.jobs.signal(job.id, "paid", {"note": "a\x00b"})
    with pytest.raises(TypeError, match="JSON"):
        env.jobs.signal(job.id, "paid", {1, 2})
    assert env.jobs.signal(job.id, "paid", {"note": "ok"}) is True
