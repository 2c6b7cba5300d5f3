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
import concurrent.futures
import logging
import os
import threading
import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any

from django.db import transaction

from anole_jobs import codec, deploys, encryption, events, offload, reporting, timeline, tracing
from anole_jobs.backoff import default_backoff
from anole_jobs.bounds import storable_text
from anole_jobs.clock import monotonic
from anole_jobs.core import ErrorEntry
from anole_jobs.errors import Canceled, Discard, ResultTooLarge, RetryIn, SignalTimeout, Snooze
from anole_jobs.job import Job
from anole_jobs.jsontext import compact
from anole_jobs.kinds import HandlerSpec
from anole_jobs.records import Outcome, encode_result
from anole_jobs.service import JobService
from anole_jobs.stores.base import ClaimedJob, Finish
from anole_jobs.worker import aloop, drained, joblog
from anole_jobs.worker.cancel import CancelScope, cancel_on_queries
from anole_jobs.worker.durable import DurableRun, on_a_thread
from anole_jobs.worker.outcomes import Attempt, give_back

logger = logging.getLogger("anole_jobs.worker")

TRACEBACK_FRAMES = 6
TRACEBACK_CHARS = 4000
MESSAGE_CHARS = 2000


#: `job.progress` stores a report at most this often (seconds) while the handler runs; the
#: last one of an attempt rides on the write that ends it.
PROGRESS_EVERY = 1.0


#: The longest delay a kind's own backoff may return: far past any retry anyone waits for,
#: and short enough that the retry's time stays a date (`now + delay` past the year 9999
#: raises OverflowError, which would fail the run's write every time it ran again).
LONGEST_BACKOFF = timedelta(days=365_000)


#: `_acall`'s default: the args are decoded there (the thread of `jobs.step()` decoded them).
_UNDECODED: Any = object()


#: An attempt about to call its handler (see `Executor._prepare`): its claim, handler, `Job`,
#: control, span, start (monotonic) and what upcasting its stored args raised
#: (docs/deploys.md: the attempt fails with it). A tuple: one is made per attempt.
_Prepared = tuple[
    ClaimedJob, HandlerSpec, Job, "_Control", tracing.RunSpan, float, BaseException | None
]


class _Control:
    """The `RunControl` a `Job` delegates waits and transactional completion to."""

    # Class defaults for what most attempts never set (one assignment each saved per job).
    completion_requested = False
    completion_committed = False
    #: When the handler started: its write records it as the job's `attempted_at`.
    started_at: datetime | None = None
    #: The handler's last `job.progress` (JSON text; the run's end writes it again, so a
    #: report stored from a pool thread can never be the last one lost), and when
    #: (monotonic) one was last stored.
    progress_last: str | None = None
    progress_stored = float("-inf")
    #: The attempt's log records (None: the job's log is off).
    log: joblog.Capture | None = None
    #: Its durable steps' bookkeeping, made by the first step, sleep or wait.
    _durable: DurableRun | None = None

    def __init__(self, executor: Executor, claimed: ClaimedJob, scope: CancelScope) -> None:
        self.executor = executor
        self.claimed = claimed
        self.scope = scope
        self.meta = dict(claimed.record.meta)

    def progress(self, done: object, total: object, message: object) -> None:
        entry = timeline.progress_entry(done, total, message, self.executor.service.clock())
        text = timeline.encode(entry)
        moment = monotonic()
        self.progress_last = text  # stored with the run's end in any case
        if moment - self.progress_stored < PROGRESS_EVERY:
            return
        self.progress_stored = moment
        store, run = self.executor.service.store, self.claimed.run
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            _store_progress(store, run, text, close=False)
            return
        # An async handler: the loop must not wait for the store (nor may Django's database
        # calls run on it), so the report goes to the loop's thread pool.
        loop.run_in_executor(None, _store_progress, store, run, text)

    def timeline_of(self, finish: Finish, outcome: str) -> Finish:
        """`finish` with the attempt's timeline: its outcome, last progress and log."""
        log = self.log
        return replace(
            finish,
            outcome=timeline.attempt_outcome(outcome),
            progress=self.progress_last,
            logs=log.encoded() if log is not None else None,
            logs_kept=log.keep if log is not None else 0,
        )

    def sleep(self, delay: timedelta) -> None:
        self.scope.sleep(delay)

    def check_cancelled(self) -> None:
        self.scope.check()

    def record_output(self, output: Any) -> None:
        self.scope.check()
        self._write_meta({**self.meta, "output": output})

    def record_meta(self, key: str, value: Any) -> None:
        # No cancel check: bookkeeping may follow a timeout; the fence refuses a stale run.
        self._write_meta({**self.meta, key: value})

    def _write_meta(self, meta: dict[str, Any]) -> None:
        store = self.executor.service.store
        # An async handler's call is made off the loop on the database store (see on_a_thread).
        if not on_a_thread(store, store.update_meta, self.claimed.run, meta):
            raise Canceled("lost")  # the job moved on without this run: write nothing for it
        self.meta = meta

    def dependency_results(self) -> dict[str, Any]:
        service = self.executor.service
        results = on_a_thread(
            service.store, service.store.dependency_results, self.claimed.record.id
        )
        return {name: service.open_value(value) for name, value in results.items()}

    # -- durable execution (see worker/durable.py) ---------------------------------------------
    @property
    def durable(self) -> DurableRun:
        durable = self._durable
        if durable is None:
            durable = self._durable = DurableRun(
                self.executor.service, self.claimed, self.scope, lambda: self.started_at
            )
        return durable

    @property
    def parked(self) -> bool:
        durable = self._durable
        return durable is not None and durable.parked

    def step(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        atomic: bool,
    ) -> Any:
        return self.durable.step(name, fn, args, kwargs, atomic=atomic)

    async def astep(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        atomic: bool,
    ) -> Any:
        return await self.durable.astep(name, fn, args, kwargs, atomic=atomic)

    def sleep_until(self, name: str, when: datetime | None, delay: timedelta | None) -> None:
        self.durable.sleep_until(name, when, delay)

    def wait_for_signal(self, name: str, timeout: timedelta) -> Any:
        return self.durable.wait_for_signal(name, timeout)

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
        finish = self.timeline_of(finish, "completed")
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
        self.log_lines = service.settings.job_log_lines
        # The log captures of the running attempts that logged, for the runtime's
        # `LogFlusher` (a worker's, not the manual stepper's: its attempts store their lines
        # at their end).
        self.live_logs = joblog.LiveCaptures()

    def _begin_log(self, claimed: ClaimedJob) -> joblog.Capture | None:
        log = joblog.begin(self.log_lines, claimed.run.attempt, self.service.clock)
        if log is not None and not self.manual:
            log.live, log.run = self.live_logs, claimed.run  # joins at its first line
        return log

    def _end_log(self, claimed: ClaimedJob, log: joblog.Capture | None, scope: CancelScope) -> None:
        joblog.end(log)
        if log is not None and log.lines is not None and log.live is not None:
            if scope.reason == "lost" and log.has_pending:
                # No end will carry its lines: the flusher stores them, which keeps them if
                # a cancel ended the job during this run (the lines it logged winding down).
                log.last = True
            else:
                log.live.remove(claimed.run)

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
        prepared = self._prepare(claimed, scope, span)
        if isinstance(prepared, Attempt):
            return prepared
        _, handler, job, control, span, _, upcast_error = prepared
        error: BaseException | None = None
        value: Any = None
        # The job's log: what any logger emits in this thread (and the handler's tasks).
        log = control.log = self._begin_log(claimed)
        try:
            with span.activate():
                if upcast_error is not None:
                    raise upcast_error
                value = self._call(handler, job, scope)
        except BaseException as exc:  # noqa: BLE001 - every way out is an outcome
            # SystemExit, KeyboardInterrupt, GeneratorExit and a user's own BaseException too:
            # a handler cannot stop its worker; it fails its attempt like any error. (Signals
            # reach only the main thread; `jobs.step()` tells a real Ctrl-C apart itself.)
            error = exc
        finally:
            self._end_log(claimed, log, scope)
        return self._conclude(prepared, scope, error, value, count_drains=True)

    async def arun(
        self, claimed: ClaimedJob, scope: CancelScope, span: tracing.RunSpan | None = None
    ) -> Attempt:
        """`run` for an `async def` handler, as a task on the process's loop (`aloop`): the
        handler's coroutine runs in a task of its own, which a cancel of `scope` (a timeout,
        a drain, a cancel found by the watch) cancels at once. Nothing here blocks the loop:
        the rare store call (counting drains) goes to the loop's executor."""
        prepared = self._prepare(claimed, scope, span)
        if isinstance(prepared, Attempt):
            return prepared
        _, handler, job, control, span, _, upcast_error = prepared
        error: BaseException | None = None
        value: Any = None
        # The job's log: this task's records (and its own tasks'), kept apart from the other
        # jobs on the loop by the task's context.
        log = control.log = self._begin_log(claimed)
        try:
            with span.activate():
                if upcast_error is not None:
                    raise upcast_error
                value = await self._acall(handler, job, scope)
        except BaseException as exc:  # noqa: BLE001 - every way out is an outcome
            error = exc
        finally:
            self._end_log(claimed, log, scope)
        attempt = self._conclude(prepared, scope, error, value, count_drains=False)
        if attempt.outcome == "interrupted" or (
            attempt.finish is not None and drained.KEY in control.meta
        ):
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(
                None,
                _closing_connections,
                self._count_drains,
                claimed,
                control,
                attempt.outcome,
                attempt.finish,
            )
        return attempt

    def _prepare(
        self, claimed: ClaimedJob, scope: CancelScope, span: tracing.RunSpan | None
    ) -> _Prepared | Attempt:
        """Everything before the handler's call; an `Attempt` when there is nothing to call."""
        record = claimed.record
        started = monotonic()
        handler = self.service.registry.resolve(record.kind)
        if handler is None:
            # Claims name the handled kinds, so this is a handler removed since: give it back.
            back = give_back(claimed.run, self.service.clock())
            return Attempt(claimed=claimed, outcome="interrupted", finish=back, seconds=0.0)
        span = span or self.start_span(claimed)
        control = _Control(self, claimed, scope)
        upcast_error: BaseException | None = None
        args = record.args
        try:
            # Plain args (the common case) are told apart by their keys alone: a reference
            # has one key, sealed args two, each with its own marker.
            if not (
                type(args) is dict
                and (len(args) > 2 or (offload.REF not in args and encryption.MARK not in args))
            ):
                if offload.is_ref(args):  # kept in a storage (docs/offload.md)
                    args = offload.load(args)
                    record = replace(record, args=args)
                if encryption.is_sealed(args):  # stored encrypted (docs/encryption.md)
                    args = encryption.open_sealed(args, self.service.settings.encryption_keys)
                    record = replace(record, args=args)
            if record.version < handler.kind.version:  # stored by older code (docs/deploys.md)
                args = deploys.upcast_args(handler, self.service.registry, record)
        except Exception as exc:  # noqa: BLE001 - an upcaster's error fails the attempt
            upcast_error = exc
        job = Job(
            id=record.id,
            kind=handler.kind.name,
            queue=record.queue,
            args=args,
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
        return (claimed, handler, job, control, span, started, upcast_error)

    def _conclude(
        self,
        prepared: _Prepared,
        scope: CancelScope,
        error: BaseException | None,
        value: Any,
        *,
        count_drains: bool,
    ) -> Attempt:
        """Everything after the handler's call: the outcome and the write that records it."""
        claimed, handler, job, control, span, started, _ = prepared
        seconds = monotonic() - started
        if control.parked:
            # A durable sleep or wait wrote the job back `scheduled` itself.
            return Attempt(
                claimed=claimed, outcome="snoozed", finish=None, seconds=seconds, span=span
            )
        if control.completion_requested:
            return self._after_complete_in(claimed, control, error, seconds, span)
        if error is None and value is not None:
            try:  # a result that cannot be stored fails the attempt like a raised error
                value = encode_result(
                    value,
                    limit=self.service.settings.max_result_bytes,
                    where=f"the handler of {job.kind}",
                )
                if handler.kind.encrypt:
                    keys = self.service.settings.encryption_keys
                    value = compact(encryption.seal_text(value, keys))
                ref = offload.maybe_put(value, self.service.settings.offload)
                if ref is not None:
                    value = ref
            except (TypeError, ResultTooLarge, encryption.EncryptionError, OSError) as exc:
                error = exc
        started_at = control.started_at
        if error is None:
            # The hot path: `decide`'s completion and `timeline_of` in one write (no copy).
            outcome: Outcome = "completed"
            log = control.log
            finish: Finish | None = Finish(
                run=claimed.run,
                state="completed",
                at=self.service.clock(),
                result=value,
                started_at=started_at,
                outcome=timeline.COMPLETED,
                progress=control.progress_last,
                logs=log.encoded() if log is not None and log.lines else None,
                logs_kept=log.keep if log is not None else 0,
            )
        else:
            outcome, finish = self.decide(
                claimed, job, handler, error, scope, value, started_at=started_at
            )
            if finish is not None and finish.started_at != started_at:
                finish = replace(finish, started_at=started_at)  # a failure: not the hot path
            if finish is not None:
                finish = control.timeline_of(finish, outcome)
        if count_drains and (
            outcome == "interrupted" or (finish is not None and drained.KEY in control.meta)
        ):
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
        """An async handler called from a thread (`jobs.step()`): run on the process's loop,
        this thread waiting for it."""
        scope.check()
        if aloop.in_loop_thread():
            # A handler of the loop stepping jobs itself: a loop of its own, in a thread.
            return _in_thread(lambda: asyncio.run(self._acall(handler, job, scope, args=args)))

        async def boxed() -> tuple[Any, BaseException | None]:
            # What the handler raised comes back as a value: a `Canceled` (a CancelledError)
            # raised through the future would reach this thread as the future's own cancel.
            try:
                return await self._acall(handler, job, scope, args=args), None
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                return None, exc

        future = asyncio.run_coroutine_threadsafe(boxed(), aloop.shared_loop())
        try:
            value, error = future.result()
        except BaseException:
            future.cancel()  # a Ctrl-C in this thread: the handler's task stops too
            raise
        if error is not None:
            raise error
        return value

    async def _acall(
        self, handler: HandlerSpec, job: Job, scope: CancelScope, *, args: Any = _UNDECODED
    ) -> Any:
        """Await the handler in the calling task (the job's own); a cancel of `scope` (from
        any thread) cancels that task at once, while the handler runs, and a timeout is a
        timer of the loop."""
        if args is _UNDECODED:
            try:
                args = codec.decode_args(handler.kind.args_type, job.args)
            except codec.DecodeError as exc:
                raise Discard(str(exc)) from None
        scope.check()
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        # Set and read on the loop only: once the handler has ended, a cancel that arrives
        # later leaves the task alone (its bookkeeping may still await).
        state = {"armed": True, "requested": False}

        def cancel_on_loop() -> None:
            if state["armed"] and not state["requested"]:
                state["requested"] = True
                task.cancel()

        def cancel_task() -> None:
            if aloop.in_loop_thread() or loop is _running_loop():
                cancel_on_loop()
            else:
                loop.call_soon_threadsafe(cancel_on_loop)

        scope.on_cancel(cancel_task)
        remaining = scope.remaining()
        timer = (
            loop.call_later(remaining, scope.cancel, "timeout") if remaining is not None else None
        )
        try:
            return await handler.func(job, args)
        except asyncio.CancelledError:
            if scope.cancelled:
                raise Canceled(scope.reason or "canceled") from None
            raise
        finally:
            state["armed"] = False
            if state["requested"] and task.cancelling():
                task.uncancel()  # our cancel: the task goes on, to record the outcome
            if timer is not None:
                timer.cancel()

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
        the handler (an async handler's: a thread of the loop's executor, never the loop): a
        slow reporter holds that slot a little longer, never the fenced write.
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
        # An error's text is the handler's: what no store can hold (a NUL, a lone surrogate)
        # is replaced, or the write of the attempt's outcome (and its batch) would fail.
        return ErrorEntry(
            at=now,
            attempt=job.attempt,
            type=storable_text(type_name),
            message=storable_text(message[:MESSAGE_CHARS]),
            traceback=storable_text(_short_traceback(error)) if error is not None else "",
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


def _store_progress(store: Any, run: Any, text: str, *, close: bool = True) -> None:
    """`record_progress`, best effort: a store that does not answer fails no attempt for a
    report (the run's end stores the last one). From a pool thread of an event loop
    (`close`), its database connections are closed after."""
    from anole_jobs.background import close_connections, sharing_store_sessions

    try:
        if close:  # a pool thread of the loop: the process's shared sessions, not its own
            with sharing_store_sessions():
                store.record_progress(run, text)  # False: the run was lost; its end says so
        else:
            store.record_progress(run, text)
    except Exception:  # noqa: BLE001 - see above
        logger.warning("job %s: its progress could not be stored", run.id, exc_info=True)
    finally:
        if close:
            close_connections()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _closing_connections(func: Callable[..., Any], *args: Any) -> Any:
    """Call `func` (the runtime's own store calls) in a pool thread of the loop, on the
    process's shared sessions, then close what that thread opened."""
    from anole_jobs.background import close_connections, sharing_store_sessions

    try:
        with sharing_store_sessions():
            return func(*args)
    finally:
        close_connections()


def _in_thread(func: Callable[[], Any]) -> Any:
    """`func()` in a new thread, this one waiting: its value, or what it raised."""
    box: list[Any] = []

    def call() -> None:
        try:
            box.append((func(), None))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box.append((None, exc))

    thread = threading.Thread(target=call, name="anole-step-async", daemon=True)
    thread.start()
    thread.join()
    value, error = box[0]
    if error is not None:
        raise error
    return value


def _type_name(error: BaseException) -> str:
    if isinstance(error, ResultTooLarge):
        return "ResultTooLarge"  # as the runtime's own check names it
    if isinstance(error, SignalTimeout):
        return "SignalTimeout"
    cls = type(error)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_ASYNCIO_DIR = os.path.dirname(os.path.abspath(asyncio.__file__))
#: The future `jobs.step()` waits on for an async handler run on the process's loop.
_FUTURES_DIR = os.path.dirname(os.path.abspath(concurrent.futures.__file__))


def _from_handler(tb: TracebackType | None) -> TracebackType | None:
    """`tb` less its leading frames of the runtime (and of asyncio and the future waited on,
    for an async handler)."""
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(
        (_RUNTIME_DIR, _ASYNCIO_DIR, _FUTURES_DIR)
    ):
        tb = tb.tb_next
    return tb


def _short_traceback(error: BaseException) -> str:
    """The last few frames of the handler's own code (the runtime's frames are left out)."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not os.path.abspath(frame.filename).startswith((_RUNTIME_DIR, _FUTURES_DIR))
    ][-TRACEBACK_FRAMES:]
    text = "".join(traceback.format_list(frames)) + "".join(
        traceback.format_exception_only(type(error), error)
    )
    return text[-TRACEBACK_CHARS:]
