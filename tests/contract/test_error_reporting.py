"""`ERROR_REPORTER` (docs/observability.md#error-reporting) through `jobs.step()`, on every
store: called once per failed attempt (an error, a timeout, a discard, a retry that leaves no
attempt) with the exception and the job's context, never for a run that completed, snoozed,
was cancelled or asked for its own retry; a reporter that raises breaks nothing and leaves
one log line; sync and async handlers alike.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from anole_jobs import jobs
from anole_jobs.errors import Discard
from anole_jobs.reporting import FailureContext, TimedOut
from tests.sampleapp.e2e_jobs import WaitAsyncQuickTimeout, WaitQuickTimeout
from tests.sampleapp.jobs import HOOKS, AsyncWork, Work
from tests.sampleapp.result_jobs import Returns
from tests.support.rows import insert_undecodable


@dataclass
class Reports:
    """A fake reporter: every call, in order. Thread-safe (the runtime calls it from slots)."""

    calls: list[tuple[BaseException, FailureContext]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, error: BaseException, context: FailureContext) -> None:
        with self.lock:
            self.calls.append((error, context))

    def contexts(self) -> list[FailureContext]:
        return [context for _, context in self.calls]


#: Calls of `module_reporter`, the reporter named by a dotted path.
MODULE_CALLS: list[tuple[BaseException, FailureContext]] = []


def module_reporter(error: BaseException, context: FailureContext) -> None:
    MODULE_CALLS.append((error, context))


@pytest.fixture
def reports(env: Any) -> Reports:
    reporter = Reports()
    env.configure(ERROR_REPORTER=reporter)
    return reporter


def hook(func: Any) -> str:
    name = f"report-hook-{len(HOOKS)}"
    HOOKS[name] = func
    return name


def json_bytes(args: dict[str, Any]) -> int:
    return len(json.dumps(args, separators=(",", ":"), ensure_ascii=False).encode())


def run_due(env: Any) -> dict[int, str]:
    """One step; then the clock moves past any backoff so retries are due at the next."""
    outcomes = env.jobs.step().outcomes()
    env.clock.advance(timedelta(days=1))
    return outcomes


# -- what is reported ----------------------------------------------------------------------------
def test_each_failed_attempt_is_reported_once_with_its_context(env: Any, reports: Reports) -> None:
    seen: list[str | None] = []

    def fail(job: Any, args: Any) -> None:
        seen.append(job.trace_id)
        raise ValueError(f"boom on attempt {job.attempt}")

    args = Work(action=hook(fail), tag="façade")  # a non-ASCII letter: two bytes in UTF-8
    job_id = env.jobs.enqueue(args).id
    record = env.jobs.get(job_id)

    assert [run_due(env) for _ in range(3)] == [
        {job_id: "retried"},
        {job_id: "retried"},
        {job_id: "dead"},
    ]

    assert [type(error) for error, _ in reports.calls] == [ValueError] * 3
    # Its traceback starts at the handler: the runtime's frames (whose locals hold the
    # arguments) are left out.
    assert {e.__traceback__.tb_frame.f_code.co_name for e, _ in reports.calls} == {"work"}  # type: ignore[union-attr]
    assert [str(error) for error, _ in reports.calls] == [f"boom on attempt {n}" for n in (1, 2, 3)]
    first, second, last = reports.contexts()
    assert (first.job_id, first.kind, first.queue) == (job_id, "test.work", "default")
    assert [c.attempt for c in reports.contexts()] == [1, 2, 3]
    assert {c.max_attempts for c in reports.contexts()} == {3}
    text = json.dumps(record.args, separators=(",", ":"), ensure_ascii=False)
    assert first.args_bytes == json_bytes(record.args) == len(text) + 1  # "ç" is two bytes
    assert [c.trace_id for c in reports.contexts()] == seen
    assert [c.outcome for c in reports.contexts()] == ["retried", "retried", "dead"]
    assert [c.will_retry for c in reports.contexts()] == [True, True, False]
    assert [c.dead for c in reports.contexts()] == [False, False, True]
    assert {c.error_type for c in reports.contexts()} == {"ValueError"}
    # A retry says when it runs again: what the store holds.
    assert first.next_run_at is not None and first.next_run_at > first_run_at(env, job_id)
    assert last.next_run_at is None
    # Never the arguments themselves.
    assert "façade" not in json.dumps(first.as_dict())
    assert set(first.as_dict()) == {
        "job_id",
        "kind",
        "queue",
        "attempt",
        "max_attempts",
        "args_bytes",
        "trace_id",
        "outcome",
        "will_retry",
        "error_type",
        "next_run_at",
    }
    assert second.as_dict()["next_run_at"] == second.next_run_at.isoformat()  # type: ignore[union-attr]


def first_run_at(env: Any, job_id: int) -> Any:
    return env.jobs.get(job_id).created_at


def test_an_async_handlers_failure_is_reported(env: Any, reports: Reports) -> None:
    job_id = env.jobs.enqueue(AsyncWork(fail=True)).id

    assert env.jobs.step().outcomes() == {job_id: "retried"}

    ((error, context),) = reports.calls
    assert type(error) is ValueError and str(error) == "async failure"
    assert (context.job_id, context.kind, context.attempt) == (job_id, "test.async", 1)
    assert error.__traceback__ is not None  # Sentry and peers show where it was raised


def test_a_result_that_cannot_be_stored_is_reported_like_an_error(
    env: Any, reports: Reports
) -> None:
    # The handler returned, but its value is not JSON: the attempt failed, so it is reported.
    env.configure(MAX_RESULT_BYTES=32, ERROR_REPORTER=reports)
    not_json = env.jobs.enqueue(Returns(hook=hook(lambda job, args: {1, 2}))).id
    too_large = env.jobs.enqueue(Returns(value=json.dumps("x" * 64))).id

    assert env.jobs.step().outcomes() == {not_json: "retried", too_large: "retried"}

    reported = {context.job_id: type(error).__name__ for error, context in reports.calls}
    assert reported == {not_json: "TypeError", too_large: "ResultTooLarge"}
    stored = {job_id: env.jobs.get(job_id).errors[-1]["type"] for job_id in reported}
    assert stored == reported


def test_a_timeout_is_reported_as_timed_out_for_sync_and_async_handlers(
    env: Any, reports: Reports
) -> None:
    sync_id = env.jobs.enqueue(WaitQuickTimeout(how="sleep", seconds=30)).id
    async_id = env.jobs.enqueue(WaitAsyncQuickTimeout(seconds=30)).id

    assert env.jobs.step().outcomes() == {sync_id: "dead", async_id: "dead"}

    by_id = {context.job_id: (error, context) for error, context in reports.calls}
    assert len(reports.calls) == 2 and set(by_id) == {sync_id, async_id}
    for error, context in by_id.values():
        assert isinstance(error, TimedOut)
        assert str(error) == "the run exceeded its timeout of 0:00:00.200000"
        assert context.error_type == "Timeout" and context.outcome == "dead"
    assert by_id[sync_id][1].kind == "e2e.wait_quick_timeout"


def test_a_discard_is_reported_dead(env: Any, reports: Reports) -> None:
    job_id = env.jobs.enqueue(Work(action="discard")).id

    assert env.jobs.step().outcomes() == {job_id: "dead"}

    ((error, context),) = reports.calls
    assert isinstance(error, Discard) and str(error) == "not worth retrying"
    assert (context.error_type, context.outcome, context.attempt) == ("Discarded", "dead", 1)


def test_arguments_that_no_longer_decode_are_reported_as_discarded(
    env: Any, reports: Reports
) -> None:
    now = env.clock()
    job_id = insert_undecodable(env.jobs.service.store, now)

    assert env.jobs.step().outcomes() == {job_id: "dead"}

    ((error, context),) = reports.calls
    assert isinstance(error, Discard) and "count" in str(error)
    assert context.error_type == "Discarded"
    assert context.args_bytes == json_bytes({"count": "three"})


def test_a_requested_retry_is_reported_only_when_it_leaves_no_attempt(
    env: Any, reports: Reports
) -> None:
    job_id = env.jobs.enqueue(Work(action="retry_in", seconds=5)).id

    assert [run_due(env) for _ in range(3)] == [
        {job_id: "retried"},
        {job_id: "retried"},
        {job_id: "dead"},
    ]

    ((error, context),) = reports.calls
    assert (context.attempt, context.outcome, context.error_type) == (3, "dead", "RetryIn")
    assert "retry" in str(error).lower()


def test_completed_snoozed_and_cancelled_runs_are_not_reported(env: Any, reports: Reports) -> None:
    completed = env.jobs.enqueue(Work(action="ok")).id
    snoozed = env.jobs.enqueue(Work(action="snooze", seconds=60)).id
    cancelled_before = env.jobs.enqueue(Work(action="fail")).id
    env.jobs.cancel(cancelled_before)

    def cancel_itself(job: Any, args: Any) -> None:
        jobs.cancel(job.id)
        job.record_output("after the cancel")  # the fence refuses: the run is over

    cancelled_running = env.jobs.enqueue(Work(action=hook(cancel_itself))).id

    outcomes = env.jobs.step().outcomes()

    assert outcomes[completed] == "completed"
    assert outcomes[snoozed] == "snoozed"
    assert cancelled_before not in outcomes
    assert outcomes[cancelled_running] == "lost"
    assert env.jobs.get(cancelled_running).state == "cancelled"
    assert reports.calls == []


# -- a reporter cannot break the run --------------------------------------------------------------
@pytest.mark.parametrize("raised", [RuntimeError("sentry is down"), SystemExit(2)])
def test_a_raising_reporter_breaks_nothing_and_logs_one_line(
    env: Any, caplog: pytest.LogCaptureFixture, raised: BaseException
) -> None:
    calls: list[int] = []

    def broken(error: BaseException, context: FailureContext) -> None:
        calls.append(context.job_id)
        raise raised

    env.configure(ERROR_REPORTER=broken)
    first = env.jobs.enqueue(Work(action="fail")).id
    second = env.jobs.enqueue(Work(action="fail")).id
    fine = env.jobs.enqueue(Work(action="ok")).id

    with caplog.at_level(logging.DEBUG, logger="anole_jobs.reporting"):
        outcomes = env.jobs.step().outcomes()

    assert outcomes == {first: "retried", second: "retried", fine: "completed"}
    assert sorted(calls) == [first, second]  # the second was reported after the first raised
    assert env.jobs.get(first).state == "retrying"
    lines = [
        r for r in caplog.records if r.name == "anole_jobs.reporting" and r.levelno >= logging.ERROR
    ]
    assert len(lines) == 2  # one per failed report, no more
    by_job = {r.job_id: r.getMessage() for r in lines}  # type: ignore[attr-defined]
    text = by_job[first]
    assert "\n" not in text
    assert f"failed for job {first} (test.work attempt 1/3 on default)" in text
    assert type(raised).__name__ in text and "this failure was not reported" in text
    assert "broken" in text  # names the reporter


def test_a_reporter_named_by_a_dotted_path(env: Any) -> None:
    MODULE_CALLS.clear()
    env.configure(ERROR_REPORTER=f"{__name__}.module_reporter")
    job_id = env.jobs.enqueue(Work(action="fail")).id

    env.jobs.step()

    ((error, context),) = MODULE_CALLS
    assert type(error) is ValueError and context.job_id == job_id
    MODULE_CALLS.clear()


def test_a_reporter_that_does_not_import_is_logged_once_and_jobs_still_run(
    env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # A path of this test's own: the problem is logged once per process.
    path = f"myproject.nowhere_{uuid.uuid4().hex[:8]}.report"
    env.configure(ERROR_REPORTER=path)
    ids = [env.jobs.enqueue(Work(action="fail")).id for _ in range(2)]

    with caplog.at_level(logging.ERROR, logger="anole_jobs.reporting"):
        assert env.jobs.step().outcomes() == {job_id: "retried" for job_id in ids}
        env.clock.advance(timedelta(days=1))
        assert env.jobs.step().outcomes() == {job_id: "retried" for job_id in ids}

    (line,) = [r.getMessage() for r in caplog.records if r.name == "anole_jobs.reporting"]
    assert f"{path!r} cannot be imported" in line
    assert "failed jobs are not reported" in line
