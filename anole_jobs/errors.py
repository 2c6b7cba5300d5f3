"""The errors a user of anole_jobs can meet, and the control exceptions handlers raise.

A leaf module: it imports nothing from the rest of the package.

Control exceptions (`Snooze`, `Discard`, `RetryIn`) and `Canceled` derive from
`BaseException` so that a handler's bare ``except Exception`` does not swallow them.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured

__all__ = [
    "AnoleJobsError",
    "Canceled",
    "ConfigurationError",
    "ControlFlow",
    "Discard",
    "InvalidJob",
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


class Canceled(BaseException):  # noqa: N818 - a public name users already catch
    """The run was cancelled (timeout, drain, lost lease); raised at the handler's next wait.

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
