"""Error reporting (docs/observability.md#error-reporting): the callable that
``ANOLE_JOBS["ERROR_REPORTER"]`` names, called once per failed attempt with the exception and
a `FailureContext`, and `sentry`, a ready reporter for sentry-sdk.

`ErrorReporting` is what the worker holds: it resolves the setting once, builds nothing when no
reporter is set, and calls the reporter so that nothing it does can break a run (its errors
are caught and logged, one line each, on the ``anole_jobs.reporting`` logger).

A leaf module: it imports only the standard library, Django's `import_string`, `errors` and
`jsontext` (sentry-sdk only inside `sentry`, when it is called or checked).
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.utils.module_loading import import_string

from anole_jobs import jsontext
from anole_jobs.errors import ConfigurationError

logger = logging.getLogger("anole_jobs.reporting")

#: What ``ERROR_REPORTER`` names: ``reporter(exception, context)``; its return value is ignored.
Reporter = Callable[[BaseException, "FailureContext"], object]
SENTRY_HINT = 'install the sentry extra: pip install "/path/to/anole_jobs[sentry]"'


@dataclass(frozen=True, kw_only=True)
class FailureContext:
    """What a reporter learns about the failed attempt. Never the job's arguments (they may
    hold personal data): only the size of their JSON text."""

    job_id: int
    kind: str
    queue: str
    #: This attempt's number, from 1.
    attempt: int
    max_attempts: int
    #: The size of the job's arguments as JSON text, in UTF-8 bytes.
    args_bytes: int
    #: The run span's trace id (32 hex digits), or None when tracing is off.
    trace_id: str | None
    #: "retried": the job runs again at `next_run_at`; "dead": it will not run again.
    outcome: Literal["retried", "dead"]
    #: The type recorded in the job's errors: the exception's class, "Timeout" or "Discarded".
    error_type: str
    next_run_at: datetime | None = None

    @property
    def will_retry(self) -> bool:
        return self.outcome == "retried"

    @property
    def dead(self) -> bool:
        return self.outcome == "dead"

    def as_dict(self) -> dict[str, Any]:
        """The context as JSON-ready values (`next_run_at` in ISO 8601)."""
        return {
            "job_id": self.job_id,
            "kind": self.kind,
            "queue": self.queue,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "args_bytes": self.args_bytes,
            "trace_id": self.trace_id,
            "outcome": self.outcome,
            "will_retry": self.will_retry,
            "error_type": self.error_type,
            "next_run_at": self.next_run_at.isoformat() if self.next_run_at else None,
        }


class TimedOut(Exception):  # noqa: N818 - named for what the reporter sees
    """Stands for a run that exceeded its kind's timeout; it carries the traceback of the
    wait at which the handler was cancelled."""


def args_bytes(args: object) -> int:
    """The size of `args` as compact JSON text, in UTF-8 bytes (as the store keeps it)."""
    try:
        return len(jsontext.compact(args).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return -1  # not JSON (never expected from a stored job): an unknown size


# -- the setting -------------------------------------------------------------------------------
def resolve(value: str | Reporter) -> Reporter:
    """The reporter `value` names; raises `ConfigurationError` saying what is wrong."""
    target: object = value
    if isinstance(value, str):
        try:
            target = import_string(value)
        except Exception as exc:  # noqa: BLE001 - ImportError, or the module's own failure
            raise ConfigurationError(
                f"ANOLE_JOBS['ERROR_REPORTER'] {value!r} cannot be imported: "
                f"{type(exc).__name__}: {exc}"
            ) from None
    if not callable(target):
        raise ConfigurationError(
            f"ANOLE_JOBS['ERROR_REPORTER'] must be a callable(exception, context), got {target!r}"
        )
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004 - an instance with an async __call__
    ):
        raise ConfigurationError(
            f"ANOLE_JOBS['ERROR_REPORTER'] {_name(target)} is async; it must be a plain "
            "function (it is called in the worker's thread, which runs no event loop)"
        )
    if isinstance(target, SentryReporter):
        target.require()
    return target


def setting_problem(value: object) -> str | None:
    """What is wrong with `value` as ``ERROR_REPORTER`` (for the system check), or None."""
    if value is None:
        return None
    if not isinstance(value, str) and not callable(value):
        return "ANOLE_JOBS['ERROR_REPORTER'] must be a dotted path or a callable"
    try:
        resolve(value)
    except ConfigurationError as exc:
        return str(exc)
    return None


#: The run-time problems with the setting already logged (once per process, not per pool).
_said: set[str] = set()
_said_lock = threading.Lock()


class ErrorReporting:
    """Calls the configured reporter, safely. One per executor; thread-safe."""

    def __init__(self, setting: str | Reporter | None) -> None:
        self.setting = setting
        self._lock = threading.Lock()
        self._reporter: Reporter | None = None
        self._resolved = setting is None

    @property
    def enabled(self) -> bool:
        return self._load() is not None

    def _load(self) -> Reporter | None:
        if self._resolved:
            return self._reporter
        with self._lock:
            if not self._resolved and self.setting is not None:
                try:
                    self._reporter = resolve(self.setting)
                except ConfigurationError as exc:
                    # `manage.py check` reports it too; at run time, say it once and go on.
                    with _said_lock:
                        first = str(exc) not in _said
                        _said.add(str(exc))
                    if first:
                        logger.error("%s; failed jobs are not reported", exc)
                self._resolved = True
        return self._reporter

    def report(self, error: BaseException, context: FailureContext) -> None:
        reporter = self._load()
        if reporter is None:
            return
        try:
            reporter(error, context)
        except KeyboardInterrupt:
            raise  # a real Ctrl-C on `jobs.step()` still stops the step
        except BaseException as exc:  # noqa: BLE001 - a reporter must not break the run
            logger.error(
                "error reporter %s failed for job %s (%s attempt %s/%s on %s): %s: %s; "
                "this failure was not reported",
                self.setting if isinstance(self.setting, str) else _name(reporter),
                context.job_id,
                context.kind,
                context.attempt,
                context.max_attempts,
                context.queue,
                type(exc).__name__,
                _one_line(exc),
                extra={"job_id": context.job_id, "kind": context.kind, "queue": context.queue},
            )
            logger.debug("error reporter traceback", exc_info=exc)


def _name(target: object) -> str:
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}.{name}" if module else str(name)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:500] + ("..." if len(text) > 500 else "")


# -- Sentry ------------------------------------------------------------------------------------
class SentryReporter:
    """Sends each failed attempt to Sentry through sentry-sdk (set up by the project's own
    ``sentry_sdk.init``), with the job's context as tags and a ``job`` context."""

    def require(self) -> None:
        try:
            import sentry_sdk  # noqa: F401
        except ImportError:
            raise ConfigurationError(
                "ANOLE_JOBS['ERROR_REPORTER'] is anole_jobs.reporting.sentry but sentry-sdk "
                f"is not installed ({SENTRY_HINT})"
            ) from None

    def __call__(self, error: BaseException, context: FailureContext) -> None:
        self.require()
        import sentry_sdk
        from sentry_sdk.utils import event_from_exception

        with sentry_sdk.new_scope() as scope:
            scope.set_tag("job.kind", context.kind)
            scope.set_tag("job.queue", context.queue)
            scope.set_tag("job.attempt", str(context.attempt))
            scope.set_tag("job.id", str(context.job_id))
            scope.set_tag("job.outcome", context.outcome)
            scope.set_context("job", context.as_dict())
            scope.set_transaction_name(context.kind)
            event, hint = event_from_exception(
                error,
                client_options=sentry_sdk.get_client().options,
                # handled=False: the handler did not handle it; anole_jobs caught it for it.
                mechanism={"type": "anole_jobs", "handled": False},
            )
            sentry_sdk.capture_event(event, hint=hint)


#: The ready Sentry reporter: ``"ERROR_REPORTER": "anole_jobs.reporting.sentry"``.
sentry = SentryReporter()
