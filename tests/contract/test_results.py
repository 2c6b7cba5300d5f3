"""Results, on every store: a handler's JSON return value is stored by the write that
completes its job (docs/results.md); `jobs.result` / `jobs.aresult` return it, raise for jobs
that ended otherwise, are unknown or not finished, and wait — woken by the store's own
finished wake-ups, not by their fallback poll.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest

from anole_jobs import JobFailed, JobNotFinished, ResultTooLarge, events
from anole_jobs.stores import open_store
from anole_jobs.stores.base import Finish
from tests.sampleapp.jobs import HOOKS
from tests.sampleapp.result_jobs import AsyncReturns, Returns

#: A bound on a thread that should finish at once; never reached when the code works.
PROMPTLY = 30.0


@dataclass
class Point:
    x: int
    label: str
    tags: tuple[str, ...] = ()


@dataclass
class Shape:
    points: list[Point]


def returning(env: Any, value: Any) -> int:
    """Enqueue a job whose handler returns `value`; its id."""
    HOOKS["value"] = lambda job, args: value
    return env.jobs.enqueue(Returns(hook="value")).id


def store_calls(env: Any) -> tuple[list[str], Any]:
    methods: list[str] = []

    def listen(event: events.Event) -> None:
        methods.append(event.fields["method"])

    return methods, env.jobs.service.bus.subscribe(listen, events.STORE_CALL)


# -- what is stored ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [
        {"rows": 3, "ok": True, "nested": {"a": [1, 2.5, None, "é"]}},
        [1, "two", {"three": 3}],
        "a string",
        42,
        0.5,
        False,
        {},
        [],
    ],
)
def test_a_completed_job_keeps_its_handlers_json_return_value(env, value):
    job_id = env.jobs.enqueue(Returns(value=json.dumps(value))).id
    assert env.jobs.get(job_id).result is None  # nothing before completion
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    record = env.jobs.get(job_id)
    assert record.result == value
    assert env.jobs.result(job_id) == value
    (listed,) = [r for r in env.jobs.list(state="completed") if r.id == job_id]
    assert listed.result == value


def test_tuples_and_dataclasses_are_stored_as_their_json(env):
    shape = Shape(points=[Point(1, "a", ("x", "y")), Point(2, "b")])
    job_id = returning(env, {"shape": shape, "pair": (1, 2), 7: "int key"})
    env.jobs.step()
    assert env.jobs.result(job_id) == {
        "shape": {
            "points": [
                {"x": 1, "label": "a", "tags": ["x", "y"]},
                {"x": 2, "label": "b", "tags": []},
            ]
        },
        "pair": [1, 2],
        "7": "int key",
    }


def test_an_async_handlers_return_value_is_stored_too(env):
    job_id = env.jobs.enqueue(AsyncReturns(value='{"async": true}')).id
    env.jobs.step()
    assert env.jobs.result(job_id) == {"async": True}


def test_none_stores_nothing(env):
    job_id = env.jobs.enqueue(Returns(value="null")).id
    env.jobs.step()
    record = env.jobs.get(job_id)
    assert (record.state, record.result) == ("completed", None)
    assert env.jobs.result(job_id) is None
    if env.alias is None and env.store.name == "redis":
        assert env.store.client.hget(env.store.keys.job(job_id), "result") is None
    elif env.alias is not None:
        from django.db import connections

        with connections[env.alias].cursor() as cursor:
            cursor.execute(f"SELECT result FROM {env.store.job_table} WHERE id = %s", [job_id])
            assert cursor.fetchone() == (None,)  # SQL NULL, not JSON null


def test_the_result_is_written_by_the_completing_write_alone(env):
    job_id = env.jobs.enqueue(Returns(value='{"one": "write"}')).id
    methods, unsubscribe = store_calls(env)
    try:
        env.jobs.step()
    finally:
        unsubscribe()
    assert methods.count("finish") == 1
    assert "update_meta" not in methods
    assert env.jobs.result(job_id) == {"one": "write"}


def test_the_stores_finish_keeps_a_result_only_with_a_completion(env):
    first = env.jobs.enqueue(Returns()).id
    second = env.jobs.enqueue(Returns()).id
    now = env.clock()
    claimed = env.store.claim(
        "default", kinds=None, limit=2, now=now, lease_until=now + timedelta(seconds=30), worker="w"
    )
    by_id = {c.record.id: c.run for c in claimed}
    written = env.store.finish(
        [
            Finish(run=by_id[first], state="completed", at=now, result='{"kept":1}'),
            Finish(run=by_id[second], state="retrying", at=now, scheduled_at=now, result='"no"'),
        ]
    )
    assert written == [True, True]
    assert env.jobs.get(first).result == {"kept": 1}
    assert env.jobs.get(second).result is None


# -- what fails the attempt -------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        {"when": object()},
        math.nan,
        {"inf": math.inf},
        "NUL \x00 inside",
        "lone \ud800 surrogate",
        {(1, 2): "tuple key"},
    ],
    ids=["set", "object", "nan", "inf", "nul", "surrogate", "tuple-key"],
)
def test_a_value_that_is_not_json_fails_the_attempt_with_type_error(env, value):
    job_id = returning(env, value)
    assert env.jobs.step().outcomes() == {job_id: "retried"}
    record = env.jobs.get(job_id)
    assert record.state == "retrying" and record.result is None
    error = record.errors[-1]
    assert error["type"] == "TypeError"
    assert "test.returns" in error["message"]
    env.clock.advance(timedelta(hours=1))
    assert env.jobs.step().outcomes() == {job_id: "dead"}  # attempts=2: retried per backoff
    with pytest.raises(JobFailed) as failed:
        env.jobs.result(job_id)
    assert failed.value.record.state == "dead"
    assert [e["type"] for e in failed.value.record.errors] == ["TypeError", "TypeError"]


def test_a_value_over_max_result_bytes_fails_the_attempt_with_result_too_large(env):
    env.configure(MAX_RESULT_BYTES=100)
    job_id = returning(env, {"text": "x" * 100})
    assert env.jobs.step().outcomes() == {job_id: "retried"}
    error = env.jobs.get(job_id).errors[-1]
    assert error["type"] == "ResultTooLarge"
    assert "MAX_RESULT_BYTES" in error["message"] and "111 bytes" in error["message"]
    fits = returning(env, "é" * 48)  # 96 bytes of UTF-8 + 2 quotes: exactly at the limit
    env.jobs.step()
    assert env.jobs.result(fits) == "é" * 48
    assert issubclass(ResultTooLarge, Exception)


# -- jobs.result ------------------------------------------------------------------------------
def test_result_of_an_unknown_job_is_a_lookup_error(env):
    with pytest.raises(LookupError, match="no job with id 987654"):
        env.jobs.result(987654)
    with pytest.raises(LookupError):
        env.jobs.result(987654, timeout=5)  # no wait for a job that does not exist


def test_result_of_a_job_not_finished_raises_at_once_without_a_timeout(env):
    job_id = env.jobs.enqueue(Returns(value="1")).id
    with pytest.raises(JobNotFinished) as raised:
        env.jobs.result(job_id)
    assert isinstance(raised.value, TimeoutError)
    assert raised.value.record.id == job_id and raised.value.record.state == "available"
    assert "timeout" in str(raised.value)


def test_result_with_a_timeout_waits_that_long_then_raises(env):
    job_id = env.jobs.enqueue(Returns(value="1"), delay=60).id
    with pytest.raises(JobNotFinished) as raised:
        env.jobs.result(job_id, timeout=timedelta(milliseconds=150))
    assert raised.value.record.state == "scheduled"
    with pytest.raises(JobNotFinished):
        env.jobs.result(job_id, timeout=0)


def test_result_of_a_finished_job_needs_no_wait(env):
    job_id = env.jobs.enqueue(Returns(value='"done"')).id
    env.jobs.step()
    assert env.jobs.result(job_id, timeout=60) == "done"


def test_result_of_a_cancelled_or_discarded_job_is_job_failed(env):
    cancelled = env.jobs.enqueue(Returns(value="1")).id
    env.jobs.cancel(cancelled)
    with pytest.raises(JobFailed) as raised:
        env.jobs.result(cancelled, timeout=5)
    assert raised.value.record.state == "cancelled"
    HOOKS["discard"] = lambda job, args: job.discard("no use")
    discarded = env.jobs.enqueue(Returns(hook="discard")).id
    env.jobs.step()
    with pytest.raises(JobFailed, match="Discarded: no use") as raised:
        env.jobs.result(discarded)
    assert raised.value.record.state == "dead"


def test_a_retried_job_drops_its_old_result(env):
    job_id = env.jobs.enqueue(Returns(value='"first"')).id
    env.jobs.step()
    assert env.jobs.result(job_id) == "first"
    record = env.jobs.retry(job_id)
    assert (record.state, record.result) == ("available", None)
    with pytest.raises(JobNotFinished):
        env.jobs.result(job_id)
    env.jobs.step()
    assert env.jobs.result(job_id) == "first"


def test_bad_arguments_are_refused(env):
    with pytest.raises(ValueError, match="job id"):
        env.jobs.result("12")
    job_id = env.jobs.enqueue(Returns()).id
    with pytest.raises(ValueError, match="timeout"):
        env.jobs.result(job_id, timeout=-1)


def test_aresult_is_the_async_twin(env):
    done = env.jobs.enqueue(Returns(value='{"a": 1}')).id
    waiting = env.jobs.enqueue(Returns(value="2"), delay=60).id
    env.jobs.step()

    async def main() -> tuple[Any, Any]:
        value = await env.jobs.aresult(done)
        try:
            await env.jobs.aresult(waiting, timeout=0.1)
        except JobNotFinished as exc:
            return value, exc.record.state
        return value, None

    assert asyncio.run(main()) == ({"a": 1}, "scheduled")


# -- waiting is woken by the store --------------------------------------------------------------
def wait_in_thread(
    env: Any, job_id: int, timeout: float
) -> tuple[threading.Thread, dict[str, Any]]:
    """`jobs.result(job_id, timeout)` in a thread, started once it waits; its outcome."""
    outcome: dict[str, Any] = {}
    # The fallback poll far longer than the test may take: only a wake-up can end the wait.
    env.jobs.service.store.finished_poll = 600.0

    def wait() -> None:
        try:
            outcome["value"] = env.jobs.result(job_id, timeout=timeout)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            outcome["error"] = exc
        finally:
            if env.alias is not None:
                from django.db import connections

                connections[env.alias].close()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    assert env.store.finished_wakeups.wait_for_subscribers(PROMPTLY)
    return thread, outcome


def test_a_waiter_is_woken_by_a_finish_in_another_thread(env):
    job_id = env.jobs.enqueue(Returns(value='{"woken": true}')).id
    thread, outcome = wait_in_thread(env, job_id, timeout=600)
    env.jobs.step()  # claims, runs and finishes the job in this thread
    thread.join(PROMPTLY)
    assert not thread.is_alive(), "the waiter was not woken by the finish"
    assert outcome == {"value": {"woken": True}}
    assert not env.store.finished_wakeups.has_subscribers()  # it unsubscribed


def test_a_waiter_is_woken_by_a_cancel(env):
    job_id = env.jobs.enqueue(Returns(value="1"), delay=60).id
    thread, outcome = wait_in_thread(env, job_id, timeout=600)
    env.jobs.cancel(job_id)
    thread.join(PROMPTLY)
    assert not thread.is_alive(), "the waiter was not woken by the cancel"
    assert isinstance(outcome["error"], JobFailed)


def test_a_waiter_is_woken_by_another_processes_finish(env):
    env.require("supports_cross_process_wakeups")
    job_id = env.jobs.enqueue(Returns(value="1")).id
    # Another process's store: same data, its own in-process hub (only NOTIFY / PUBLISH
    # reaches this one's waiters).
    other = open_store(env.jobs.service.settings)
    try:
        now = env.clock()
        (claimed,) = other.claim(
            "default",
            kinds=None,
            limit=1,
            now=now,
            lease_until=now + timedelta(seconds=60),
            worker="o",
        )
        thread, outcome = wait_in_thread(env, job_id, timeout=600)
        assert other.finish(
            [Finish(run=claimed.run, state="completed", at=now, result='"far"')]
        ) == [True]
        thread.join(PROMPTLY)
        assert not thread.is_alive(), "the waiter was not woken by the other process's finish"
        assert outcome == {"value": "far"}
    finally:
        other.close()
