"""Writes the outcomes of finished runs, many per round trip (River batches completions too).

Slots hand their `Attempt` to `submit`; one thread takes whatever has accumulated and writes it
with a single fenced `store.finish` call, then reports each run's end through `Outcomes` and
calls the `settled` callback each slot passed in: only then does the job stop showing as
running in the store, so only then may its pool count the slot as free for a new claim. A
write that fails (the store does not answer) is retried with backoff until its patience runs
out (or the stop's deadline passes); then the outcome is recorded as unsaved and the job runs
again after its lease (at least once: never lost).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from anole_jobs.background import BackgroundThread
from anole_jobs.clock import monotonic
from anole_jobs.service import JobService
from anole_jobs.worker.outcomes import Attempt, Outcomes

#: Called once a run's outcome is in the store (or given up as unsaved).
Settled = Callable[[], None]

BATCH_MAX = 500
SAVE_PATIENCE = 10.0  # seconds a write is retried while running normally


class Completer(BackgroundThread):
    name = "anole-completer"

    def __init__(self, service: JobService, outcomes: Outcomes) -> None:
        super().__init__()
        self.service = service
        self.outcomes = outcomes
        self._cond = threading.Condition()
        self._pending: deque[tuple[Attempt, float, Settled]] = deque()
        self._batch: list[tuple[Attempt, float, Settled]] = []
        self._deadline: float | None = None
        self._waiting = False  # in `run_once`'s wait for work (read and set under `_cond`)

    def submit(self, attempt: Attempt, settled: Settled) -> None:
        """Write `attempt`'s outcome soon; call `settled` once it is written or given up."""
        if attempt.finish is None:
            # Nothing to write (lost, or completed inside the handler's transaction).
            self.outcomes.record(attempt, written=True)
            settled()
            return
        with self._cond:
            self._pending.append((attempt, monotonic() + SAVE_PATIENCE, settled))
            if self._waiting:  # woken once per batch, not notified per job while it writes
                self._cond.notify()

    def stop(self, timeout: float = 5.0) -> bool:
        """Write what is pending, retrying for up to `timeout` seconds, then stop."""
        with self._cond:
            self._deadline = monotonic() + max(timeout, 0.0)
        return super().stop(timeout)

    # -- the thread ------------------------------------------------------------------------------
    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def keep_going(self) -> bool:
        with self._cond:
            return bool(self._pending) or not self.stopping

    def pause(self, seconds: float) -> None:
        if not seconds:
            return
        with self._cond:
            # A submit or a stop wakes it early; while stopping, retry often until the deadline.
            self._waiting = True
            try:
                self._cond.wait(min(seconds, 0.2) if self.stopping else seconds)
            finally:
                self._waiting = False

    def run_once(self) -> float:
        with self._cond:
            while not self._pending and not self.stopping:
                self._waiting = True
                try:
                    self._cond.wait()
                finally:
                    self._waiting = False
            count = min(BATCH_MAX, len(self._pending))
            self._batch = [self._pending.popleft() for _ in range(count)]
        if not self._batch:
            return 0.0
        written = self.service.store.finish([attempt.finish for attempt, _, _ in self._batch])  # type: ignore[misc]
        batch, self._batch = self._batch, []
        # One record for the batch: one metrics update, not one per job.
        self.outcomes.record_all(
            [(attempt, ok) for (attempt, _, _), ok in zip(batch, written, strict=True)]
        )
        for _, _, settled in batch:
            settled()
        return 0.0

    def on_failure(self, exc: Exception) -> None:
        # Keep what still has patience (and time before the stop's deadline); give up the rest.
        now = monotonic()
        keep = []
        unsaved: list[tuple[Attempt, bool | None]] = []
        given_up: list[Settled] = []
        for attempt, patience, settled in self._batch:
            limit = patience if self._deadline is None else min(patience, self._deadline)
            if now < limit:
                keep.append((attempt, patience, settled))
            else:
                unsaved.append((attempt, None))
                given_up.append(settled)
        self._batch = []
        if unsaved:
            self.outcomes.record_all(unsaved)
        for settled in given_up:
            settled()
        with self._cond:
            self._pending.extendleft(reversed(keep))
