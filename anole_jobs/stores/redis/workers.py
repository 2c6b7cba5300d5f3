"""The Redis store's worker records (a mixin of `RedisStore`): a hash of records as JSON and
a sorted set of their expiries (`keys.Keys.workers`, `keys.Keys.worker_expiry`). Writes are
scripts, so a record and its expiry always change together."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from anole_jobs.jsontext import compact
from anole_jobs.stores.audit import AUDIT_PAGE_MAX, AuditEntry
from anole_jobs.stores.workers import WorkerControl, WorkerRecord, worker_order

if TYPE_CHECKING:
    from anole_jobs.stores.redis.keys import Keys

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The most audit entries Redis keeps (older ones go first), besides the prune by age.
AUDIT_CAP = 100_000
#: Digits of an audit entry's id at the start of its member (so equal scores sort by id).
AUDIT_ID_WIDTH = 19


def score(moment: datetime) -> str:
    """`moment` as the sorted set's score: seconds since the Unix epoch, exact as text."""
    return repr((moment - _EPOCH).total_seconds())


class RedisWorkers:
    """`Store.record_worker`, `workers`, `remove_worker` and `prune_workers` on Redis."""

    if TYPE_CHECKING:  # what it uses of `RedisStore`
        keys: Keys

        def _run(self, script: str, *args: object) -> Any: ...
        def _read(self, method: str, *args: object) -> Any: ...

    def record_worker(self, worker: WorkerRecord) -> None:
        self._run("record_worker", worker.id, compact(worker.as_json()), score(worker.expires_at))

    def workers(self, *, now: datetime) -> list[WorkerRecord]:
        ids = self._read("zrangebyscore", self.keys.worker_expiry(), f"({score(now)}", "+inf")
        if not ids:
            return []
        values = self._read("hmget", self.keys.workers(), ids)
        controls = self._read("hmget", self.keys.worker_controls(), ids)
        found = [
            WorkerRecord.from_json(
                {**json.loads(v), "control": None if c is None else json.loads(c)}
            )
            for v, c in zip(values, controls, strict=True)
            if v is not None
        ]
        # The expiry in the record decides, as on every store (a score is a rounded copy).
        return sorted((w for w in found if w.expires_at > now), key=worker_order)

    def remove_worker(self, worker_id: str) -> bool:
        return bool(self._run("remove_worker", worker_id) == 1)

    def prune_workers(self, *, now: datetime) -> int:
        return int(self._run("prune_workers", score(now)))

    def request_worker_control(
        self, worker_id: str, control: WorkerControl, *, now: datetime
    ) -> bool:
        reply = self._run(
            "worker_control", worker_id, compact(control.as_json()), control.action, score(now)
        )
        return bool(int(reply) == 1)

    def worker_control(self, worker_id: str) -> WorkerControl | None:
        value = self._read("hget", self.keys.worker_controls(), worker_id)
        return None if value is None else WorkerControl.from_json(json.loads(value))

    # -- the operators' audit log ------------------------------------------------------------
    def record_audit(self, entry: AuditEntry) -> None:
        data = entry.as_json()
        del data["id"]
        self._run("audit_add", compact(data), score(entry.at), AUDIT_ID_WIDTH, AUDIT_CAP)

    def audit_entries(
        self, *, action: str | None = None, limit: int = 100, before: int | None = None
    ) -> list[AuditEntry]:
        limit = max(0, min(limit, AUDIT_PAGE_MAX))
        found: list[AuditEntry] = []
        start, page = 0, AUDIT_PAGE_MAX
        while len(found) < limit:
            members = self._read("zrevrange", self.keys.audit(), start, start + page - 1)
            for raw in members:
                text = raw.decode() if isinstance(raw, bytes) else raw
                entry_id = int(text[:AUDIT_ID_WIDTH])
                if before is not None and entry_id >= before:
                    continue
                entry = AuditEntry.from_json(json.loads(text[AUDIT_ID_WIDTH:]), id=entry_id)
                if action is None or entry.action == action:
                    found.append(entry)
            if len(members) < page:
                break
            start += page
        found.sort(key=lambda e: -e.id)
        return found[:limit]

    def prune_audit(self, *, before: datetime) -> int:
        return int(self._run("audit_prune", score(before)))
