"""One attempt of one claimed job, as a pipeline of named steps:

    span -> RUN_STARTED -> decode -> call (cancel, timeout) -> decide (and encode the
         result) -> count drains -> (the caller writes, fenced) -> outcomes.record
         -> (the caller, once the write is handed on) report a failed attempt

`Executor.run` returns an `Attempt` (see `outcomes`): the `Finish` to write (None when nothing
may be written) and the outcome to report. Writing is the caller's, so a worker pool can batch
the writes of many attempts into one round trip; recording is `outcomes`'.

A handler's return value is the job's result: encoded here (JSON, at most MAX_RESULT_BYTES),
it rides in the completing `Finish`, so it is stored by the same write. One that cannot be
stored fails the attempt (`TypeError`, `ResultTooLarge`), retried like any failure.

The kind's timeout is a deadline on the run's `CancelScope`, checked at every wait, so the
runtime and `jobs.step()` enforce it alike (an async handler's `await` is bounded by it too).
"""

from __future__ import annotations

import asyncio
import logging
import os
import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from django.db import transaction

from anole_jobs import codec, events, reporting, tracing
from anole_jobs.backoff import default_backoff
from anole_jobs.clock import monotonic
from anole_jobs.core import ErrorEntry
from anole_jobs.errors import Canceled, Discard, ResultTooLarge, RetryIn, Snooze
from anole_jobs.job import Job
from anole_jobs.kinds import HandlerSpec
from anole_jobs.records import Outcome, encode_result
from anole_jobs.service import JobService
from anole_jobs.stores.base import ClaimedJob, Finish
from anole_jobs.worker import drained
from anole_jobs.worker.cancel import CancelScope, cancel_on_queries
from anole_jobs.worker.outcomes import Attempt, give_back

logger = logging.getLogger("anole_jobs.worker")

TRACEBACK_FRAMES = 6
TRACEBACK_CHARS = 4000
MESSAGE_CHARS = 2000


#: The longest delay a kind's own backoff may return: far past any retry anyone waits for,
#: and short enough that the retry's time stays a date (`now + delay` past the year 9999
#: raises OverflowError, which would fail the run's write every time it ran again).
LONGEST_BACKOFF = timedelta(days=365_000)


class _Control:
    """The `RunControl` a `Job` delegates waits and transactional completion to."""

    def __init__(self, executor: Executor, claimed: ClaimedJob, scope: CancelScope) -> None:
        self.executor = executor
        self.claimed = claimed
        self.scope = scope
        self.completion_requested = False
        self.completion_committed = False
        self.meta = dict(claimed.record.meta)
        #: When the handler started: its write records it as the job's `attempted_at`.
        self.started_at: datetime | None = None

    def sleep(self, delay: timedelta) -> None:
        self.scope.sleep(delay)

    def check_cancelled(self) -> None:
        self.scope.check()

    def record_output(self, output: Any) -> None:
        self.scope.check()
        meta = {**self.meta, "output": output}
        if not self.executor.service.store.update_meta(self.claimed.run, meta):
            raise Canceled("lost")  # the job moved on without this run: write nothing for it
        self.meta = meta

    def record_meta(self, key: str, value: Any) -> None:
        # No cancel check: bookkeeping may follow a timeout; the fence refuses a stale run.
        meta = {**self.meta, key: value}
        if not self.executor.service.store.update_meta(self.claimed.run, meta):
            raise Canceled("lost")
        self.meta = meta

    def dependency_results(self) -> dict[str, Any]:
        return self.executor.service.store.dependency_results(self.claimed.record.id)

    def complete_in(self, using: str) -> None:
        service = self.executor.service
        service.require_transaction(using, what="job.complete_in")
        self.scope.check()
        now = service.clock()
        finish = Finish(
            run=self.claimed.run,
            state="completed",
            at=now,
            started_at=self.started_at,
        )
        (written,) = service.store.finish([finish])
        if not written:
            # The job moved on without this run (rescued, cancelled, retried): refuse inside
            # the user's transaction so it rolls back.
            raise Canceled("lost")
        self.completion_requested = True

        def committed() -> None:
            self.completion_committed = True

        transaction.on_commit(committed, using=using)


class Executor:
    """Runs attempts for one `JobService` service; shared by the manual stepper and worker pools."""

    def __init__(
        self,
        service: JobService,
        *,
        manual: bool,
        rand: Callable[[], float] | None = None,
    ) -> None:
        self.service = service
        self.manual = manual
        self.rand = rand
        self.reporting = reporting.ErrorReporting(service.settings.error_reporter)

    def start_span(self, claimed: ClaimedJob) -> tracing.RunSpan:
        record = claimed.record
        return tracing.start_run_span(
            settings=self.service.settings,
            queue=record.queue,
            kind=record.kind,
            job_id=record.id,
            attempt=claimed.run.attempt,
            max_attempts=record.max_attempts,
            meta=record.meta,
        )

    def run(
        self,
        claimed: ClaimedJob,
        scope: CancelScope | None = None,
        span: tracing.RunSpan | None = None,
    ) -> Attempt:
        scope = scope or CancelScope(waits=not self.manual)
        record = claimed.record
        started = monotonic()
        handler = self.service.registry.handler(record.kind)
        if handler is None:
            # Claims name the handled kinds, so this is a handler removed since: give it back.
            back = give_back(claimed.run, self.service.clock())
            return Attempt(claimed=claimed, outcome="interrupted", finish=back, seconds=0.0)
        span = span or self.start_span(claimed)
        control = _Control(self, claimed, scope)
        job = Job(
            id=record.id,
            kind=record.kind,
            queue=record.queue,
            args=record.args,
            meta=record.meta,
            attempt=record.attempt,
            max_attempts=record.max_attempts,
            priority=record.priority,
            created_at=record.created_at,
            scheduled_at=record.scheduled_at,
            control=control,
            trace_id=span.trace_id,
            span_id=span.span_id,
            workflow_id=record.workflow_id,
            step_name=record.step_name,
        )
        scope.time_out_after(handler.kind.timeout_for(record.args).total_seconds())
        # The job runs from here: its write stores this as `attempted_at` (the claim wrote
        # the claim's time, and a job claimed ahead may have waited a moment for a slot).
        control.started_at = self.service.clock()
        self.service.bus.emit(
            events.RUN_STARTED,
            queue=record.queue,
            kind=record.kind,
            job_id=record.id,
            attempt=claimed.run.attempt,
        )
        error: BaseException | None = None
        value: Any = None
        try:
            with span.activate():
                value = self._call(handler, job, scope)
        except BaseException as exc:  # noqa: BLE001 - every way out is an outcome
            # SystemExit, KeyboardInterrupt, GeneratorExit and a user's own BaseException too:
            # a handler cannot stop its worker; it fails its attempt like any error. (Signals
            # reach only the main thread; `jobs.step()` tells a real Ctrl-C apart itself.)
            error = exc
        seconds = monotonic() - started
        if control.completion_requested:
            return self._after_complete_in(claimed, control, error, seconds, span)
        if error is None and value is not None:
            try:  # a result that cannot be stored fails the attempt like a raised error
                value = encode_result(
                    value,
                    limit=self.service.settings.max_result_bytes,
                    where=f"the handler of {job.kind}",
                )
            except (TypeError, ResultTooLarge) as exc:
                error = exc
        started_at = control.started_at
        outcome, finish = self.decide(
            claimed, job, handler, error, scope, value, started_at=started_at
        )
        if finish is not None and finish.started_at != started_at:
            finish = replace(finish, started_at=started_at)  # a failure: rare, not the hot path
        self._count_drains(claimed, control, outcome, finish)
        return Attempt(
            claimed=claimed,
            outcome=outcome,
            finish=finish,
            seconds=seconds,
            span=span,
            raised=error,
        )

    # -- call --------------------------------------------------------------------------------
    def _call(self, handler: HandlerSpec, job: Job, scope: CancelScope) -> Any:
        """Run the handler; its return value."""
        try:
            args: Any = codec.decode_args(handler.kind.args_type, job.args)
        except codec.DecodeError as exc:
            raise Discard(str(exc)) from None
        if handler.is_async:
            return self._call_async(handler, job, args, scope)
        with cancel_on_queries(scope):
            scope.check()
            return handler.func(job, args)

    def _call_async(self, handler: HandlerSpec, job: Job, args: Any, scope: CancelScope) -> Any:
        async def guarded() -> tuple[Any, BaseException | None]:
            # asyncio lets SystemExit and KeyboardInterrupt out of a task through the event
            # loop itself (leaving the loop's other tasks to be torn down noisily); caught
            # here, in the handler's own task, they come back as a value and are raised
            # once the loop has ended cleanly.
            try:
                return await handler.func(job, args), None
            except (SystemExit, KeyboardInterrupt) as exc:
                return None, exc

        async def main() -> tuple[Any, BaseException | None]:
            task = asyncio.ensure_future(guarded())
            loop = asyncio.get_running_loop()

            def cancel_task() -> None:
                loop.call_soon_threadsafe(task.cancel)

            scope.on_cancel(cancel_task)
            try:
                return await asyncio.wait_for(task, scope.remaining())
            except TimeoutError:
                scope.cancel("timeout")
                raise Canceled("timeout") from None
            except asyncio.CancelledError:
                raise Canceled(scope.reason or "canceled") from None

        scope.check()
        value, escaped = asyncio.run(main())
        if escaped is not None:
            raise escaped
        return value

    # -- decide ------------------------------------------------------------------------------
    def decide(
        self,
        claimed: ClaimedJob,
        job: Job,
        handler: HandlerSpec,
        error: BaseException | None,
        scope: CancelScope,
        value: Any = None,
        *,
        started_at: datetime | None = None,
    ) -> tuple[Outcome, Finish | None]:
        """Map how the handler ended (raised `error`, or returned `value`) to an outcome and
        the write that records it (a completion carries `started_at`, the handler's start)."""
        now = self.service.clock()
        run = claimed.run
        if error is None:
            # A handler that swallowed its Canceled and returned is completed: it returned.
            # `value` is its result already encoded (JSON text), or None: nothing to store.
            return "completed", Finish(
                run=run, state="completed", at=now, result=value, started_at=started_at
            )
        if isinstance(error, Snooze):
            return "snoozed", Finish(
                run=run,
                state="scheduled",
                at=now,
                scheduled_at=now + error.delay,
                give_back_attempt=True,
            )
        if isinstance(error, Discard):
            entry = self._entry(job, now, "Discarded", error.reason, None)
            return "dead", Finish(run=run, state="dead", at=now, error=entry)
        if isinstance(error, Canceled) and scope.cancelled:
            if scope.reason == "lost":
                return "lost", None
            if scope.reason == "drain":
                return "interrupted", give_back(run, now)
            timeout = handler.kind.timeout_for(job.args)
            entry = self._entry(
                job, now, "Timeout", f"the run exceeded its timeout of {timeout}", None
            )
            return self._failed(claimed, handler, now, entry, None)
        if isinstance(error, RetryIn):
            entry = self._entry(job, now, "RetryIn", f"retry requested in {error.delay}", None)
            return self._failed(claimed, handler, now, entry, error.delay)
        entry = self._entry(job, now, _type_name(error), str(error), error)
        return self._failed(claimed, handler, now, entry, None)

    def _count_drains(
        self, claimed: ClaimedJob, control: _Control, outcome: Outcome, finish: Finish | None
    ) -> None:
        """Keep the count of drains in a row that gave the job back (see `drained`)."""
        if outcome == "interrupted":
            drained.count_give_back(self.service, claimed, control.meta)
        elif finish is not None and drained.KEY in control.meta:
            drained.clear_give_backs(self.service, claimed, control.meta)

    def _failed(
        self,
        claimed: ClaimedJob,
        handler: HandlerSpec,
        now: datetime,
        entry: ErrorEntry,
        delay: timedelta | None,
    ) -> tuple[Outcome, Finish]:
        run = claimed.run
        if run.attempt >= claimed.record.max_attempts:
            return "dead", Finish(run=run, state="dead", at=now, error=entry)
        if delay is None:
            delay = self.backoff(handler, run.attempt)
        return "retried", Finish(
            run=run, state="retrying", at=now, scheduled_at=now + delay, error=entry
        )

    # -- report ------------------------------------------------------------------------------
    def report(self, attempt: Attempt) -> None:
        """Tell ``ERROR_REPORTER`` about a failed attempt (docs/observability.md#error-reporting).

        The caller calls it once the attempt is handed to its write, in the thread that ran
        the handler: a slow reporter holds that slot a little longer, never the fenced write.
        Counted as failed: every attempt that ends `retried` or `dead`, except a retry the
        handler asked for itself (`job.retry_in`) while attempts remain."""
        if attempt.outcome not in ("retried", "dead") or not self.reporting.enabled:
            return
        error, entry, finish = attempt.raised, attempt.error, attempt.finish
        if error is None or entry is None or finish is None:
            return
        if isinstance(error, RetryIn) and attempt.outcome == "retried":
            return
        # From the handler's frame down: the runtime's own frames hold the job's arguments.
        frames = _from_handler(error.__traceback__)
        if isinstance(error, Canceled):
            if entry.type != "Timeout":
                return  # cancelled or lost while it ran: not a failure of the handler
            error = reporting.TimedOut(entry.message)
        error = error.with_traceback(frames)
        record = attempt.claimed.record
        context = reporting.FailureContext(
            job_id=record.id,
            kind=record.kind,
            queue=record.queue,
            attempt=attempt.claimed.run.attempt,
            max_attempts=record.max_attempts,
            args_bytes=reporting.args_bytes(record.args),
            trace_id=attempt.span.trace_id,
            outcome=attempt.outcome,
            error_type=entry.type,
            next_run_at=finish.scheduled_at if attempt.outcome == "retried" else None,
        )
        self.reporting.report(error, context)

    def backoff(self, handler: HandlerSpec, attempt: int) -> timedelta:
        custom = handler.kind.backoff
        if custom is not None:
            try:
                delay = custom(attempt)
                if isinstance(delay, (int, float)) and not isinstance(delay, bool):
                    delay = timedelta(seconds=delay)
                if isinstance(delay, timedelta) and timedelta(0) <= delay <= LONGEST_BACKOFF:
                    return delay
                logger.error(
                    "backoff of kind %s returned %r, not a timedelta of at most 1,000 years "
                    "(a retry time a date can hold); using the default",
                    handler.kind.name,
                    delay,
                )
            except Exception:
                logger.exception("backoff of kind %s failed; using the default", handler.kind.name)
        if self.rand is not None:
            return default_backoff(attempt, rand=self.rand)
        return default_backoff(attempt)

    def _entry(
        self, job: Job, now: datetime, type_name: str, message: str, error: BaseException | None
    ) -> ErrorEntry:
        explanations = job.explanations
        if explanations:
            message = "; ".join(explanations) + (f": {message}" if message else "")
        return ErrorEntry(
            at=now,
            attempt=job.attempt,
            type=type_name,
            message=message[:MESSAGE_CHARS],
            traceback=_short_traceback(error) if error is not None else "",
        )

    def _after_complete_in(
        self,
        claimed: ClaimedJob,
        control: _Control,
        error: BaseException | None,
        seconds: float,
        span: tracing.RunSpan,
    ) -> Attempt:
        # The handler's own transaction decided the outcome: write nothing more.
        if control.completion_committed:
            return Attempt(
                claimed=claimed,
                outcome="completed",
                finish=None,
                seconds=seconds,
                span=span,
                completed_in_transaction=True,
            )
        logger.warning(
            "job %s: complete_in's transaction did not commit (%s); it runs again after its lease",
            claimed.record.id,
            type(error).__name__ if error else "rolled back",
        )
        return Attempt(claimed=claimed, outcome="lost", finish=None, seconds=seconds, span=span)


def _type_name(error: BaseException) -> str:
    if isinstance(error, ResultTooLarge):
        return "ResultTooLarge"  # as the runtime's own check names it
    cls = type(error)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_ASYNCIO_DIR = os.path.dirname(os.path.abspath(asyncio.__file__))


def _from_handler(tb: TracebackType | None) -> TracebackType | None:
    """`tb` less its leading frames of the runtime (and of asyncio, for an async handler)."""
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(
        (_RUNTIME_DIR, _ASYNCIO_DIR)
    ):
        tb = tb.tb_next
    return tb


def _short_traceback(error: BaseException) -> str:
    """The last few frames of the handler's own code (the runtime's frames are left out)."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not os.path.abspath(frame.filename).startswith(_RUNTIME_DIR)
    ][-TRACEBACK_FRAMES:]
    text = "".join(traceback.format_list(frames)) + "".join(
        traceback.format_exception_only(type(error), error)
    )
    return text[-TRACEBACK_CHARS:]
