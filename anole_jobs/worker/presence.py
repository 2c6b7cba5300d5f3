"""Worker presence: the runtime records itself in the store so that operators see which
worker processes are alive and what each holds (`jobs.workers()`, ``GET /workers``,
``manage.py jobs workers``, the dashboard's workers page).

The heartbeat thread calls `Presence.record` once per round (about every LEASE/3): one store
call per round, whatever the number of jobs. Each record expires `BEATS_TO_EXPIRE` heartbeat
intervals after it was written, so a process that died (killed, its host gone) drops out of
the lists within about one LEASE, and the leader's prune deletes it. A clean stop removes the
record at once (`remove`).

The host is the machine's name, or ``ANOLE_JOBS_HOST`` when the environment sets it (a
container's or a demo's fixed label).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta

from anole_jobs.conf import QueueConfig
from anole_jobs.service import JobService
from anole_jobs.stores.workers import LISTED_JOBS_MAX, HeldJob, QueueSlots, WorkerRecord
from anole_jobs.worker.runs import RunRegistry

logger = logging.getLogger("anole_jobs.worker")

#: Heartbeat intervals after which a record no heartbeat renewed stops counting.
BEATS_TO_EXPIRE = 3
#: The environment variable that names the host in worker records (default: the host name).
HOST_ENV = "ANOLE_JOBS_HOST"


def host_label() -> str:
    """The host a worker reports: ``ANOLE_JOBS_HOST`` when set, else the machine's name."""
    return os.environ.get(HOST_ENV, "").strip() or socket.gethostname()


def version() -> str:
    """The installed anole_jobs version (``anole_jobs.__version__``, read without importing
    the package's public names, which would import the facade from the runtime)."""
    import sys

    return str(getattr(sys.modules["anole_jobs"], "__version__", "unknown"))


class Presence:
    """Builds this runtime's `WorkerRecord` and writes it to the store."""

    def __init__(
        self,
        service: JobService,
        *,
        worker_id: str,
        queues: Sequence[QueueConfig],
        runs: RunRegistry,
        interval: float,
    ) -> None:
        self.service = service
        self.worker_id = worker_id
        self.queues = list(queues)
        self.runs = runs
        self.ttl = timedelta(seconds=interval * BEATS_TO_EXPIRE)
        self.host = host_label()
        self.pid = os.getpid()
        self.version = version()
        self.started_at: datetime | None = None
        self._failing = False

    def snapshot(self, now: datetime) -> WorkerRecord:
        """The record as of `now`: the queues' busy slots and the jobs held, running first."""
        if self.started_at is None:
            self.started_at = now
        runs = self.runs.snapshot()
        # A run is busy once a slot started it (its span is set then); before that it waits
        # in the pool, claimed ahead.
        busy: dict[str, int] = {}
        for run in runs:
            if run.span is not None:
                queue = run.claimed.record.queue
                busy[queue] = busy.get(queue, 0) + 1
        held = sorted(
            (
                HeldJob(
                    id=run.claimed.record.id,
                    kind=run.claimed.record.kind,
                    queue=run.claimed.record.queue,
                    attempt=run.claimed.record.attempt,
                    started_at=run.claimed.record.attempted_at,
                    running=run.span is not None,
                )
                for run in runs
            ),
            key=lambda job: (not job.running, job.id),
        )
        return WorkerRecord(
            id=self.worker_id,
            host=self.host,
            pid=self.pid,
            version=self.version,
            queues=tuple(
                QueueSlots(name=q.name, busy=busy.get(q.name, 0), total=q.concurrency)
                for q in self.queues
            ),
            started_at=self.started_at,
            last_seen=now,
            expires_at=now + self.ttl,
            held=len(held),
            jobs=tuple(held[:LISTED_JOBS_MAX]),
            kinds=tuple(sorted(self.service.registry.handled_kinds())),
            runs=tuple(sorted(self.service.registry.claim_keys())),
        )

    def record(self) -> WorkerRecord:
        """Write the record (one store call); returns it."""
        worker = self.snapshot(self.service.clock())
        self.service.store.record_worker(worker)
        return worker

    def record_or_log(self) -> bool:
        """`record`, for the heartbeat: a failure is logged (once until a record succeeds
        again) and never fails the heartbeat's round, whose back-off would delay the lease
        extensions that keep the jobs. True when the record was written."""
        try:
            self.record()
        except Exception as exc:  # noqa: BLE001 - presence must never cost a lease
            if not self._failing:
                self._failing = True
                logger.warning(
                    "could not record this worker in the store (the workers page and "
                    "`jobs workers` will not list it until this succeeds): %s",
                    " ".join(str(exc).split()),
                )
            return False
        if self._failing:
            self._failing = False
            logger.info("this worker's record is written again")
        return True

    def remove(self, timeout: float) -> bool:
        """Delete the record, waiting at most `timeout` seconds (the exit bound holds even if
        the store hangs: the record then expires by itself). True when it was removed."""
        done = threading.Event()
        removed: list[bool] = []

        def call() -> None:
            from anole_jobs.background import close_connections

            try:
                removed.append(self.service.store.remove_worker(self.worker_id))
            except Exception as exc:  # noqa: BLE001 - the record expires by itself
                logger.info("could not remove this worker's record (it expires by itself): %s", exc)
            finally:
                close_connections()
                done.set()

        threading.Thread(target=call, name="anole-presence-remove", daemon=True).start()
        done.wait(max(timeout, 0.0))
        return bool(removed and removed[0])
