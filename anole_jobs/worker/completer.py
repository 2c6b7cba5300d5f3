"""Writes the outcomes of finished runs, many per round trip (River batches completions too).

Slots hand their `Attempt` to `submit`; one thread takes whatever has accumulated and writes it
with a single fenced `store.finish` call, then reports each run's end through `Outcomes` and
calls the `settled` callback each slot passed in: only then does the job stop showing as
running in the store, so only then may its pool count the slot as free for a new claim. A
write that fails (the store does not answer) is retried with backoff until its patience runs
out (or the stop's deadline passes); then the outcome is recorded as unsaved and the job runs
again after its lease (at least once: never lost).

On a store whose queues fail apart (`Store.queues_fail_apart`: a Redis Cluster, where each
queue lives on one master), `QueueCompleters` gives each queue a completer of its own: a
write that waits out one master's failover then holds up only the outcomes of that master's
queues, and the pools of the other queues free their slots as their own outcomes are saved.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable

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

    def __init__(self, service: JobService, outcomes: Outcomes, *, name: str | None = None) -> None:
        super().__init__(name=name)
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


class QueueCompleters(Completer):
    """One `Completer` per queue (see the module docstring), behind the completer's own
    interface: `submit` routes each attempt to its queue's completer (this one writes for a
    queue that has none)."""

    def __init__(self, service: JobService, outcomes: Outcomes, queues: Iterable[str]) -> None:
        super().__init__(service, outcomes)
        self.lanes = {
            queue: Completer(service, outcomes, name=f"anole-completer-{queue}") for queue in queues
        }

    def submit(self, attempt: Attempt, settled: Settled) -> None:
        lane = self.lanes.get(attempt.claimed.record.queue)
        if lane is None:
            super().submit(attempt, settled)
        else:
            lane.submit(attempt, settled)

    def start(self) -> None:
        super().start()
        for lane in self.lanes.values():
            lane.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Every lane writes what is pending, in parallel, within `timeout` seconds in all."""
        deadline = monotonic() + max(timeout, 0.0)
        lanes: list[Completer] = [self, *self.lanes.values()]
        for lane in lanes:
            with lane._cond:
                lane._deadline = deadline
            lane.request_stop()
        return all([lane.join(deadline - monotonic()) for lane in lanes])
