"""Stage, rescue and prune (R21, R23): the store does the work; these decide when and report."""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime

from anole_jobs import events
from anole_jobs.background import health
from anole_jobs.service import JobService
from anole_jobs.stores.base import Rescued

logger = logging.getLogger("anole_jobs.maintenance")


class Stager:
    """Scheduled and retrying jobs that are due become available."""

    def __init__(self, service: JobService) -> None:
        self.service = service

    def run_once(self, now: datetime) -> int:
        staged = self.service.store.stage(now=now)
        if staged:
            self.service.bus.emit(events.STAGED, count=staged)
        return staged


class Rescuer:
    """Jobs whose lease lapsed go back to available (dead on their last attempt), any instance."""

    def __init__(self, service: JobService) -> None:
        self.service = service

    def run_once(self, now: datetime) -> list[Rescued]:
        rescued = self.service.store.rescue(now=now)
        for job in rescued:
            logger.warning(
                "rescued job %s (%s, queue %s): its lease lapsed; now %s",
                job.id,
                job.kind,
                job.queue,
                job.state,
            )
            self.service.bus.emit(
                events.RESCUED, queue=job.queue, kind=job.kind, job_id=job.id, state=job.state
            )
        return rescued


class Pruner:
    """The leader deletes finished jobs past their horizon (`PRUNE`), counted from finished_at."""

    def __init__(self, service: JobService) -> None:
        self.service = service

    def run_once(self, now: datetime) -> int:
        pruned = self.service.store.prune(now=now, horizons=self.service.settings.prune)
        if pruned:
            self.service.bus.emit(events.PRUNED, count=pruned)
            logger.info("pruned %d finished jobs", pruned)
        return pruned


class Leadership:
    """Takes or keeps leadership for one instance; reports changes (R23)."""

    def __init__(self, service: JobService, instance: str) -> None:
        self.service = service
        self.instance = instance
        self.leading = False

    def run_once(self, now: datetime) -> bool:
        try:
            leading = self.service.store.lead(
                instance=self.instance, now=now, ttl=self.service.settings.lease
            )
        except Exception as exc:  # noqa: BLE001 - a follower until the store answers again
            # Not counted as an outage here: the maintenance loop's next store call is.
            health.failed(exc, where="leader election (acting as a follower)", failures=1)
            leading = False
        if leading != self.leading:
            self.leading = leading
            logger.info(
                "instance %s %s leader", self.instance, "is now" if leading else "is no longer"
            )
            self.service.bus.emit(events.LEADERSHIP, leader=leading)
        return leading

    def resign(self) -> None:
        if self.leading:
            self.service.store.resign(instance=self.instance)
            self.leading = False
            self.service.bus.emit(events.LEADERSHIP, leader=False)


class UnhandledKinds:
    """Logs, once per kind per process, kinds that wait in a queue with no handler here (R8)."""

    _logged: set[str] = set()

    def __init__(self, service: JobService) -> None:
        self.service = service

    def run_once(self, queues: Collection[str]) -> set[str]:
        handled = self.service.registry.handled_kinds()
        waiting = self.service.store.waiting_kinds(queues)
        unknown = set()
        for queue, kinds in waiting.items():
            for kind in kinds - handled:
                unknown.add(kind)
                if kind not in UnhandledKinds._logged:
                    UnhandledKinds._logged.add(kind)
                    logger.warning(
                        "jobs of kind %r wait in queue %r but no handler is registered in this "
                        "process; they stay waiting (register one with @jobs.handler)",
                        kind,
                        queue,
                    )
        return unknown
