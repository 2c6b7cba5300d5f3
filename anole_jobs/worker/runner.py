"""The runtime (R27–R29): worker pools for the configured queues, heartbeats, timeouts and
maintenance, and the drain that stops them.

`jobs.start()` / `jobs.stop()` drive it inside an app's own process; `manage.py runjobs` is
built on them. Drain: stop claiming; give running jobs each queue's `drain_timeout`; then
cancel them and put them back `available` with the attempt not counted (`interrupted`). A run
that finished before the cancel keeps its outcome: its write may take up to 3 s more.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Sequence

from anole_jobs import events
from anole_jobs.clock import monotonic
from anole_jobs.conf import QueueConfig
from anole_jobs.errors import ConfigurationError
from anole_jobs.maintenance.loop import MaintenanceLoop
from anole_jobs.records import Outcome
from anole_jobs.service import Jobs
from anole_jobs.stores.base import Finish
from anole_jobs.worker.completer import Completer
from anole_jobs.worker.executor import Attempt, Executor
from anole_jobs.worker.heartbeat import Heartbeat
from anole_jobs.worker.queue import QueueWorker
from anole_jobs.worker.runs import Run, RunRegistry
from anole_jobs.worker.timers import TimeoutWatcher

logger = logging.getLogger("anole_jobs.worker")

WRITE_GRACE = 3.0  # seconds a finished run's write may take past the drain deadline (R27)
POLL_INTERVAL = 1.0


class Runtime:
    def __init__(
        self,
        service: Jobs,
        *,
        queues: Sequence[str] | None = None,
        concurrency: int | None = None,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        settings = service.settings
        if settings.deployment == "lambda":
            raise ConfigurationError(
                'ANOLE_JOBS["DEPLOYMENT"] is "lambda": this process only enqueues and never runs '
                'workers; run them elsewhere with DEPLOYMENT="server"'
            )
        names = list(queues) if queues else list(settings.queues)
        unknown = [name for name in names if name not in settings.queues]
        if unknown:
            raise ConfigurationError(
                f"unknown queue(s) {', '.join(unknown)}; configured: {', '.join(settings.queues)}"
            )
        self.service = service
        self.queue_configs: list[QueueConfig] = [
            QueueConfig(
                name=name,
                concurrency=concurrency or settings.queues[name].concurrency,
                drain_timeout=settings.queues[name].drain_timeout,
            )
            for name in names
        ]
        self.instance = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.runs = RunRegistry()
        self.timeouts = TimeoutWatcher()
        self.executor = Executor(service, manual=False, watch_timeout=self.timeouts.watch)
        self.completer = Completer(service, on_done=self._record)
        self.heartbeat = Heartbeat(service, self.runs)
        self.maintenance = MaintenanceLoop(service, instance=self.instance, queues=names)
        self.workers = [
            QueueWorker(
                service,
                config,
                executor=self.executor,
                runs=self.runs,
                worker_name=self.instance,
                poll_interval=poll_interval,
                on_attempt=self._on_attempt,
            )
            for config in self.queue_configs
        ]
        self._state_lock = threading.Lock()
        self.started = False
        self.stopped = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        with self._state_lock:
            if self.started:
                return
            self.started = True
        self.timeouts.start()
        self.completer.start()
        self.heartbeat.start()
        self.maintenance.start()
        for worker in self.workers:
            worker.start()

    def describe(self) -> str:
        queues = ", ".join(f"{c.name} (concurrency {c.concurrency})" for c in self.queue_configs)
        store = self.service.store
        return (
            f"store {store.name}, queues {queues}, instance {self.instance}, "
            "leader: not yet (elected by the store; logged when it changes)"
        )

    def stop(self, *, drain: bool = True) -> None:
        """Drain and stop; returns within max(drain_timeout) + 3 s (R27, R28)."""
        with self._state_lock:
            if not self.started or self.stopped.is_set():
                return
        began = monotonic()
        latest = max((c.drain_timeout.total_seconds() for c in self.queue_configs), default=0.0)
        # Every wait below takes only what is left of the bound (R28): a hung store call
        # cannot keep the process past max(drain_timeout) + 3 s.
        deadline = began + (latest if drain else 0.0) + WRITE_GRACE

        def left() -> float:
            return max(0.0, deadline - monotonic())

        for worker in self.workers:
            worker.stop_claiming()
        for worker in self.workers:
            worker.join_dispatcher(timeout=min(5.0, left()))
        # Each queue waits its own drain_timeout, in parallel.
        drainers = [
            threading.Thread(
                target=self._drain_queue,
                args=(config, began + (config.drain_timeout.total_seconds() if drain else 0.0)),
                name=f"anole-drain-{config.name}",
                daemon=True,
            )
            for config in self.queue_configs
        ]
        for thread in drainers:
            thread.start()
        for thread in drainers:
            thread.join(timeout=left())
        self.completer.stop(deadline=deadline)
        self.heartbeat.stop(timeout=min(5.0, left()))
        self.maintenance.stop(timeout=min(10.0, left()))
        self.timeouts.stop(timeout=min(5.0, left()))
        for worker in self.workers:
            worker.release_slots()
        self.stopped.set()
        logger.info("workers stopped (%.1f s)", monotonic() - began)

    def _drain_queue(self, config: QueueConfig, deadline: float) -> None:
        worker = next(w for w in self.workers if w.name == config.name)
        unstarted = worker.take_unstarted()
        if unstarted:
            worker.give_back(unstarted)
        if self.runs.wait_empty(config.name, max(0.0, deadline - monotonic())):
            return
        # Deadline: cancel what still runs, and put it back ourselves at once (fenced): a sync
        # handler may never reach a wait.
        now = self.service.clock()
        interrupted: list[Run] = []
        for run in self.runs.snapshot(config.name):
            run.scope.cancel("drain")
            if run.interrupt_by_runtime():
                interrupted.append(run)
        if not interrupted:
            return
        finishes = [
            Finish(run=run.ref, state="available", at=now, scheduled_at=now, give_back_attempt=True)
            for run in interrupted
        ]
        try:
            written = self.service.store.finish(finishes)
        except Exception:  # noqa: BLE001 - then the lease lapses and rescue puts them back
            logger.exception("could not put %d drained jobs back; rescue will", len(finishes))
            written = [False] * len(finishes)
        for run, saved in zip(interrupted, written, strict=True):
            outcome: Outcome = "interrupted" if saved else "lost"
            self._emit(run.claimed, outcome, monotonic() - run.started_at, saved=saved)
        if interrupted:
            self.service.store.wake([config.name])

    # -- outcomes ------------------------------------------------------------------------------
    def _on_attempt(self, run: Run, attempt: Attempt) -> None:
        if not run.finish_by_handler():
            attempt.end_span("interrupted")  # h11-obs run spans; keep h8-runtime's at merge
            return  # the drain deadline already put the job back
        self.completer.submit(attempt)

    def _record(self, attempt: Attempt, outcome: Outcome, saved: bool) -> None:
        attempt.end_span(outcome)  # h11-obs run spans; keep h8-runtime's at merge
        if saved:
            self._emit(attempt.claimed, outcome, attempt.seconds, saved=True)

    def _emit(self, claimed: object, outcome: Outcome, seconds: float, *, saved: bool) -> None:
        record = claimed.record  # type: ignore[attr-defined]
        attempt = claimed.run.attempt  # type: ignore[attr-defined]
        log = logger.info if outcome in ("completed", "snoozed") else logger.warning
        if outcome == "completed":
            log = logger.debug if seconds < 1 else logger.info
        log(
            "job %s %s attempt %d/%d on %s: %s (%.3f s)",
            record.id,
            record.kind,
            attempt,
            record.max_attempts,
            record.queue,
            outcome,
            seconds,
        )
        self.service.bus.emit(
            events.RUN_FINISHED,
            queue=record.queue,
            kind=record.kind,
            job_id=record.id,
            attempt=attempt,
            outcome=outcome,
            seconds=seconds,
            saved=saved,
        )
