"""The SQL stores' worker records (a mixin of `SQLStore`): one row per running worker in the
``<prefix>worker`` table (migration 0008). The columns the store filters on (`expires_at`)
and people sort by (`host`, `pid`) are columns; the rest of the record is the `info` JSON."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from anole_jobs.jsontext import compact
from anole_jobs.stores.audit import AUDIT_PAGE_MAX, AuditEntry
from anole_jobs.stores.workers import WorkerControl, WorkerRecord, worker_order

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
        def decode_time(self, value: Any) -> datetime | None: ...

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
                f"SELECT info, control FROM {self._worker_table()} WHERE expires_at > %s",
                [self.encode_time(now)],
            )
            found = [
                WorkerRecord.from_json(
                    {**_decoded(info), "control": None if control is None else json.loads(control)}
                )
                for (info, control) in cursor.fetchall()
            ]
        return sorted(found, key=worker_order)

    def request_worker_control(
        self, worker_id: str, control: WorkerControl, *, now: datetime
    ) -> bool:
        # One statement: a "stop" recorded already is kept over a later "quiet".
        keep_stop = (
            "" if control.action == "stop" else " AND (control IS NULL OR control NOT LIKE %s)"
        )
        params: list[Any] = [compact(control.as_json()), worker_id, self.encode_time(now)]
        if keep_stop:
            params.append('{"action":"stop"%')
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f"UPDATE {self._worker_table()} SET control = %s"
                f" WHERE id = %s AND expires_at > %s{keep_stop}",
                params,
            )
            if cursor.rowcount > 0:
                return True
            cursor.execute(
                f"SELECT 1 FROM {self._worker_table()} WHERE id = %s AND expires_at > %s",
                [worker_id, self.encode_time(now)],
            )
            return cursor.fetchone() is not None

    def worker_control(self, worker_id: str) -> WorkerControl | None:
        with self.cursor() as cursor:
            cursor.execute(f"SELECT control FROM {self._worker_table()} WHERE id = %s", [worker_id])
            row = cursor.fetchone()
        if row is None or row[0] is None:
            return None
        return WorkerControl.from_json(json.loads(row[0]))

    # -- the operators' audit log (migration 0017) ------------------------------------------
    def record_audit(self, entry: AuditEntry) -> None:
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f'INSERT INTO "{self.tables.audit}" (at, actor, action, target, surface, detail)'
                " VALUES (%s, %s, %s, %s, %s, %s)",
                [
                    self.encode_time(entry.at),
                    entry.actor,
                    entry.action,
                    entry.target,
                    entry.surface,
                    entry.detail,
                ],
            )

    def audit_entries(
        self, *, action: str | None = None, limit: int = 100, before: int | None = None
    ) -> list[AuditEntry]:
        where: list[str] = []
        params: list[Any] = []
        if action is not None:
            where.append("action = %s")
            params.append(action)
        if before is not None:
            where.append("id < %s")
            params.append(before)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        params.append(max(0, min(limit, AUDIT_PAGE_MAX)))
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT id, at, actor, action, target, surface, detail"
                f' FROM "{self.tables.audit}"{clause} ORDER BY id DESC LIMIT %s',
                params,
            )
            rows = cursor.fetchall()
        return [
            AuditEntry(
                id=int(row[0]),
                at=cast("datetime", self.decode_time(row[1])),
                actor=row[2],
                action=row[3],
                target=row[4],
                surface=row[5],
                detail=row[6],
            )
            for row in rows
        ]

    def prune_audit(self, *, before: datetime) -> int:
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f'DELETE FROM "{self.tables.audit}" WHERE at < %s', [self.encode_time(before)]
            )
            return cursor.rowcount

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
