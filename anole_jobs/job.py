"""The handler-facing `Job`: what a handler receives with its decoded arguments.

Control methods raise the `BaseException` subclasses of `errors`; waits and transactional
completion are delegated to a `RunControl` the runner supplies, so this module stays a leaf
(imports only `codec`, `durations` and `errors`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from anole_jobs.codec import DecodeError, decode_args, encode_value
from anole_jobs.durations import Duration, to_timedelta
from anole_jobs.errors import Discard, InvalidJob, RetryIn, Snooze

T = TypeVar("T")


class RunControl(Protocol):
    """What a running attempt offers its handler; supplied by the executor."""

    def sleep(self, delay: timedelta) -> None: ...
    def check_cancelled(self) -> None: ...
    def complete_in(self, using: str) -> None: ...
    def record_output(self, output: Any) -> None: ...
    def record_meta(self, key: str, value: Any) -> None: ...
    def dependency_results(self) -> dict[str, Any]: ...


def _delay(value: Duration, what: str) -> timedelta:
    try:
        return to_timedelta(value, name=what)
    except ValueError as exc:
        raise InvalidJob(str(exc)) from None


class Job:
    """One attempt of one job, as its handler sees it."""

    def __init__(
        self,
        *,
        id: int,
        kind: str,
        queue: str,
        args: Mapping[str, Any],
        meta: Mapping[str, Any],
        attempt: int,
        max_attempts: int,
        priority: int,
        created_at: datetime,
        scheduled_at: datetime,
        control: RunControl,
        trace_id: str | None = None,
        span_id: str | None = None,
        workflow_id: str | None = None,
        step_name: str | None = None,
    ) -> None:
        self.id = id
        self.kind = kind
        self.queue = queue
        # A row written behind the store's back may hold arguments that are not an object:
        # keep them as they are so decoding discards the job with a message, rather than
        # failing here, around the handler, on every attempt. A meta that is not an object is
        # only lost trace context.
        self.args: dict[str, Any] = dict(args) if isinstance(args, Mapping) else args
        self.meta: dict[str, Any] = dict(meta) if isinstance(meta, Mapping) else {}
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.priority = priority
        self.created_at = created_at
        self.scheduled_at = scheduled_at
        self.trace_id = trace_id
        self.span_id = span_id
        #: The workflow this job is a step of, and its step's name (None outside one).
        self.workflow_id = workflow_id
        self.step_name = step_name
        self._control = control
        self._explanations: list[str] = []

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.kind} attempt {self.attempt}/{self.max_attempts}>"

    # -- trace context: what the enqueuer's span carried ------------------------------------
    def traceparent(self) -> str | None:
        """The enqueuer's trace context, as stored in `meta`."""
        value = self.meta.get("traceparent")
        return value if isinstance(value, str) else None

    def tracestate(self) -> str | None:
        value = self.meta.get("tracestate")
        return value if isinstance(value, str) else None

    # -- decisions: snooze, discard, retry (docs/concepts.md) -------------------------------
    def snooze(self, delay: Duration) -> None:
        """Run again after `delay`; this attempt is not counted."""
        raise Snooze(_delay(delay, "snooze delay"))

    def discard(self, reason: str) -> None:
        """Give up now: the job becomes dead with `reason` stored as a `Discarded` error."""
        raise Discard(str(reason))

    def retry_in(self, delay: Duration) -> None:
        """A failed attempt, retried after `delay` instead of the kind's backoff."""
        raise RetryIn(_delay(delay, "retry delay"))

    def explain(self, fmt: str, *args: object) -> None:
        """Store a message with the next error (``%``-formatted, like `logging`)."""
        self._explanations.append(fmt % args if args else fmt)

    @property
    def explanations(self) -> list[str]:
        return list(self._explanations)

    # -- helpers ---------------------------------------------------------------------------
    def bind(self, args_type: type[T]) -> T:
        """Decode the raw arguments into `args_type`; a violation discards the job."""
        try:
            return decode_args(args_type, self.args)
        except DecodeError as exc:
            raise Discard(str(exc)) from None

    def sleep(self, delay: Duration) -> None:
        """Wait `delay`, or raise `Canceled` as soon as the run is cancelled."""
        self._control.sleep(_delay(delay, "sleep delay"))

    def check_cancelled(self) -> None:
        """Raise `Canceled` if the run was cancelled (timeout, drain, lost lease)."""
        self._control.check_cancelled()

    def record_output(self, output: object) -> None:
        """Store `output` (JSON: a dict, list, str, number, bool or None) as this run's result,
        in the job's meta under ``"output"``, at once (a later run overwrites it). Raises
        `InvalidJob` for a value that is not JSON, and `Canceled` when the run was lost."""
        encoded = encode_value(output, name="output")
        self._control.record_output(encoded)
        self.meta["output"] = encoded

    def record_meta(self, key: str, value: object) -> None:
        """Store `value` (JSON) under `key` in the job's meta at once, fenced like
        `record_output`, for bookkeeping that must outlive this attempt (the django.tasks
        backend keeps the first attempt's start there). It is written even after the run was
        cancelled (a timeout), as long as the run is still the job's current one; raises
        `Canceled` when it is not. Use `record_output` for the run's result."""
        if key == "output":
            raise InvalidJob('meta["output"] is the run\'s result: use record_output')
        encoded = encode_value(value, name=f"meta[{key!r}]")
        self._control.record_meta(key, encoded)
        self.meta[key] = encoded

    def dependency_results(self) -> dict[str, Any]:
        """``{step name: result}`` of the completed steps this workflow step ran after (a
        step with ``ignore_failed`` sees only those that completed); ``{}`` outside a
        workflow."""
        if self.workflow_id is None:
            return {}
        return self._control.dependency_results()

    def complete_in(self, *, using: str) -> None:
        """Mark this job completed inside the open `transaction.atomic(using=...)`, so
        the job completes if and only if the transaction commits."""
        self._control.complete_in(using)
