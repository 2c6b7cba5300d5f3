"""The Redis store's worker records (a mixin of `RedisStore`): a hash of records as JSON and
a sorted set of their expiries (`keys.Keys.workers`, `keys.Keys.worker_expiry`). Writes are
scripts, so a record and its expiry always change together."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from anole_jobs.jsontext import compact
from anole_jobs.stores.workers import WorkerRecord, worker_order

if TYPE_CHECKING:
    from anole_jobs.stores.redis.keys import Keys

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
        found = [WorkerRecord.from_json(json.loads(v)) for v in values if v is not None]
        # The expiry in the record decides, as on every store (a score is a rounded copy).
        return sorted((w for w in found if w.expires_at > now), key=worker_order)

    def remove_worker(self, worker_id: str) -> bool:
        return bool(self._run("remove_worker", worker_id) == 1)

    def prune_workers(self, *, now: datetime) -> int:
        return int(self._run("prune_workers", score(now)))
