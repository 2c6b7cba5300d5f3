"""Per-run deadlines: one thread that cancels each run's scope when its timeout passes (R17).

One thread for the whole runtime, sleeping until the nearest deadline, instead of a timer
thread per job.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable

from anole_jobs.clock import monotonic
from anole_jobs.worker.cancel import CancelScope


class TimeoutWatcher:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, CancelScope]] = []
        self._live: set[int] = set()
        self._ids = itertools.count()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="anole-timeouts", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=max(timeout, 0.0))

    def watch(self, scope: CancelScope, seconds: float) -> Callable[[], None]:
        """Cancel `scope` with reason "timeout" after `seconds`; returns a function to stop."""
        entry_id = next(self._ids)
        with self._cond:
            heapq.heappush(self._heap, (monotonic() + seconds, entry_id, scope))
            self._live.add(entry_id)
            self._cond.notify_all()

        def unwatch() -> None:
            with self._cond:
                self._live.discard(entry_id)

        return unwatch

    def _loop(self) -> None:
        while True:
            due: list[CancelScope] = []
            with self._cond:
                if self._stopping:
                    return
                now = monotonic()
                while self._heap and (
                    self._heap[0][0] <= now or self._heap[0][1] not in self._live
                ):
                    _, entry_id, scope = heapq.heappop(self._heap)
                    if entry_id in self._live:
                        self._live.discard(entry_id)
                        due.append(scope)
                wait = (self._heap[0][0] - now) if self._heap else None
                if not due:
                    self._cond.wait(wait)
            for scope in due:
                scope.cancel("timeout")
