"""Cancellation of one run: a flag set by a timeout, a drain or a lost lease, raised as
`Canceled` at the handler's next wait.

The timeout is a deadline the scope checks itself at every wait (and a sleep wakes for), so
no timer thread is needed: the runtime and `jobs.step()` enforce it the same way.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, Literal

from django.db import connections

from anole_jobs.clock import monotonic
from anole_jobs.errors import Canceled

Reason = Literal["timeout", "drain", "lost"]


class CancelScope:
    """Whether (and why) a run was cancelled; waits that end early when it is."""

    def __init__(self, *, waits: bool = True) -> None:
        self.reason: Reason | None = None
        self._cancelled = False
        # Made on the first wait only: most runs never wait, and an Event (a Condition and
        # its lock) is the dearest part of a scope; this is built once per job.
        self._event: threading.Event | None = None
        # Manual mode (`jobs.step()`) never waits for time to pass: sleep only checks.
        self._waits = waits
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.deadline: float | None = None  # monotonic; past it the run is cancelled "timeout"

    def time_out_after(self, seconds: float) -> None:
        self.deadline = monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left before the timeout (None: no timeout)."""
        return None if self.deadline is None else max(0.0, self.deadline - monotonic())

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: Reason) -> bool:
        """Cancel for `reason`; the first reason wins. Returns False if already cancelled."""
        with self._lock:
            if self._cancelled:
                return False
            self.reason = reason
            self._cancelled = True
            if self._event is not None:
                self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()
        return True

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call `callback` (from the cancelling thread) when the scope is cancelled."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return
        callback()

    def check(self) -> None:
        if not self._cancelled and self.deadline is not None and monotonic() >= self.deadline:
            self.cancel("timeout")
        if self._cancelled:
            raise Canceled(self.reason or "canceled")

    def _waiter(self) -> threading.Event:
        with self._lock:
            if self._event is None:
                self._event = threading.Event()
                if self._cancelled:
                    self._event.set()
            return self._event

    def sleep(self, delay: timedelta) -> None:
        if self._waits:
            event = self._waiter()
            end = monotonic() + max(delay.total_seconds(), 0.0)
            while not event.is_set():
                now = monotonic()
                until = end if self.deadline is None else min(end, self.deadline)
                if now >= until:
                    break
                event.wait(until - now)
        self.check()

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for a cancel; True if cancelled (runtime use, not handlers)."""
        return self._waiter().wait(seconds)


class _QueryChecks(threading.local):
    """Per thread: whether its connections carry `_check_current_scope` for good (a worker
    slot's do), and the scope it checks while a handler runs."""

    installed = False
    scope: CancelScope | None = None


_query_checks = _QueryChecks()


def _check_current_scope(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    scope = _query_checks.scope
    if scope is not None:
        scope.check()
    return execute(sql, params, many, context)


def install_query_checks() -> None:
    """For a thread that runs handler after handler (a worker slot): add the query check to
    this thread's connections once, instead of wrapping each connection around each run (a
    few microseconds per connection per job). `cancel_on_queries` then only sets the scope."""
    for connection in connections.all():
        if _check_current_scope not in connection.execute_wrappers:
            connection.execute_wrappers.append(_check_current_scope)
    _query_checks.installed = True


class _CheckedScope:
    """Sets the scope this thread's installed query check reads, for one `with` block. A
    plain class, not a generator: it runs once per job, on the hot path."""

    __slots__ = ("_previous", "_scope")

    def __init__(self, scope: CancelScope) -> None:
        self._scope = scope
        self._previous: CancelScope | None = None

    def __enter__(self) -> None:
        self._previous, _query_checks.scope = _query_checks.scope, self._scope

    def __exit__(self, *exc_info: object) -> None:
        _query_checks.scope = self._previous


def cancel_on_queries(scope: CancelScope) -> contextlib.AbstractContextManager[None]:
    """Raise `Canceled` at the next Django database query of this thread once `scope` is
    cancelled: a sync handler's usual wait."""
    if _query_checks.installed:
        return _CheckedScope(scope)
    return _wrapped_queries(scope)


@contextlib.contextmanager
def _wrapped_queries(scope: CancelScope) -> Iterator[None]:
    def wrapper(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        scope.check()
        return execute(sql, params, many, context)

    with contextlib.ExitStack() as stack:
        for connection in connections.all():
            stack.enter_context(connection.execute_wrapper(wrapper))
        yield
