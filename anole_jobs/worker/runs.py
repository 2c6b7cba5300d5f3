"""The runs in flight in one runtime, and the one decision each run gets exactly once.

A run ends either because its handler returned (`finish_by_handler`) or because the runtime
gave it up after the drain's grace (`interrupt_by_runtime`); whichever comes first wins, so a
handler that finishes just as the grace ends never gets two writes. The handler's side hands
its attempt on inside the same lock, so once the runtime's side has run, every run the
handler finished is already with the completer (the drain never exits ahead of that write).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from anole_jobs.clock import monotonic
from anole_jobs.stores.base import ClaimedJob, RunRef
from anole_jobs.tracing import RunSpan
from anole_jobs.worker.cancel import CancelScope


class Run:
    def __init__(self, claimed: ClaimedJob, scope: CancelScope) -> None:
        self.claimed = claimed
        self.scope = scope
        self._lock = threading.Lock()
        self._ended_by: str | None = None
        self.started_at = monotonic()
        self.span: RunSpan | None = None  # set when a slot starts the handler

    @property
    def ended(self) -> bool:
        with self._lock:
            return self._ended_by is not None

    @property
    def ref(self) -> RunRef:
        return self.claimed.run

    def finish_by_handler(self, hand_on: Callable[[], None]) -> bool:
        """The handler returned: if its outcome is still the one to record, call `hand_on`
        (which passes it to the completer) and return True."""
        with self._lock:
            if self._ended_by is None:
                self._ended_by = "handler"
                hand_on()
                return True
            return False

    def interrupt_by_runtime(self) -> bool:
        """The drain's grace passed: True if the runtime must put the job back itself."""
        with self._lock:
            if self._ended_by is None:
                self._ended_by = "runtime"
                return True
            return False


class RunRegistry:
    """Thread-safe set of runs in flight, with a condition to wait for it to empty."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._runs: dict[RunRef, Run] = {}

    def add(self, run: Run) -> None:
        with self._cond:
            self._runs[run.ref] = run

    def add_all(self, runs: list[Run]) -> None:
        """`add` for a claimed batch, under one lock."""
        with self._cond:
            for run in runs:
                self._runs[run.ref] = run

    def remove(self, run: Run) -> None:
        with self._cond:
            self._runs.pop(run.ref, None)
            self._cond.notify_all()

    def snapshot(self, queue: str | None = None) -> list[Run]:
        with self._cond:
            return [
                r for r in self._runs.values() if queue is None or r.claimed.record.queue == queue
            ]

    def get(self, ref: RunRef) -> Run | None:
        with self._cond:
            return self._runs.get(ref)

    def count(self, queue: str | None = None) -> int:
        return len(self.snapshot(queue))

    def wait_empty(self, queue: str | None, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(
                lambda: (
                    not any(
                        queue is None or r.claimed.record.queue == queue
                        for r in self._runs.values()
                    )
                ),
                timeout,
            )

    def __iter__(self) -> Iterator[Run]:
        return iter(self.snapshot())
