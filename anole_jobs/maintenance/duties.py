"""Stage, rescue, prune, leadership and the queued-jobs gauge: the store does the work; these
decide when and report. The runtime's maintenance loop and `jobs.step()` share them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from datetime import datetime, timedelta

from anole_jobs import events, offload
from anole_jobs.background import health
from anole_jobs.service import JobService
from anole_jobs.stores.audit import AUDIT_KEEP
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
        # Records of worker processes that died without removing theirs go with the jobs.
        self.service.store.prune_workers(now=now)
        # The operators' audit log is kept for AUDIT_KEEP (30 days).
        self.service.store.prune_audit(before=now - AUDIT_KEEP)
        horizons = self.service.settings.prune
        doomed = []
        if self.service.settings.offload is not None:
            # Their offloaded files go with them (docs/offload.md).
            doomed = [
                r
                for r in self.service.store.expired(now=now, horizons=horizons)
                if offload.is_ref(r.args) or offload.is_ref(r.result)
            ]
        pruned = self.service.store.prune(now=now, horizons=horizons)
        if doomed:
            store = self.service.store
            self.service.delete_offloaded(r for r in doomed if store.get(r.id) is None)
        if pruned:
            self.service.bus.emit(events.PRUNED, count=pruned)
            logger.info("pruned %d finished jobs", pruned)
        return pruned


class QueuedGauge:
    """The leader counts the configured queues' waiting and running jobs for the
    ``anole_jobs_queued`` gauge, at most once per `INTERVAL` of `CLOCK` (the fake clock in
    tests), so the count costs the store little however often the leader ticks."""

    INTERVAL = timedelta(seconds=15)

    def __init__(self, service: JobService) -> None:
        self.service = service
        self._last_at: datetime | None = None
        self._lock = threading.Lock()

    def run_once(self, now: datetime) -> dict[str, dict[str, int]] | None:
        """The counts reported, or None when the last report is under `INTERVAL` old."""
        with self._lock:
            if self._last_at is not None and now - self._last_at < self.INTERVAL:
                return None
            self._last_at = now
        # Cheap at any table size: only waiting and running jobs are counted.
        counts = self.service.store.queued_counts(list(self.service.settings.queues))
        self.service.bus.emit(events.QUEUED_GAUGE, counts=counts)
        self._held(now)
        self._latency(now)
        return counts

    def _latency(self, now: datetime) -> None:
        """The ``anole_jobs_queue_latency_seconds`` gauge: per configured queue, how long its
        oldest available job has waited (0 when it has none), for autoscalers."""
        queues = list(self.service.settings.queues)
        oldest = self.service.store.oldest_available(queues)
        latency = {
            queue: max(0.0, (now - oldest[queue]).total_seconds()) if queue in oldest else 0.0
            for queue in queues
        }
        self.service.bus.emit(events.LATENCY_GAUGE, latency=latency)

    def _held(self, now: datetime) -> None:
        """The ``anole_jobs_held`` gauge: jobs held back by the limits of each queue that has
        some (docs/limits.md); nothing is read for a queue without limits."""
        store, queues = self.service.store, self.service.settings.queues
        runtime = store.runtime_limits()
        held = {
            name: store.held_count(name, config.limits, now=now)
            for name, config in queues.items()
            if config.limits.active or name in runtime
        }
        if held:
            self.service.bus.emit(events.HELD_GAUGE, held=held)


class Leadership:
    """Takes or keeps leadership for one instance; reports changes. One instance leads at a
    time (see docs/runtime.md). Safe to share between threads (`jobs.step()` in several
    threads of one process is one instance)."""

    def __init__(self, service: JobService, instance: str) -> None:
        self.service = service
        self.instance = instance
        self.leading = False
        # One election at a time: two threads must not both report the same change.
        self._lock = threading.Lock()

    def run_once(self, now: datetime) -> bool:
        with self._lock:
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
                self._report(leading)
            return leading

    def resign(self) -> None:
        with self._lock:
            if self.leading:
                self.leading = False
                try:
                    self.service.store.resign(instance=self.instance)
                finally:
                    # Reported even when the store did not answer: the lease then lapses.
                    self._report(False)

    def _report(self, leading: bool) -> None:
        self.service.bus.emit(events.LEADERSHIP, leader=leading, instance=self.instance)


class UnhandledKinds:
    """Logs, once per kind per process, kinds that wait in a queue with no handler here."""

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
