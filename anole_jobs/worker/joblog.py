"""The job's log: the records of level INFO and above that any logger emits in the handler's
thread (or in its asyncio task, and the tasks it starts) while an attempt runs, kept with the
job by the write that ends the attempt (docs/timeline.md).

The capture is a context variable that the executor sets around the handler's call: set in
the thread that calls the handler, and copied into every asyncio task created from there, so
several handlers running at once, in threads or as tasks of one event loop, each keep their
own lines. A job that logs nothing costs one context variable set and reset per attempt.

Every logger passes its records through `Logger.callHandlers`, so that is where the capture
looks (a handler on the root logger would miss loggers that do not propagate). A logger whose
level (often the root's WARNING, by default) would drop an INFO record still makes it while a
capture is on, for the job's log only: no other handler sees a record its logger's level
refused. `logging.disable()` and disabled loggers are honoured.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from anole_jobs import timeline

_current: ContextVar[Capture | None] = ContextVar("anole_jobs_job_log", default=None)
_install_lock = threading.Lock()
_installed = False

_is_enabled_for = logging.Logger.isEnabledFor
_call_handlers = logging.Logger.callHandlers
_INFO = logging.INFO


class Capture:
    """The log records of one attempt, the newest `keep` of them."""

    __slots__ = ("attempt", "clock", "keep", "lines", "token", "_busy")

    def __init__(self, attempt: int, clock: Callable[[], datetime], keep: int) -> None:
        """Capture from now on, in this thread (or task): `end` stops it."""
        self.attempt = attempt
        self.clock = clock
        self.keep = keep
        self.lines: deque[dict[str, Any]] | None = None  # made by the first record
        self._busy = False
        self.token: Any = _current.set(self)

    def add(self, record: logging.LogRecord) -> None:
        if self._busy:  # a record logged while this one is being kept (by the clock, say)
            return
        self._busy = True
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                message = f"{message}\n{type(error).__name__}: {error}"
            if self.lines is None:
                self.lines = deque(maxlen=self.keep)
            self.lines.append(
                {
                    "attempt": self.attempt,
                    "at": self.clock().isoformat(),
                    "level": record.levelname,
                    "logger": record.name,
                    "message": timeline.bounded(message),
                }
            )
        except Exception:  # noqa: BLE001 - a bad format string is the caller's; never raise here
            pass
        finally:
            self._busy = False

    def encoded(self) -> str | None:
        """The lines as one JSON array (None when there are none)."""
        return timeline.encode(list(self.lines)) if self.lines else None


def begin(keep: int, attempt: int, clock: Callable[[], datetime]) -> Capture | None:
    """Start capturing this thread's (and task's) records for an attempt; None when `keep`
    is 0 (no job log)."""
    if keep <= 0:
        return None
    if not _installed:
        install()
    return Capture(attempt, clock, keep)


def end(capture: Capture | None) -> None:
    """Stop the capture `begin` started (in the same thread or task)."""
    if capture is None:
        return
    token = capture.token
    if token is not None:
        capture.token = None
        try:
            _current.reset(token)
        except ValueError:  # reset from another context: leave that one as it is
            _current.set(None)


def current() -> Capture | None:
    """The capture on in this thread or task, if any."""
    return _current.get()


def install() -> None:
    """Route records through the capture (once per process; see the module docstring)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        logging.Logger.isEnabledFor = _enabled_for  # type: ignore[method-assign]
        logging.Logger.callHandlers = _handlers  # type: ignore[method-assign]
        _installed = True


def _enabled_for(self: logging.Logger, level: int) -> bool:
    if _is_enabled_for(self, level):
        return True
    return (
        level >= _INFO
        and _current.get() is not None
        and not self.disabled
        and self.manager.disable < level
    )


def _handlers(self: logging.Logger, record: logging.LogRecord) -> None:
    capture = _current.get()
    if capture is not None and record.levelno >= logging.INFO:
        capture.add(record)
        if not _is_enabled_for(self, record.levelno):
            return  # made for the job's log only: its logger's level refuses it elsewhere
    _call_handlers(self, record)
