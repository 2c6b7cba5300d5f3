"""Heartbeats: extend the leases of the runs in flight about every LEASE/3, and
cancel every run whose lease the store no longer recognises (rescued, cancelled, retried or
deleted elsewhere): its outcome will be `lost`. Each round also records this worker's presence
(`presence.Presence`), one store call whatever the number of runs.
"""

from __future__ import annotations

import logging

from anole_jobs.background import BackgroundThread, Idle
from anole_jobs.service import JobService
from anole_jobs.worker.presence import Presence
from anole_jobs.worker.runs import RunRegistry

logger = logging.getLogger("anole_jobs.worker")


class Heartbeat(BackgroundThread):
    name = "anole-heartbeat"

    def __init__(
        self, service: JobService, runs: RunRegistry, presence: Presence | None = None
    ) -> None:
        super().__init__()
        self.service = service
        self.runs = runs
        self.interval = heartbeat_interval(service)
        self.presence = presence

    def run_once(self) -> float:
        extended = self.beat() is not None
        if self.presence is not None and self.presence.record_or_log():
            return self.interval
        return self.interval if extended else Idle(self.interval)

    def beat(self) -> int | None:
        """One heartbeat; how many runs were found lost (None: no run to extend)."""
        runs = self.runs.snapshot()
        if not runs:
            return None
        lease_until = self.service.clock() + self.service.settings.lease
        held = self.service.store.heartbeat({run.ref for run in runs}, lease_until=lease_until)
        lost = 0
        for run in runs:
            if run.ref not in held and self.runs.get(run.ref) is run:
                lost += 1
                logger.warning(
                    "job %s lost its lease (rescued, cancelled or retried elsewhere); cancelling",
                    run.claimed.record.id,
                    extra={"job_id": run.claimed.record.id, "kind": run.claimed.record.kind},
                )
                run.scope.cancel("lost")
        return lost


def heartbeat_interval(service: JobService) -> float:
    """Seconds between two heartbeats: a third of the lease (at least 0.2 s)."""
    return max(service.settings.lease.total_seconds() / 3, 0.2)
