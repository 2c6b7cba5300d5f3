"""The runtime's maintenance thread: leadership, cron, stage, rescue and prune on intervals.

Stage and rescue run on every instance (rescue at least every LEASE/2, so a lapsed lease is
back within about 1.5 x LEASE); prune (with the statistics' roll-up), cron and the queued-jobs
gauge only on the leader,
which re-checks its leadership before each duty, so a lost lock stops it at once.
"""

from __future__ import annotations

import logging

from anole_jobs.background import BackgroundThread
from anole_jobs.clock import monotonic
from anole_jobs.maintenance.cron import CronScheduler
from anole_jobs.maintenance.duties import (
    Leadership,
    Pruner,
    QueuedGauge,
    Rescuer,
    Stager,
    UnhandledKinds,
)
from anole_jobs.maintenance.history import StatsHistory
from anole_jobs.service import JobService

logger = logging.getLogger("anole_jobs.maintenance")

STAGE_INTERVAL = 1.0
PRUNE_INTERVAL = 60.0
UNHANDLED_INTERVAL = 30.0


class MaintenanceLoop(BackgroundThread):
    name = "anole-maintenance"

    def __init__(self, service: JobService, *, instance: str, queues: list[str]) -> None:
        super().__init__()
        self.service = service
        self.queues = queues
        self.leadership = Leadership(service, instance)
        self.stager = Stager(service)
        self.rescuer = Rescuer(service)
        self.pruner = Pruner(service)
        self.history = StatsHistory(service)
        self.unhandled = UnhandledKinds(service)
        lease = service.settings.lease.total_seconds()
        self.tick = min(STAGE_INTERVAL, lease / 3)
        self.rescue_interval = lease / 2
        self.cron = CronScheduler(service)
        self.gauge = QueuedGauge(service)
        self._last: dict[str, float] = {}

    def _due(self, name: str, interval: float) -> bool:
        now = monotonic()
        if now - self._last.get(name, float("-inf")) >= interval:
            self._last[name] = now
            return True
        return False

    def run_duties(self) -> None:
        """One round of every duty that is due."""
        service = self.service
        leader = self.leadership.run_once(service.clock())
        if leader:
            self._run_cron()
        staged = self.stager.run_once(service.clock())
        if staged:
            service.store.wake(self.queues)
        if self._due("rescue", self.rescue_interval):
            rescued = self.rescuer.run_once(service.clock())
            if rescued:
                service.store.wake({job.queue for job in rescued if job.state == "available"})
        if self._due("prune", PRUNE_INTERVAL) and self.leadership.run_once(service.clock()):
            # The statistics' history first: an hour is rolled up before its minutes go.
            self.history.run_once(service.clock())
            self.pruner.run_once(service.clock())
        if leader:
            self.gauge.run_once(service.clock())
        if self._due("unhandled", UNHANDLED_INTERVAL):
            self.unhandled.run_once(self.queues)

    def _run_cron(self) -> None:
        # Leadership is re-checked just before the duty (a lost lock stops it at once).
        if self.leadership.run_once(self.service.clock()):
            self.cron.run_once(self.service.clock())

    def run_once(self) -> float:
        self.run_duties()
        return self.tick

    def on_exit(self) -> None:
        try:
            self.leadership.resign()
        except Exception:  # noqa: BLE001 - leadership then lapses with its lease
            logger.warning("could not resign leadership; it lapses with its lease")
