"""The job's log: the records of level INFO and above that any logger emits in the handler's
thread (or in its asyncio task, and the tasks it starts) while an attempt runs, kept with the
job by the write that ends the attempt (docs/timeline.md). While a long attempt runs, the
runtime's `LogFlusher` stores the lines made so far about once a second, so they show while
the job runs and stay if the attempt never writes its end (a cancel, a killed worker); the
end's write then carries only the lines not stored yet.

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
from anole_jobs.bounds import storable_text

_current: ContextVar[Capture | None] = ContextVar("anole_jobs_job_log", default=None)
_install_lock = threading.Lock()
_installed = False

_is_enabled_for = logging.Logger.isEnabledFor
_call_handlers = logging.Logger.callHandlers
_INFO = logging.INFO


class LiveCaptures:
    """The captures of the attempts running in one runtime that have logged a line, by run:
    what its `LogFlusher` stores while they run. An attempt joins at its first line, so one
    that logs nothing costs nothing here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: dict[Any, Capture] = {}

    def add(self, run: Any, capture: Capture) -> None:
        with self._lock:
            self._by_run[run] = capture

    def remove(self, run: Any) -> None:
        with self._lock:
            self._by_run.pop(run, None)

    def items(self) -> list[tuple[Any, Capture]]:
        """A copy: (run, capture) of each attempt that has logged."""
        with self._lock:
            return list(self._by_run.items())


class Capture:
    """The log records of one attempt, the newest `keep` of them, and how many of them the
    store has already (`store_pending` while the attempt runs, `encoded` at its end)."""

    __slots__ = (
        "attempt",
        "clock",
        "keep",
        "last",
        "lines",
        "live",
        "run",
        "seen",
        "token",
        "_added",
        "_busy",
        "_ended",
        "_lock",
        "_stored",
        "_writing",
    )

    def __init__(self, attempt: int, clock: Callable[[], datetime], keep: int) -> None:
        """Capture from now on, in this thread (or task): `end` stops it."""
        self.attempt = attempt
        self.clock = clock
        self.keep = keep
        self.lines: deque[dict[str, Any]] | None = None  # made by the first record
        # Where the attempt joins at its first line to be stored while it runs (`LogFlusher`),
        # and its run: set by a worker's executor, None in `jobs.step()`.
        self.live: LiveCaptures | None = None
        self.run: Any = None
        self.seen = False  # the flusher has met this attempt before (it is not brand new)
        # The attempt ended with no write of its own (its run was lost: a cancel, or the job
        # moved on): the flusher stores what is left once, then forgets it.
        self.last = False
        self._busy = False
        self._added = 0  # lines ever added (`lines` keeps the newest `keep`)
        self._stored = 0  # of those, how many the store has
        # Made with the first line (most attempts log nothing): the handler's thread (or the
        # loop) adds lines while the flusher's thread stores them; the lock guards the counts
        # and is never held through a store call.
        self._lock: threading.Condition | None = None
        self._ended = False  # the attempt's end carries what is left: no more flushes
        self._writing = False  # a flush's store call is in flight
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
            line = {
                "attempt": self.attempt,
                "at": self.clock().isoformat(),
                "level": storable_text(record.levelname),
                "logger": storable_text(record.name),
                "message": timeline.bounded(message),
            }
            if self._lock is None:
                self._lock = threading.Condition(threading.Lock())
                self.lines = deque(maxlen=self.keep)
                if self.live is not None:
                    self.live.add(self.run, self)
            with self._lock:
                assert self.lines is not None
                self.lines.append(line)
                self._added += 1
        except Exception:  # noqa: BLE001 - a bad format string is the caller's; never raise here
            pass
        finally:
            self._busy = False

    def _pending(self) -> list[dict[str, Any]]:
        """The lines the store does not have yet (under `_lock`)."""
        waiting = min(self._added - self._stored, len(self.lines or ()))
        return list(self.lines)[-waiting:] if waiting > 0 and self.lines else []

    @property
    def has_pending(self) -> bool:
        return not self._ended and self._added > self._stored

    def store_pending(self, write: Callable[[str], bool]) -> None:
        """While the attempt runs: hand the lines the store does not have yet to `write`
        (JSON array text), which says whether it stored them; stored lines are not sent
        again, and False (the run is no longer current) or an error ends the flushes. Nothing
        once `encoded` has run: the attempt's end carries the rest."""
        lock = self._lock
        if lock is None:
            return
        with lock:
            if self._ended or self._writing:
                return
            pending = self._pending()
            if not pending:
                return
            added = self._added
            self._writing = True
        stored = False
        try:
            stored = write(timeline.encode(pending))
        finally:
            with lock:
                self._writing = False
                if stored:
                    self._stored = max(self._stored, added)
                else:
                    self._ended = True  # fenced out, or the store failed: the end carries them
                lock.notify_all()

    def encoded(self) -> str | None:
        """The lines the store does not have yet, as one JSON array (None when there are
        none), for the write that ends the attempt. A flush in flight is waited for (one
        store call, rarely): its lines are then either stored or carried here, never both."""
        lock = self._lock
        if lock is None:
            return None
        with lock:
            self._ended = True
            lock.wait_for(lambda: not self._writing)
            pending = self._pending()
            return timeline.encode(pending) if pending else None


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
