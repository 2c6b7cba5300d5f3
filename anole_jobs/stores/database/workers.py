"""The SQL stores' worker records (a mixin of `SQLStore`): one row per running worker in the
``<prefix>worker`` table (migration 0008). The columns the store filters on (`expires_at`)
and people sort by (`host`, `pid`) are columns; the rest of the record is the `info` JSON."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from anole_jobs.jsontext import compact
from anole_jobs.stores.workers import WorkerRecord, worker_order

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from django.db.backends.utils import CursorWrapper

    from anole_jobs.stores.database.ddl import Tables


class SQLWorkers:
    """`Store.record_worker`, `workers`, `remove_worker` and `prune_workers` in SQL."""

    if TYPE_CHECKING:  # what it uses of `SQLStore`
        tables: Tables
        json_parameter: str

        def writing(self) -> AbstractContextManager[Any]: ...
        def cursor(self) -> CursorWrapper: ...
        def encode_time(self, value: datetime | None) -> Any: ...

    def _worker_table(self) -> str:
        return f'"{self.tables.worker}"'

    def record_worker(self, worker: WorkerRecord) -> None:
        table = self._worker_table()
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (id, host, pid, started_at, last_seen, expires_at, info)"
                f" VALUES (%s, %s, %s, %s, %s, %s, {self.json_parameter})"
                " ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
                " started_at = excluded.started_at, last_seen = excluded.last_seen,"
                " expires_at = excluded.expires_at, info = excluded.info",
                [
                    worker.id,
                    worker.host,
                    worker.pid,
                    self.encode_time(worker.started_at),
                    self.encode_time(worker.last_seen),
                    self.encode_time(worker.expires_at),
                    compact(worker.as_json()),
                ],
            )

    def workers(self, *, now: datetime) -> list[WorkerRecord]:
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT info FROM {self._worker_table()} WHERE expires_at > %s",
                [self.encode_time(now)],
            )
            found = [WorkerRecord.from_json(_decoded(info)) for (info,) in cursor.fetchall()]
        return sorted(found, key=worker_order)

    def remove_worker(self, worker_id: str) -> bool:
        with self.writing(), self.cursor() as cursor:
            cursor.execute(f"DELETE FROM {self._worker_table()} WHERE id = %s", [worker_id])
            return cursor.rowcount > 0

    def prune_workers(self, *, now: datetime) -> int:
        # One statement: a row a heartbeat renewed meanwhile no longer matches.
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {self._worker_table()} WHERE expires_at <= %s",
                [self.encode_time(now)],
            )
            return cursor.rowcount


def _decoded(value: Any) -> Any:
    # Django loads PostgreSQL jsonb as text for its JSONField; a custom loader may not.
    return json.loads(value) if isinstance(value, (str, bytes)) else value
