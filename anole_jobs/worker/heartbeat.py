"""Heartbeats (R21, R22): extend the leases of the runs in flight about every LEASE/3, and
cancel every run whose lease the store no longer recognises (rescued, cancelled, retried or
deleted elsewhere): its outcome will be `lost`.
"""

from __future__ import annotations

import logging
import threading

from anole_jobs.service import Jobs
from anole_jobs.worker.completer import close_broken_connections
from anole_jobs.worker.runs import RunRegistry

logger = logging.getLogger("anole_jobs.worker")


class Heartbeat:
    def __init__(self, service: Jobs, runs: RunRegistry) -> None:
        self.service = service
        self.runs = runs
        self.interval = max(service.settings.lease.total_seconds() / 3, 0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="anole-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout=max(timeout, 0.0))

    def beat(self) -> int:
        """One heartbeat; returns how many runs were found lost."""
        runs = self.runs.snapshot()
        if not runs:
            return 0
        lease_until = self.service.clock() + self.service.settings.lease
        held = self.service.store.heartbeat({run.ref for run in runs}, lease_until=lease_until)
        lost = 0
        for run in runs:
            if run.ref not in held and self.runs.get(run.ref) is run:
                lost += 1
                logger.warning(
                    "job %s lost its lease (rescued, cancelled or retried elsewhere); cancelling",
                    run.claimed.record.id,
                )
                run.scope.cancel("lost")
        return lost

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except Exception:  # noqa: BLE001 - a missed beat is retried at the next interval
                close_broken_connections()
                logger.exception("heartbeat failed; retrying")
        from django.db import connections

        for connection in connections.all(initialized_only=True):
            connection.close()
