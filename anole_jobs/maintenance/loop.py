"""The runtime's maintenance thread: leadership, cron, stage, rescue and prune on intervals.

Stage and rescue run on every instance (rescue at least every LEASE/2, so a lapsed lease is
back within about 1.5 x LEASE); prune and cron only on the leader, which re-checks its
leadership before each duty (R23).
"""

from __future__ import annotations

import logging
from datetime import datetime

from anole_jobs import events
from anole_jobs.background import BackgroundThread
from anole_jobs.clock import monotonic
from anole_jobs.maintenance.cron import CronScheduler
from anole_jobs.maintenance.duties import Leadership, Pruner, Rescuer, Stager, UnhandledKinds
from anole_jobs.service import JobService

logger = logging.getLogger("anole_jobs.maintenance")

STAGE_INTERVAL = 1.0
PRUNE_INTERVAL = 60.0
GAUGE_INTERVAL = 15.0
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
        self.unhandled = UnhandledKinds(service)
        lease = service.settings.lease.total_seconds()
        self.tick = min(STAGE_INTERVAL, lease / 3)
        self.rescue_interval = lease / 2
        self.cron = CronScheduler(service)
        self._last: dict[str, float] = {}
        self._last_gauge_at: datetime | None = None

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
            self.pruner.run_once(service.clock())
        if leader and self._gauge_due():
            # The configured queues' waiting and running jobs: cheap at any table size.
            queued = service.store.queued_counts(list(service.settings.queues))
            service.bus.emit(events.QUEUED_GAUGE, counts=queued)
        if self._due("unhandled", UNHANDLED_INTERVAL):
            self.unhandled.run_once(self.queues)

    def _gauge_due(self) -> bool:
        # "Every 15 s" is measured on CLOCK (SPEC §13).
        now = self.service.clock()
        if (
            self._last_gauge_at is None
            or (now - self._last_gauge_at).total_seconds() >= GAUGE_INTERVAL
        ):
            self._last_gauge_at = now
            return True
        return False

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
