"""The SQL stores' enqueue flow (a mixin of `SQLStore`): debounced and replacing inserts, the
queues' oldest available jobs, and what `jobs.why` reads (a partition's use of its limits).

Both inserts keep the unique constraint on ``unique_lock`` as their referee, as `insert` does:
a debounced job holds its debounce key in ``unique_lock`` (its ``unique_key`` stays NULL, so a
retry never takes the key back) while it may still fold enqueues, and a replacing insert
takes the key from the job it cancels in the same transaction. A concurrent enqueue that
loses the race meets the constraint and tries again, so no interleaving makes two jobs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from anole_jobs.core import ErrorEntry
from anole_jobs.jsontext import compact
from anole_jobs.limits import Limits
from anole_jobs.stores.base import REPLACED, REPLACED_MESSAGE, Inserted, LimitUsage, NewJob
from anole_jobs.stores.database.limits import _decode, _runtime
from anole_jobs.stores.database.parts import LIVE
from anole_jobs.stores.wakeups import announce

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from django.db.backends.utils import CursorWrapper

    from anole_jobs.stores.database.ddl import Tables

#: How often an insert tries again when a concurrent one took the key between its statements.
FLOW_ROUNDS = 8


class SQLFlow:
    """`Store.insert_debounced`, `insert_replacing`, `oldest_available` and `limit_usage`."""

    if TYPE_CHECKING:  # what it uses of `SQLStore`
        vendor: str
        tables: Tables
        job_table: str
        json_parameter: str

        def cursor(self) -> CursorWrapper: ...
        def writing(self) -> AbstractContextManager[Any]: ...
        def write_lock(self) -> AbstractContextManager[None]: ...
        def encode_time(self, value: datetime | None) -> Any: ...
        def decode_time(self, value: Any) -> datetime | None: ...
        def in_list(self, column: str, values: Collection[Any]) -> tuple[str, list[Any]]: ...
        def insert_rows(
            self, cursor: CursorWrapper, jobs: Sequence[NewJob]
        ) -> list[tuple[int, Any]]: ...
        def send_done_notify(self, job_ids: Sequence[int]) -> None: ...
        def lock_sequences(self, cursor: CursorWrapper, jobs: Sequence[NewJob]) -> None: ...
        def stamp_flow(
            self, cursor: CursorWrapper, jobs: Sequence[NewJob], results: Sequence[Inserted]
        ) -> None: ...
        def finished_at_commit(self, job_ids: Collection[int]) -> None: ...
        def wake_at_commit(self, queues: Collection[str] | Mapping[str, int]) -> None: ...
        def _running(self, cursor: CursorWrapper, queue: str, limits: Limits) -> dict[str, int]: ...

    # -- vendor differences, kept here (two short expressions) --------------------------------
    def _capped(self, job: NewJob) -> tuple[str, list[Any]]:
        """The folded job's next `scheduled_at`: `job.scheduled_at`, or the holder's
        `created_at` plus the cap when that is earlier."""
        due = self.encode_time(job.scheduled_at)
        cap = job.debounce_max_wait
        if cap is None:
            return "%s", [due]
        if self.vendor == "postgresql":
            return "LEAST(%s, created_at + %s)", [due, cap]
        # SQLite: the stored text of a time, moved by a modifier (to the millisecond), then
        # written as Django writes times (six digits of fraction, none for a whole second)
        # so that it compares with them as text.
        moved = "(strftime('%%Y-%%m-%%d %%H:%%M:%%f', created_at, %s) || '000')"
        return (
            f"MIN(%s, CASE WHEN substr({moved}, 21) = '000000' THEN substr({moved}, 1, 19)"
            f" ELSE {moved} END)",
            [due, *[f"+{cap.total_seconds():.6f} seconds"] * 3],
        )

    def _append_error(self) -> str:
        """`errors` with one entry (a parameter) appended, its attempt the row's."""
        if self.vendor == "postgresql":
            return (
                "errors || jsonb_build_array(jsonb_set(%s::jsonb, '{attempt}', to_jsonb(attempt)))"
            )
        return "json_insert(errors, '$[#]', json_set(json(%s), '$.attempt', attempt))"

    # -- enqueueing ---------------------------------------------------------------------------
    def insert_debounced(self, job: NewJob) -> Inserted:
        key = job.debounce_key
        assert key is not None
        table = self.job_table
        now = self.encode_time(job.created_at)
        due, due_params = self._capped(job)
        json_param = self.json_parameter
        for _ in range(FLOW_ROUNDS):
            # The common case, a burst folding into its job: one statement.
            with self.writing(), self.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET args = {json_param}, meta = {json_param},"
                    f" priority = %s, scheduled_at = {due}"
                    " WHERE unique_lock = %s AND state = 'scheduled' AND scheduled_at > %s"
                    " RETURNING id",
                    [
                        compact(dict(job.args)),
                        compact(dict(job.meta)),
                        job.priority,
                        *due_params,
                        key,
                        now,
                    ],
                )
                folded = cursor.fetchone()
            if folded is not None:
                return Inserted(folded[0], False)
            with self.write_lock(), self.cursor() as cursor:
                # A holder that started or is due lets the key go; then the new job takes it.
                cursor.execute(
                    f"UPDATE {table} SET unique_lock = NULL WHERE unique_lock = %s"
                    " AND NOT (state = 'scheduled' AND scheduled_at > %s)",
                    [key, now],
                )
                self.lock_sequences(cursor, [job])
                rows = self.insert_rows(cursor, [replace(job, unique_key=key, unique_scope="live")])
                if rows:
                    cursor.execute(
                        f"UPDATE {table} SET unique_key = NULL WHERE id = %s", [rows[0][0]]
                    )
                    # Its turn in a fair queue and its place in its sequence, as any insert's.
                    self.stamp_flow(cursor, [job], [Inserted(rows[0][0], True)])
            if rows:
                if job.state == "available":
                    self.wake_at_commit({job.queue: job.priority})
                return Inserted(rows[0][0], True)
        raise RuntimeError(f"insert: debounce key kept changing hands in {FLOW_ROUNDS} rounds")

    def insert_replacing(self, job: NewJob) -> Inserted:
        key = job.unique_key
        assert key is not None
        table = self.job_table
        error = ErrorEntry(at=job.created_at, attempt=0, type=REPLACED, message=REPLACED_MESSAGE)
        entry = error.as_json()
        for _ in range(FLOW_ROUNDS):
            with self.write_lock(), self.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET state = 'cancelled', finished_at = %s,"
                    f" lease_until = NULL, unique_lock = NULL, errors = {self._append_error()}"
                    f" WHERE unique_lock = %s AND state IN ({LIVE}) RETURNING id",
                    [self.encode_time(job.created_at), compact(entry), key],
                )
                ended_ids = [row[0] for row in cursor.fetchall()]
                self.lock_sequences(cursor, [job])
                rows = self.insert_rows(cursor, [job])
                if rows:
                    self.stamp_flow(cursor, [job], [Inserted(rows[0][0], True)])
                if ended_ids:
                    self.send_done_notify(ended_ids)
            if ended_ids:
                self.finished_at_commit(ended_ids)
            if rows:
                woken: dict[str, int] = {}
                if job.state == "available":
                    announce(woken, job.queue, job.priority)
                    self.wake_at_commit(woken)
                return Inserted(rows[0][0], True)
        raise RuntimeError(f"insert: unique key kept changing hands in {FLOW_ROUNDS} rounds")

    # -- queue latency ------------------------------------------------------------------------
    def oldest_available(self, queues: Collection[str]) -> dict[str, datetime]:
        if not queues:
            return {}
        where, params = self.in_list("queue", list(queues))
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT queue, MIN(scheduled_at) FROM {self.job_table}"
                f" WHERE state = 'available' AND {where} GROUP BY queue",
                params,
            )
            rows = cursor.fetchall()
        found: dict[str, datetime] = {}
        for queue, at in rows:
            decoded = self.decode_time(at)
            if decoded is not None:
                found[queue] = decoded
        return found

    # -- why a job waits ----------------------------------------------------------------------
    def limit_usage(
        self, queue: str, limits: Limits, *, partition: str, now: datetime
    ) -> LimitUsage:
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT global_concurrency, rate_count, rate_seconds, claims"
                f' FROM "{self.tables.limit}" WHERE queue = %s',
                [queue],
            )
            row = cursor.fetchone()
            effective = limits.overlay(_runtime(*row[:3]) if row is not None else None)
            running = 0
            if effective.global_concurrency is not None:
                running = self._running(cursor, queue, effective).get(partition, 0)
        claims: tuple[float, ...] = ()
        rate = effective.rate_limit
        if rate is not None and row is not None:
            window = _decode(row[3]) or {}
            since = now.timestamp() - rate.seconds
            claims = tuple(sorted(t for t in window.get(partition, ()) if t > since))
        return LimitUsage(limits=effective, running=running, claims=claims)
