"""The handler-facing `Job`: what a handler receives with its decoded arguments.

Control methods raise the `BaseException` subclasses of `errors`; waits and transactional
completion are delegated to a `RunControl` the runner supplies, so this module stays a leaf
(imports only `codec`, `durations` and `errors`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    def progress(self, done: object, total: object, message: object) -> None: ...
    def dependency_results(self) -> dict[str, Any]: ...
    def step(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        atomic: bool,
    ) -> Any: ...
    async def astep(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        atomic: bool,
    ) -> Any: ...
    def sleep_until(self, name: str, when: datetime | None, delay: timedelta | None) -> None: ...
    def wait_for_signal(self, name: str, timeout: timedelta) -> Any: ...


#: The longest step or signal name.
NAME_MAX = 200


def check_name(name: object, what: str = "step") -> str:
    """`name` when it is a usable step or signal name (a non-empty string of at most
    `NAME_MAX` characters that every store keeps), else `ValueError`."""
    if isinstance(name, str) and name and len(name) <= NAME_MAX and "\x00" not in name:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            pass
        else:
            return name
    raise ValueError(
        f"a {what} name is a non-empty string of at most {NAME_MAX} characters, not {name!r:.80}"
    )


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

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report how far the job is: `done` (a number) out of `total` (None: unknown), with
        an optional `message`. Shown on the job's page and by ``GET /jobs/<id>`` while it runs
        (`JobRecord.progress`): stored at most about once a second, and the last report of
        an attempt always with its end. Raises `TypeError` for values that are not numbers
        (`message`: not a string); a message is cut to 2,000 characters."""
        self._control.progress(done, total, message)

    def dependency_results(self) -> dict[str, Any]:
        """``{step name: result}`` of the completed steps this workflow step ran after (a
        step with ``ignore_failed`` sees only those that completed); ``{}`` outside a
        workflow."""
        if self.workflow_id is None:
            return {}
        return self._control.dependency_results()

    # -- durable execution (docs/durable.md) ------------------------------------------------
    def step(
        self, name: str, fn: Callable[..., T], /, *args: Any, atomic: bool = False, **kwargs: Any
    ) -> T:
        """Run ``fn(*args, **kwargs)`` once across every attempt of this job: its JSON return
        value is recorded under `name`, and a later attempt's call gets it back without
        calling `fn`. A raising `fn` records nothing. `atomic=True` (database store only)
        runs `fn` inside ``transaction.atomic()`` on the store's database with the record
        written in the same transaction."""
        return self._control.step(check_name(name), fn, args, kwargs, atomic=atomic)

    async def astep(
        self,
        name: str,
        fn: Callable[..., Any],
        /,
        *args: Any,
        atomic: bool = False,
        **kwargs: Any,
    ) -> Any:
        """`step` for async handlers: awaits `fn` when it is an ``async def``."""
        return await self._control.astep(check_name(name), fn, args, kwargs, atomic=atomic)

    def sleep_for(self, name: str, duration: Duration) -> None:
        """A durable sleep: the first call records the wake-up time (now + `duration`) as step
        `name` and ends this attempt without counting it; the job waits ``scheduled``,
        holding no worker. A later attempt's call returns None once that time has passed."""
        check_name(name)
        self._control.sleep_until(name, None, _delay(duration, "sleep_for duration"))

    def sleep_until(self, name: str, when: datetime) -> None:
        """`sleep_for` to an aware datetime `when`."""
        check_name(name)
        if not isinstance(when, datetime) or when.tzinfo is None:
            raise ValueError(f"sleep_until needs an aware datetime, not {when!r}")
        self._control.sleep_until(name, when, None)

    def wait_for_signal(self, name: str, timeout: Duration) -> Any:
        """The payload of signal `name` (`jobs.signal`) once it is stored. Until then the
        first call records a deadline (now + `timeout`) and ends this attempt without
        counting it: the job waits ``scheduled`` until the signal wakes it or the deadline
        passes. A call after the deadline without the signal raises `SignalTimeout`."""
        check_name(name, "signal")
        return self._control.wait_for_signal(name, _delay(timeout, "wait_for_signal timeout"))

    def complete_in(self, *, using: str) -> None:
        """Mark this job completed inside the open `transaction.atomic(using=...)`, so
        the job completes if and only if the transaction commits."""
        self._control.complete_in(using)
