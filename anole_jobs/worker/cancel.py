"""Cancellation of one run (R18): a flag set by a timeout, a drain or a lost lease, raised as
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
        self._event = threading.Event()
        self.reason: Reason | None = None
        # Manual mode never waits for time to pass (R35): sleep only checks.
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
        return self._event.is_set()

    def cancel(self, reason: Reason) -> bool:
        """Cancel for `reason`; the first reason wins. Returns False if already cancelled."""
        with self._lock:
            if self._event.is_set():
                return False
            self.reason = reason
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()
        return True

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call `callback` (from the cancelling thread) when the scope is cancelled."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def check(self) -> None:
        if not self._event.is_set() and self.deadline is not None and monotonic() >= self.deadline:
            self.cancel("timeout")
        if self._event.is_set():
            raise Canceled(self.reason or "canceled")

    def sleep(self, delay: timedelta) -> None:
        if self._waits:
            end = monotonic() + max(delay.total_seconds(), 0.0)
            while not self._event.is_set():
                now = monotonic()
                until = end if self.deadline is None else min(end, self.deadline)
                if now >= until:
                    break
                self._event.wait(until - now)
        self.check()

    def wait(self, seconds: float) -> bool:
        """Wait up to `seconds` for a cancel; True if cancelled (runtime use, not handlers)."""
        return self._event.wait(seconds)


@contextlib.contextmanager
def cancel_on_queries(scope: CancelScope) -> Iterator[None]:
    """Raise `Canceled` at the next Django database query of this thread once `scope` is
    cancelled: a sync handler's usual wait (R18)."""

    def wrapper(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        scope.check()
        return execute(sql, params, many, context)

    with contextlib.ExitStack() as stack:
        for connection in connections.all():
            stack.enter_context(connection.execute_wrapper(wrapper))
        yield
