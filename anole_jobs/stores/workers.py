"""Worker presence: what each running `runjobs` process (each runtime) records about itself.

A runtime records a `WorkerRecord` on its heartbeat cadence (one store call per heartbeat, not
per job) with an expiry a few heartbeats ahead; it removes it when it stops cleanly. A process
that dies leaves its record behind until the expiry passes: from then on `Store.workers`
no longer lists it, and the leader's prune (`Store.prune_workers`) deletes it.

The records travel as plain JSON (`as_json` / `from_json`) inside each store, so every store
keeps the same fields without a column per field. Leaf of the stores package: imports nothing
of the project.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

#: The most held jobs one record lists (a pool may hold up to a thousand claimed ahead); the
#: running ones first. `WorkerRecord.held` always counts them all.
LISTED_JOBS_MAX = 100


@dataclass(frozen=True, kw_only=True)
class HeldJob:
    """A job a worker holds: claimed by it and not finished. `running` is False while it
    waits in the worker's memory for a free slot (claimed ahead)."""

    id: int
    kind: str
    queue: str
    attempt: int
    started_at: datetime | None
    running: bool = True


@dataclass(frozen=True, kw_only=True)
class QueueSlots:
    """One queue a worker runs: its slots (the queue's concurrency) and how many are busy."""

    name: str
    busy: int
    total: int


#: What an operator can ask of one worker process: "quiet" (claim nothing more, finish the
#: jobs it runs) and "stop" (drain and exit, as a first SIGTERM does). "stop" is the stronger:
#: once asked, a later "quiet" leaves it as it is.
CONTROL_ACTIONS = ("quiet", "stop")


@dataclass(frozen=True, kw_only=True)
class WorkerControl:
    """An operator's request to one worker: `action` (one of `CONTROL_ACTIONS`), who asked
    (`by`: a user name, or "cli"), from which surface and when. The worker reads it within
    about a second (`worker.control.ControlWatch`) and acts on it once."""

    action: str
    by: str
    at: datetime
    surface: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "by": self.by,
            "at": self.at.isoformat(),
            "surface": self.surface,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkerControl:
        return cls(
            action=str(data["action"]),
            by=str(data.get("by", "")),
            at=datetime.fromisoformat(data["at"]),
            surface=str(data.get("surface", "")),
        )


def stronger(old: WorkerControl | None, new: WorkerControl) -> bool:
    """Whether `new` replaces `old`: always, except a "quiet" after a "stop"."""
    return old is None or not (old.action == "stop" and new.action != "stop")


@dataclass(frozen=True, kw_only=True)
class WorkerRecord:
    """One worker process as it last reported itself.

    `id` is unique per runtime (host, pid and a random part: a restarted process on a reused
    pid is another worker). `last_seen` is the heartbeat that wrote it; `expires_at` is when
    the record stops counting if no heartbeat renews it. `held` counts every job the worker
    holds; `jobs` lists up to `LISTED_JOBS_MAX` of them, the running ones first.
    """

    id: str
    host: str
    pid: int
    version: str
    queues: tuple[QueueSlots, ...]
    started_at: datetime
    last_seen: datetime
    expires_at: datetime
    held: int = 0
    jobs: tuple[HeldJob, ...] = field(default=())
    #: The kinds it has a handler for; None when its record does not say (an older release).
    kinds: tuple[str, ...] | None = None
    #: What its claims name (docs/deploys.md): each kind and alias it runs, at each stored
    #: version it can run ("billing.charge" for version 1, "billing.charge@2" above). None:
    #: a record written before workers recorded it.
    runs: tuple[str, ...] | None = None
    #: The operator's request to it (quiet or stop), when one was made; the store adds it
    #: when it lists workers (the worker's own heartbeat never writes it).
    control: WorkerControl | None = None

    def can_run(self, kind: str, version: int = 1) -> bool | None:
        """Whether this worker claims stored jobs of `kind` at `version`; None when its record
        does not say (written by an older release)."""
        if self.runs is None:
            return None
        key = kind if version <= 1 else f"{kind}@{version}"
        return key in self.runs

    @property
    def busy(self) -> int:
        return sum(queue.busy for queue in self.queues)

    @property
    def slots(self) -> int:
        return sum(queue.total for queue in self.queues)

    def as_json(self) -> dict[str, Any]:
        """Every field as JSON (times as ISO 8601 text)."""
        return {
            "id": self.id,
            "host": self.host,
            "pid": self.pid,
            "version": self.version,
            "queues": [{"name": q.name, "busy": q.busy, "total": q.total} for q in self.queues],
            "started_at": self.started_at.isoformat(),
            "last_seen": self.last_seen.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "held": self.held,
            "jobs": [
                {
                    "id": job.id,
                    "kind": job.kind,
                    "queue": job.queue,
                    "attempt": job.attempt,
                    "started_at": None if job.started_at is None else job.started_at.isoformat(),
                    "running": job.running,
                }
                for job in self.jobs
            ],
            **({} if self.kinds is None else {"kinds": list(self.kinds)}),
            "runs": None if self.runs is None else list(self.runs),
            **({} if self.control is None else {"control": self.control.as_json()}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkerRecord:
        """The record `as_json` wrote."""

        def time(value: Any) -> datetime:
            return datetime.fromisoformat(value)

        return cls(
            id=str(data["id"]),
            host=str(data["host"]),
            pid=int(data["pid"]),
            version=str(data["version"]),
            queues=tuple(
                QueueSlots(name=str(q["name"]), busy=int(q["busy"]), total=int(q["total"]))
                for q in data.get("queues", ())
            ),
            started_at=time(data["started_at"]),
            last_seen=time(data["last_seen"]),
            expires_at=time(data["expires_at"]),
            held=int(data.get("held", 0)),
            jobs=tuple(
                HeldJob(
                    id=int(job["id"]),
                    kind=str(job["kind"]),
                    queue=str(job["queue"]),
                    attempt=int(job["attempt"]),
                    started_at=None if job.get("started_at") is None else time(job["started_at"]),
                    running=bool(job.get("running", True)),
                )
                for job in data.get("jobs", ())
            ),
            kinds=None if data.get("kinds") is None else tuple(map(str, data["kinds"])),
            runs=None if data.get("runs") is None else tuple(str(k) for k in data["runs"]),
            control=None
            if data.get("control") is None
            else WorkerControl.from_json(data["control"]),
        )


def worker_order(record: WorkerRecord) -> tuple[str, int, str]:
    """How every store lists workers: by host, then pid, then id."""
    return (record.host, record.pid, record.id)


#: Guards the memory stores' worker tables (short dict operations only).
_memory_lock = threading.Lock()


class MemoryWorkers:
    """The memory store's worker records (a mixin of `MemoryStore`): one dict, its own lock."""

    def _control_table(self) -> dict[str, WorkerControl]:
        table: dict[str, WorkerControl] | None = self.__dict__.get("_worker_controls")
        if table is None:
            table = self.__dict__.setdefault("_worker_controls", {})
        return table

    def _worker_table(self) -> dict[str, WorkerRecord]:
        table: dict[str, WorkerRecord] | None = self.__dict__.get("_workers")
        if table is None:
            table = self.__dict__.setdefault("_workers", {})
        return table

    def record_worker(self, worker: WorkerRecord) -> None:
        with _memory_lock:
            self._worker_table()[worker.id] = worker

    def workers(self, *, now: datetime) -> list[WorkerRecord]:
        with _memory_lock:
            controls = self._control_table()
            found = [
                replace(w, control=controls.get(w.id))
                for w in self._worker_table().values()
                if w.expires_at > now
            ]
        return sorted(found, key=worker_order)

    def remove_worker(self, worker_id: str) -> bool:
        with _memory_lock:
            self._control_table().pop(worker_id, None)
            return self._worker_table().pop(worker_id, None) is not None

    def request_worker_control(
        self, worker_id: str, control: WorkerControl, *, now: datetime
    ) -> bool:
        with _memory_lock:
            worker = self._worker_table().get(worker_id)
            if worker is None or worker.expires_at <= now:
                return False
            controls = self._control_table()
            if stronger(controls.get(worker_id), control):
                controls[worker_id] = control
            return True

    def worker_control(self, worker_id: str) -> WorkerControl | None:
        with _memory_lock:
            return self._control_table().get(worker_id)

    def prune_workers(self, *, now: datetime) -> int:
        with _memory_lock:
            table = self._worker_table()
            expired = [key for key, w in table.items() if w.expires_at <= now]
            for key in expired:
                del table[key]
                self._control_table().pop(key, None)
            return len(expired)
