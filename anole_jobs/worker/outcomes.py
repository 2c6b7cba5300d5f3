"""The end of a run, in one place: what an `Attempt` is, the writes that give a job back, the
one decision of whether an outcome was saved or lost, its log line, its `RUN_FINISHED` event
and the end of its span.

Every way a run ends comes through here: the completer after its batched write, the drain
after it put back a run that ignored its cancellation, and `jobs.step()` after its batch.

    executor (decode -> call -> decide) -> Attempt -> fenced write -> Outcomes.record

Log lines (logger `anole_jobs.worker`) carry the run's fields as `extra` (job_id, kind,
queue, attempt, max_attempts, outcome, duration, error_type, next_run_at), so a structured
formatter can emit them: completed and snoozed at INFO, retried and lost at WARNING, dead at
ERROR, the stored traceback of a failed attempt at DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from anole_jobs import events
from anole_jobs.core import ErrorEntry
from anole_jobs.leaninit import lean_init
from anole_jobs.records import Outcome
from anole_jobs.service import JobService
from anole_jobs.stores.base import ClaimedJob, Finish, RunRef
from anole_jobs.tracing import RunSpan
from anole_jobs.worker import logline

logger = logging.getLogger("anole_jobs.worker")


def give_back(run: RunRef, now: datetime) -> Finish:
    """The write that puts a claimed job back `available`, its attempt not counted
    (a drain, a job claimed but never started, a kind whose handler is gone)."""
    return Finish(run=run, state="available", at=now, scheduled_at=now, give_back_attempt=True)


@lean_init
@dataclass(frozen=True, kw_only=True)
class Attempt:
    """How one run ended, before its write: the outcome and the `Finish` that records it
    (None when nothing may be written: `lost`, or completed in the handler's transaction)."""

    claimed: ClaimedJob
    outcome: Outcome
    finish: Finish | None
    seconds: float
    span: RunSpan = field(default_factory=RunSpan)
    #: Set when `job.complete_in` committed the completion inside the handler's transaction.
    completed_in_transaction: bool = False
    #: What the handler raised (for the error reporter), None when it returned.
    raised: BaseException | None = None

    @property
    def error(self) -> ErrorEntry | None:
        return self.finish.error if self.finish is not None else None


class Outcomes:
    """Records the end of each run of one `JobService` service."""

    def __init__(self, service: JobService) -> None:
        self.service = service

    def write(self, attempts: Sequence[Attempt]) -> list[Outcome]:
        """Write the attempts' outcomes in one fenced call and record each; a store error is
        recorded as unsaved for all of them, then raised."""
        to_write = [attempt for attempt in attempts if attempt.finish is not None]
        try:
            written = self.service.store.finish([a.finish for a in to_write]) if to_write else []  # type: ignore[misc]
        except Exception:
            self.record_all([(attempt, None) for attempt in attempts])
            raise
        by_run = {a.claimed.run: ok for a, ok in zip(to_write, written, strict=True)}
        return self.record_all([(a, by_run.get(a.claimed.run, True)) for a in attempts])

    def record(self, attempt: Attempt, *, written: bool | None) -> Outcome:
        """The run's end, once its write is decided: `written` True (saved), False (the
        fence refused it: the job moved on without this run, `lost`) or None (the store did
        not answer: the outcome is unsaved and the job runs again after its lease)."""
        return self.record_all([(attempt, written)])[0]

    def record_all(self, ended: Sequence[tuple[Attempt, bool | None]]) -> list[Outcome]:
        """`record` for the runs one write decided: each run's log line and the end of its
        span, then one `RUNS_FINISHED` event for the batch (what metrics count), then each
        run's `RUN_FINISHED` (built only when someone listens to it). A listener woken by a
        run's `RUN_FINISHED` therefore sees its line, its span and its metrics done."""
        bus = self.service.bus
        each = events.RUN_FINISHED in bus.by_name
        batch = events.RUNS_FINISHED in bus.by_name
        outcomes: list[Outcome] = []
        finished: list[events.FinishedRun] = []
        for attempt, written in ended:
            saved = written is not None
            outcome: Outcome = "lost" if written is False else attempt.outcome
            if written is False and attempt.finish is not None and attempt.finish.logs:
                self._keep_last_lines(attempt.finish)
            error = attempt.error
            error_type = error.type if error is not None else None
            self._log(attempt, outcome, saved, error)
            attempt.span.end(outcome, error_type)
            outcomes.append(outcome)
            if each or batch:
                record = attempt.claimed.record
                finished.append(
                    events.FinishedRun(
                        record.queue,
                        record.kind,
                        record.id,
                        attempt.claimed.run.attempt,
                        record.max_attempts,
                        outcome,
                        attempt.seconds,
                        saved,
                        error_type,
                    )
                )
        if batch and finished:
            bus.emit(events.RUNS_FINISHED, runs=tuple(finished))
        if each:
            for run in finished:
                bus.emit(events.RUN_FINISHED, **run._asdict())
        return outcomes

    def _keep_last_lines(self, finish: Finish) -> None:
        """The job's-log lines of a run whose end the fence refused: kept if a cancel ended
        the job during the run (the store takes them then, see `Store.record_logs`), so the
        lines a handler logged while it wound down stay with the job. A rescued or retried
        job refuses them; a store error only costs these lines."""
        if finish.logs == "[]":
            return
        try:
            self.service.store.record_logs(finish.run, finish.logs, finish.logs_kept)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - a lost line must not lose the outcome's record
            logger.debug("job %s: its last log lines were not stored: %s", finish.run.id, exc)

    # -- the log line --------------------------------------------------------------------------
    def _log(
        self, attempt: Attempt, outcome: Outcome, saved: bool, error: ErrorEntry | None
    ) -> None:
        level = _level(outcome, saved)
        traceback = error is not None and error.traceback and logger.isEnabledFor(logging.DEBUG)
        line = logger.isEnabledFor(level)
        if not line and not traceback:
            return  # nothing to build: this runs once per job
        record = attempt.claimed.record
        finish = attempt.finish
        next_run_at = finish.scheduled_at if finish is not None else None
        fields: dict[str, Any] = {
            "job_id": record.id,
            "kind": record.kind,
            "queue": record.queue,
            "attempt": attempt.claimed.run.attempt,
            "max_attempts": record.max_attempts,
            "outcome": outcome,
            "duration": round(attempt.seconds, 6),
            "error_type": error.type if error is not None else None,
            "next_run_at": next_run_at.isoformat() if next_run_at is not None else None,
        }
        if line:
            head = (
                f"job {record.id} {record.kind} attempt {fields['attempt']}/"
                f"{record.max_attempts} on {record.queue}"
            )
            took = f"({attempt.seconds:.3f} s)"
            reason = f"{error.type}: {error.message}" if error is not None else ""
            if not saved:
                text = (
                    f"{head}: {outcome} but the outcome could not be saved (the store did not "
                    f"answer); it runs again after its lease {took}"
                )
            elif outcome == "retried":
                text = f"{head}: failed, {reason}; runs again {_when(next_run_at, finish)} {took}"
            elif outcome == "dead":
                text = f"{head}: dead (no attempts left), last error {reason} {took}"
            elif outcome == "snoozed":
                text = f"{head}: snoozed until {_at(next_run_at)} {took}"
            elif outcome == "lost":
                text = (
                    f"{head}: lost (its lease was taken over: rescued, cancelled or retried "
                    f"elsewhere); this run's outcome is dropped {took}"
                )
            elif outcome == "interrupted":
                text = f"{head}: interrupted, given back (the attempt does not count) {took}"
            else:
                text = f"{head}: {outcome} {took}"
            _emit(level, text, fields)
        if traceback:
            _emit(
                logging.DEBUG,
                f"job {record.id} attempt {fields['attempt']} traceback:\n"
                f"{error.traceback.rstrip()}",  # type: ignore[union-attr]
                fields,
            )


def _level(outcome: Outcome, saved: bool) -> int:
    if not saved or outcome == "dead":
        return logging.ERROR
    if outcome in ("retried", "lost"):
        return logging.WARNING
    return logging.INFO


def _emit(level: int, text: str, fields: dict[str, Any]) -> None:
    # A record made directly, as `logger.log` would, without its caller lookup (a stack walk
    # per line): this runs once per job, and the line's source is always this module. The
    # run's fields join the record in one update, not as `extra` (which logging checks key
    # by key against the record: none of them is a record attribute).
    logger.handle(logline.make_record(logger, level, text, __file__, fields))


def _at(moment: datetime | None) -> str:
    return moment.isoformat(timespec="seconds") if moment is not None else "later"


def _when(moment: datetime | None, finish: Finish | None) -> str:
    if moment is None or finish is None:
        return "later"
    seconds = (moment - finish.at).total_seconds()
    return f"in {seconds:.0f} s (at {_at(moment)})"
