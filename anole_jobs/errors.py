"""The errors a user of anole_jobs can meet, and the control exceptions handlers raise.

A leaf module: it imports nothing from the rest of the package.

Control exceptions (`Snooze`, `Discard`, `RetryIn`) and `Canceled` derive from
`BaseException` so that a handler's bare ``except Exception`` does not swallow them: a
decision or a cancellation must reach the runtime. Every other `BaseException` a handler
raises (`SystemExit`, `KeyboardInterrupt`, ...) fails its attempt like an error.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "AnoleJobsError",
    "Canceled",
    "ConfigurationError",
    "ControlFlow",
    "Discard",
    "InvalidJob",
    "JobFailed",
    "JobNotFinished",
    "JobNotFound",
    "ResultTooLarge",
    "RetryIn",
    "Snooze",
    "StoreUnavailable",
]


class AnoleJobsError(Exception):
    """Base class of the errors anole_jobs raises on purpose."""


class InvalidJob(AnoleJobsError, ValueError):
    """A job that cannot be enqueued, decoded or completed as asked.

    Raised for an undecorated args type, arguments that are not JSON or break the field rules,
    a priority out of range, and ``enqueue_in``/``complete_in`` outside a usable transaction.
    The message says what to change.
    """


class ConfigurationError(ImproperlyConfigured):
    """``settings.ANOLE_JOBS`` (or the store it names) cannot be used; the message says why."""


class StoreUnavailable(AnoleJobsError):
    """The store could not be reached (a broken connection). The write may or may not have
    happened (a reply can be lost after the command ran); fenced writes make a retry safe."""


#: PostgreSQL's SQLSTATEs for a table and a function the database does not have.
_UNDEFINED = frozenset({"42P01", "42883"})
#: What to do about a schema that is missing or older than the code.
RUN_MIGRATE = "run `manage.py migrate`"


def missing_schema(exc: BaseException) -> bool:
    """Whether `exc` says the database lacks one of the store's tables or functions: its
    migrations are not (all) applied. Read from the driver's SQLSTATE where it has one
    (psycopg, under Django's wrapper), else from SQLite's message."""
    for error in (exc, exc.__cause__):
        if getattr(error, "sqlstate", None) in _UNDEFINED:
            return True
    text = str(exc)
    return "no such table" in text or (
        ("relation" in text or "function" in text) and "does not exist" in text
    )


def missing_column(exc: BaseException) -> bool:
    """Whether `exc` says a column of the store's tables is missing (a database migrated by
    an older release: the store answered, and its pending migrations say what to do)."""
    for error in (exc, exc.__cause__):
        if getattr(error, "sqlstate", None) == "42703":
            return True
    text = str(exc)
    return "no such column" in text or ("column" in text and "does not exist" in text)


class JobFailed(AnoleJobsError):
    """`jobs.result` of a job that ended without completing: ``dead`` (out of attempts or
    discarded) or ``cancelled``. `record` is the job as it ended; its last error says why."""

    def __init__(self, record: Any) -> None:  # a `JobRecord` (this module imports no store)
        last = record.errors[-1] if record.errors else None
        why = f": {last.get('type')}: {last.get('message')}" if last else ""
        super().__init__(f"job {record.id} ({record.kind}) ended {record.state}{why}")
        self.record = record


class JobNotFound(AnoleJobsError, LookupError):
    """No job has this id: it was never enqueued, or was deleted or pruned since. Raised by
    the calls that act on one job and answer it (`jobs.retry`, `jobs.cancel`, `jobs.result`);
    the admin surfaces answer it as not found (404, exit status 1). `jobs.get` answers None
    instead, and `jobs.delete` False: for them "no such job" is an answer, not an error."""

    def __init__(self, job_id: int) -> None:
        super().__init__(f"no job with id {job_id} (never enqueued, deleted or pruned)")
        self.job_id = job_id


class JobNotFinished(AnoleJobsError, TimeoutError):
    """`jobs.result` of a job that has not finished yet (at once without a timeout, after it
    with one). `record` is the job as it stands; call again, or wait longer."""

    def __init__(self, record: Any, *, waited: float | None = None) -> None:
        if waited is None:
            tail = "pass timeout= to wait for it"
        else:
            tail = f"waited {waited:g} s; wait longer, or look again later"
        super().__init__(f"job {record.id} ({record.kind}) is {record.state}, not finished: {tail}")
        self.record = record


class ResultTooLarge(AnoleJobsError):
    """A handler returned a value whose JSON is over ``MAX_RESULT_BYTES``: the attempt fails
    with this error type (and is retried like any failure). Store large results elsewhere (a
    file, a model) and return their key."""


class Canceled(asyncio.CancelledError):  # noqa: N818 - a public name, kept as released
    """The run was cancelled (timeout, drain, lost lease); raised at the handler's next wait.

    An `asyncio.CancelledError` (so a `BaseException`, not an `Exception`): an async handler's
    pending `await` raises `CancelledError` when its run is cancelled, and this one is one too.

    Let it propagate: a handler that catches it and returns normally is recorded as completed.
    """

    def __init__(self, reason: str = "canceled") -> None:
        super().__init__(reason)
        self.reason = reason


class ControlFlow(BaseException):  # noqa: N818 - not an error, a decision
    """Base of the exceptions `Job.snooze`, `Job.discard` and `Job.retry_in` raise."""


class Snooze(ControlFlow):
    def __init__(self, delay: timedelta) -> None:
        super().__init__(f"snooze for {delay}")
        self.delay = delay


class Discard(ControlFlow):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RetryIn(ControlFlow):
    def __init__(self, delay: timedelta) -> None:
        super().__init__(f"retry in {delay}")
        self.delay = delay


class SignalTimeout(TimeoutError):
    """`job.wait_for_signal(name, timeout=...)` ran past its deadline without the signal: the
    deadline was recorded by its first call, so reruns keep it (docs/durable.md). Stored on
    the job as error type ``SignalTimeout`` when the handler lets it out."""


class Parked(ControlFlow):
    """Raised by `job.sleep_for`, `job.sleep_until` and `job.wait_for_signal` once the job
    was written back ``scheduled`` (the attempt not counted): the handler's run ends here."""

    def __init__(self, until: datetime) -> None:
        super().__init__(f"parked until {until.isoformat()}")
        self.until = until
