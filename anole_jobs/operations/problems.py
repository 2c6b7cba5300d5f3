"""The one map from what went wrong to what a person is told.

An operation raises `BadInput` (a filter, name or body that cannot be used) or `NotFound`
(no such job, cron entry or queue); the facade raises `InvalidJob` for input it refuses,
`JobNotFound` for a job that is not there (deleted between an operation's read and its act)
and `StoreUnavailable` (or a database error) when the store does not answer. `problem_of` turns
each into a `Problem`: a status (400, 404, 503), a short code, a sentence for people and the
headers to send (``Retry-After`` on 503). The JSON routes answer it as JSON, the HTML pages as
a page with the same status, the CLI as exit status 1 and one line on stderr.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db import DatabaseError, InterfaceError, OperationalError

from anole_jobs.errors import (
    RUN_MIGRATE,
    AnoleJobsError,
    InvalidJob,
    JobNotFound,
    StoreUnavailable,
    missing_schema,
)

logger = logging.getLogger("anole_jobs.admin")

#: Seconds a client should wait before trying again after a store outage.
RETRY_AFTER = 5


class OperationError(AnoleJobsError):
    """Input an operation cannot serve; `status` and `code` say how surfaces answer it."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code


class BadInput(OperationError):
    """A filter, name or body that cannot be used; `field` names it."""

    def __init__(self, field: str, message: str, *, code: str = "bad_request") -> None:
        super().__init__(message, code=code)
        self.field = field


class NotFound(OperationError):
    """No such job, cron entry or queue (a malformed id is one that cannot exist)."""

    status = 404
    code = "not_found"


@dataclass(frozen=True, kw_only=True)
class Problem:
    """What to tell a person: a status, a short machine-readable code, a sentence."""

    status: int
    code: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Something to try instead (e.g. the path without its trailing slash).
    hint: str | None = None


def _missing_table(exc: BaseException) -> bool:
    return missing_schema(exc)


def one_line(text: object) -> str:
    """`text` with every run of whitespace (newlines included) made one space: a driver's
    error may span lines (psycopg's does), and a CLI message or log line must not."""
    return " ".join(str(text).split())


def _outage(exc: BaseException, *, log: bool) -> Problem:
    hint = f" ({RUN_MIGRATE})" if _missing_table(exc) else ""
    reason = one_line(exc)
    if log:
        logger.warning("jobs admin: the store did not answer: %s", reason)
    return Problem(
        status=503,
        code="store_unavailable",
        message=f"the jobs store did not answer ({reason}){hint}; try again",
        headers={"Retry-After": str(RETRY_AFTER)},
    )


def problem_of(exc: BaseException, *, log: bool = True) -> Problem | None:
    """The `Problem` to show for `exc`, or None when it is not one a person caused or can
    wait out (a bug: let it propagate). An outage is logged unless `log` is false (the CLI,
    whose one line on stderr is the record: Python prints an unconfigured logger's warning
    on stderr too, which would make it two)."""
    if isinstance(exc, OperationError):
        return Problem(status=exc.status, code=exc.code, message=exc.message, hint=exc.hint)
    if isinstance(exc, InvalidJob):
        return Problem(status=400, code="bad_request", message=str(exc))
    if isinstance(exc, JobNotFound):
        return Problem(status=404, code="not_found", message=f"no job with id {exc.job_id}")
    if isinstance(exc, StoreUnavailable | OperationalError | InterfaceError):
        return _outage(exc, log=log)
    if isinstance(exc, DatabaseError) and _missing_table(exc):
        return _outage(exc, log=log)
    return None


#: What `problem_of` maps; surfaces catch these and nothing else.
EXPECTED: tuple[type[BaseException], ...] = (
    OperationError,
    InvalidJob,
    JobNotFound,
    StoreUnavailable,
    DatabaseError,
)
