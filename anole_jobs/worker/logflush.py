"""The job's log while an attempt runs: about once a second this thread stores the lines the
running attempts of this runtime logged since (one `Store.record_logs` per attempt with new
lines), so they show on the job's page while it runs and stay when the attempt never writes
its end (a cancel, a killed worker). An attempt younger than a round stores nothing here:
short jobs keep their one write, the end's, which carries the lines not stored yet. A run
that ends lost (a cancel, or the job moved on) writes no end: its last lines go here once,
and the store keeps them if a cancel ended the job during that run.

Best effort: a write that fails is logged at DEBUG and the attempt's end carries its lines.
"""

from __future__ import annotations

import functools
import logging

from anole_jobs.background import BackgroundThread, Idle
from anole_jobs.service import JobService
from anole_jobs.stores.base import RunRef
from anole_jobs.worker import joblog
from anole_jobs.worker.executor import Executor

logger = logging.getLogger("anole_jobs.worker")

#: Seconds between two rounds.
FLUSH_EVERY = 1.0


class LogFlusher(BackgroundThread):
    name = "anole-joblog"

    def __init__(
        self, service: JobService, executor: Executor, interval: float = FLUSH_EVERY
    ) -> None:
        super().__init__()
        self.service = service
        self.executor = executor
        self.interval = interval

    def run_once(self) -> float:
        for run, capture in self.executor.live_logs.items():
            if capture.last:
                self._store_last(run, capture)
            elif not capture.seen:
                capture.seen = True  # met once: stored from the next round on
            elif capture.has_pending:
                capture.store_pending(functools.partial(self._write, run, keep=capture.keep))
        # Idle whatever it wrote: its failures are its attempts' to carry (see `_write`),
        # not the store's health to report.
        return Idle(self.interval)

    def on_exit(self) -> None:
        # A worker stopping: the lines of lost runs still waiting go now, not with a round.
        for run, capture in self.executor.live_logs.items():
            if capture.last:
                self._store_last(run, capture)

    def _store_last(self, run: RunRef, capture: joblog.Capture) -> None:
        """A lost run's lines: one try, then the capture is forgotten."""
        capture.store_pending(functools.partial(self._write, run, keep=capture.keep, last=True))
        self.executor.live_logs.remove(run)

    def _write(self, run: RunRef, text: str, *, keep: int, last: bool = False) -> bool:
        try:
            return self.service.store.record_logs(run, text, keep)
        except Exception:  # noqa: BLE001 - best effort: the attempt's end carries the lines
            if last:  # a lost run: no end will carry them
                logger.debug("job %s: its last log lines were not stored", run.id, exc_info=True)
            else:
                logger.debug(
                    "job %s: its log lines wait for the attempt's end", run.id, exc_info=True
                )
            return False
