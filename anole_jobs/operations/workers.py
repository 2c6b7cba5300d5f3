"""Which worker processes are alive, what each runs, and which queues no worker serves.

`overview()` reads the worker records (`jobs.workers()`: every `runjobs` process, and each
process of a supervisor, records itself on its heartbeat) and the queues, and answers what an
operator asks first: are workers up, are they busy, is any of them late (its heartbeat is
overdue: the process may be stuck or cut off from the store), and does a queue with waiting
jobs have no worker at all. The JSON route, the CLI and the dashboard show it their ways.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from anole_jobs.api import jobs
from anole_jobs.operations.clock import now as clock_now
from anole_jobs.stores.workers import WorkerRecord

#: States of the jobs a worker could claim now: a queue holding some and served by no live
#: worker is named (scheduled and retrying jobs are not due yet; pending ones wait on others).
CLAIMABLE = ("available",)


@dataclass(frozen=True, kw_only=True)
class WorkerStatus:
    """One worker as the surfaces show it: its record, and whether its heartbeat is late."""

    record: WorkerRecord
    #: Seconds since its last heartbeat.
    seen_ago: float
    #: More than one heartbeat overdue: still listed, but the process may be stuck or cut off.
    late: bool


@dataclass(frozen=True, kw_only=True)
class Overview:
    now: datetime
    workers: list[WorkerStatus]
    #: Queues with jobs waiting to be claimed that no live worker runs, by name.
    queues_without_workers: list[str]

    @property
    def busy(self) -> int:
        return sum(status.record.busy for status in self.workers)

    @property
    def slots(self) -> int:
        return sum(status.record.slots for status in self.workers)

    @property
    def held(self) -> int:
        return sum(status.record.held for status in self.workers)


def status(record: WorkerRecord, now: datetime) -> WorkerStatus:
    """`record` as of `now`. A record expires a few heartbeats after it was written; a worker
    whose last heartbeat is more than half of that ago missed at least one."""
    seen_ago = max(0.0, (now - record.last_seen).total_seconds())
    ttl = (record.expires_at - record.last_seen).total_seconds()
    return WorkerStatus(record=record, seen_ago=seen_ago, late=seen_ago > ttl / 2)


def overview() -> Overview:
    now = clock_now()
    records = jobs.workers()
    served = {queue.name for record in records for queue in record.queues}
    unserved = [
        queue.name
        for queue in jobs.queues()
        if queue.name not in served
        and not queue.paused
        and any(queue.counts.get(state, 0) for state in CLAIMABLE)
    ]
    return Overview(
        now=now,
        workers=[status(record, now) for record in records],
        queues_without_workers=unserved,
    )


def control(worker_id: str, action: str) -> bool:
    """Ask worker `worker_id` to quiet or stop, as the current actor (`audit.acting`), and
    record it in the audit log; `NotFound` when no such worker is alive."""
    from anole_jobs.operations import audit
    from anole_jobs.operations.problems import NotFound

    actor, surface = audit.current()
    if not jobs.control_worker(worker_id, action, by=actor, surface=surface):
        raise NotFound(f"no live worker with id {worker_id!r}", code="unknown_worker")
    audit.record(f"worker_{action}", f"worker {worker_id}")
    return True
