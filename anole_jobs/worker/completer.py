"""Writes the outcomes of finished runs, many per round trip (River batches completions too).

Runs hand their `Attempt` to `submit`; one thread takes whatever has accumulated and writes it
with a single fenced `store.finish` call. A write that fails (a broken connection) is retried
with backoff until its deadline; past that the outcome is counted as unsaved and the job runs
again after its lease (R1).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from anole_jobs import events
from anole_jobs.clock import monotonic
from anole_jobs.records import Outcome
from anole_jobs.service import Jobs
from anole_jobs.worker.executor import Attempt

logger = logging.getLogger("anole_jobs.worker")

BATCH_MAX = 500
SAVE_PATIENCE = 10.0  # seconds a write is retried while running normally


class Completer:
    def __init__(self, service: Jobs, *, on_done: Callable[[Attempt, Outcome, bool], None]) -> None:
        self.service = service
        self.on_done = on_done
        self._cond = threading.Condition()
        self._pending: deque[tuple[Attempt, float]] = deque()
        self._stopping = False
        self._deadline: float | None = None
        self._thread = threading.Thread(target=self._loop, name="anole-completer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, attempt: Attempt) -> None:
        if attempt.finish is None:
            # Nothing to write (lost, or completed inside the handler's transaction).
            self.on_done(attempt, attempt.outcome, True)
            return
        with self._cond:
            self._pending.append((attempt, monotonic() + SAVE_PATIENCE))
            self._cond.notify()

    def stop(self, *, deadline: float) -> None:
        """Write what is pending, retrying until `deadline` (monotonic), then stop."""
        with self._cond:
            self._stopping = True
            self._deadline = deadline
            self._cond.notify_all()
        self._thread.join(timeout=max(0.0, deadline - monotonic()))

    def _loop(self) -> None:
        failures = 0
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if not self._pending and self._stopping:
                    return
                batch = [self._pending.popleft() for _ in range(min(BATCH_MAX, len(self._pending)))]
            try:
                written = self.service.store.finish([attempt.finish for attempt, _ in batch])  # type: ignore[misc]
            except Exception as exc:  # noqa: BLE001 - a store error must not lose the outcomes
                failures += 1
                close_broken_connections()
                self._retry_or_drop(batch, exc, failures)
                continue
            failures = 0
            for (attempt, _), saved in zip(batch, written, strict=True):
                self.on_done(attempt, attempt.outcome if saved else "lost", True)

    def _retry_or_drop(
        self, batch: list[tuple[Attempt, float]], exc: Exception, failures: int
    ) -> None:
        now = monotonic()
        keep = []
        for attempt, patience in batch:
            limit = min(patience, self._deadline) if self._deadline is not None else patience
            if now < limit:
                keep.append((attempt, patience))
            else:
                logger.error(
                    "could not save the outcome %s of job %s (%s); it runs again after its lease",
                    attempt.outcome,
                    attempt.claimed.record.id,
                    exc,
                )
                self.service.bus.emit(
                    events.RUN_FINISHED,
                    queue=attempt.claimed.record.queue,
                    kind=attempt.claimed.record.kind,
                    job_id=attempt.claimed.record.id,
                    attempt=attempt.claimed.run.attempt,
                    outcome=attempt.outcome,
                    seconds=attempt.seconds,
                    saved=False,
                )
                self.on_done(attempt, attempt.outcome, False)
        if not keep:
            return
        logger.warning("saving %d outcomes failed (%s); retrying", len(keep), exc)
        with self._cond:
            self._pending.extendleft(reversed(keep))
            # Back off a little, but wake at once when stopping.
            self._cond.wait(min(0.05 * 2 ** min(failures, 5), 1.0))


def close_broken_connections() -> None:
    """After a store error, drop this thread's broken Django connections so the next call
    reconnects (Django does this per request; a worker thread has no requests)."""
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()
