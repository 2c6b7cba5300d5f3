"""Fair flow and sequences on the database store (docs/flow-control.md), shared by PostgreSQL
and SQLite.

Turns: a job enqueued to a queue with fairness gets, in the insert's transaction, its value
(`fair_key`) and its turn (`fair_order`, `anole_jobs.limits.fair_orders`): one after the latest
turn of its value's jobs still waiting or running, and no earlier than the turn the queue's
claims have reached (just before its first available turn). A fair claim takes the queue's
available jobs by priority, then turn, then id (index ``job_fair``), so it costs what a plain
claim costs however many values wait. Jobs enqueued before the queue had fairness (no turn)
come after the fair ones.

Sequences: a job of a kind with a sequence keeps it in `sequence_key`. A claim made with
`Limits.sequenced` skips a job while an earlier job (a lower id) of its sequence has not ended
(index ``job_sequence`` holds only those): whatever state that one is in, it is not ended in
any snapshot a claim can read until its end commits, so two claims cannot both see a
sequence free.

Without limits in force the claim is one statement (a PostgreSQL claim does not wait for the
WAL flush, as the plain claim does not); a limit set at runtime for the queue makes that
statement claim nothing and the claim goes the limited way (stores/database/limits.py).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from anole_jobs.kinds import registry
from anole_jobs.limits import Limits, fair_orders
from anole_jobs.stores.base import ClaimedJob, FairnessState, Inserted, LimitedClaim, NewJob
from anole_jobs.stores.database.parts import CLAIM_KEY_SQL

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper

    from anole_jobs.stores.database.ddl import Tables

#: The states of a job that has not ended, as the flow indexes name them (literally: SQLite
#: uses a partial index only for a query that repeats its terms).
LIVE_SQL = "('pending', 'scheduled', 'available', 'running', 'retrying')"


class SQLFairFlow:
    """Mixed into `SQLStore`: turns and sequences."""

    if TYPE_CHECKING:  # what it uses of `SQLStore`
        tables: Tables
        job_table: str
        vendor: str
        skip_locked: str

        def cursor(self) -> CursorWrapper: ...
        def in_list(self, column: str, values: Collection[Any]) -> tuple[str, list[Any]]: ...
        def not_paused(self) -> str: ...
        def encode_time(self, value: datetime | None) -> Any: ...
        def claimed_job(
            self, row: Sequence[Any], now: datetime, lease_until: datetime
        ) -> ClaimedJob: ...
        def remember_plain(self, claimed: list[ClaimedJob]) -> list[ClaimedJob]: ...
        def select(self, alias: str = "") -> str: ...

    # -- enqueue ---------------------------------------------------------------------------
    def lock_sequences(self, cursor: CursorWrapper, jobs: Sequence[NewJob]) -> None:
        """Before jobs of sequences are inserted (in the insert's transaction): PostgreSQL
        takes a transaction lock per sequence, so two transactions enqueueing to one sequence
        take their ids one after the other, and a job is never visible to a claim before an
        earlier job of its sequence is (a later id committed first would run first). SQLite
        has one writer at a time already."""
        keys = sorted({job.sequence_key for job in jobs if job.sequence_key is not None})
        if not keys or self.vendor != "postgresql":
            return
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtext('anole_jobs.sequence'), s.h) FROM"
            " (SELECT DISTINCT hashtext(k) AS h FROM unnest(%s::text[]) AS k ORDER BY 1) AS s",
            [keys],
        )

    def stamp_flow(
        self, cursor: CursorWrapper, jobs: Sequence[NewJob], results: Sequence[Inserted]
    ) -> None:
        """Give the jobs just inserted (in the insert's transaction) their value, turn and
        sequence."""
        fresh = [
            (job, result.id)
            for job, result in zip(jobs, results, strict=True)
            if result.inserted and job.flow
        ]
        if not fresh:
            return
        orders: dict[int, float] = {}
        groups: dict[tuple[str, str], list[tuple[NewJob, int]]] = {}
        for job, job_id in fresh:
            if job.fair_key is not None:
                groups.setdefault((job.queue, job.fair_key), []).append((job, job_id))
        by_queue: dict[str, list[str]] = {}
        for queue, key in groups:
            by_queue.setdefault(queue, []).append(key)
        for queue, keys in by_queue.items():
            start = self._fair_start(cursor, queue)
            where, params = self.in_list("fair_key", keys)
            cursor.execute(
                f"SELECT fair_key, MAX(fair_order) FROM {self.job_table} WHERE queue = %s"
                f" AND {where} AND fair_order IS NOT NULL AND state IN {LIVE_SQL}"
                " GROUP BY fair_key",
                [queue, *params],
            )
            lasts = dict(cursor.fetchall())
            for key in keys:
                members = groups[(queue, key)]
                last = lasts.get(key)
                given = fair_orders(
                    start,
                    None if last is None else float(last),
                    members[0][0].fair_weight,
                    len(members),
                )
                for (_, job_id), order in zip(members, given, strict=True):
                    orders[job_id] = order
        batch = [
            [job_id, job.fair_key, orders.get(job_id), job.sequence_key] for job, job_id in fresh
        ]
        if self.vendor == "postgresql":
            cursor.execute(
                f"UPDATE {self.job_table} AS j SET fair_key = f.k, fair_order = f.o,"
                " sequence_key = f.s FROM (SELECT (r->>0)::bigint AS i, r->>1 AS k,"
                " (r->>2)::double precision AS o, r->>3 AS s"
                " FROM jsonb_array_elements(%s::jsonb) AS t(r)) AS f WHERE j.id = f.i",
                [json.dumps(batch)],
            )
        else:
            cursor.execute(
                f"UPDATE {self.job_table} SET fair_key = f.k, fair_order = f.o,"
                " sequence_key = f.s FROM (SELECT json_extract(value, '$[0]') AS i,"
                " json_extract(value, '$[1]') AS k, json_extract(value, '$[2]') AS o,"
                " json_extract(value, '$[3]') AS s FROM json_each(%s)) AS f WHERE id = f.i",
                [json.dumps(batch)],
            )

    def _fair_start(self, cursor: CursorWrapper, queue: str) -> float:
        """The turn the queue's claims have reached: just before the turn its next claim
        takes (the first of its top priority, read from the fair claim's index); with none
        available, its latest turn running (0 with none)."""
        cursor.execute(
            f"SELECT fair_order FROM {self.job_table}"
            " WHERE queue = %s AND fair_order IS NOT NULL AND state = 'available'"
            " ORDER BY priority DESC, fair_order LIMIT 1",
            [queue],
        )
        first = cursor.fetchone()
        if first is not None:
            return float(first[0]) - 1.0
        cursor.execute(
            f"SELECT MAX(fair_order) FROM {self.job_table}"
            " WHERE queue = %s AND fair_order IS NOT NULL AND state = 'running'",
            [queue],
        )
        latest = cursor.fetchone()[0]
        return 0.0 if latest is None else float(latest)

    # -- claim -----------------------------------------------------------------------------
    def flow_conditions(self, limits: Limits, *, alias: str = "c") -> str:
        """The claim's conditions of the flow: a fair queue's jobs with a turn, and no job
        of a sequence while an earlier one has not ended."""
        where = ""
        if limits.fairness is not None:
            where += f" AND {alias}.fair_order IS NOT NULL"
        if limits.sequenced:
            where += (
                f" AND ({alias}.sequence_key IS NULL OR NOT EXISTS (SELECT 1"
                f" FROM {self.job_table} AS s WHERE s.sequence_key = {alias}.sequence_key"
                f" AND s.state IN {LIVE_SQL} AND s.id < {alias}.id))"
            )
        return where

    @staticmethod
    def flow_order(limits: Limits, *, alias: str = "c") -> str:
        if limits.fairness is not None:
            return f"{alias}.priority DESC, {alias}.fair_order, {alias}.id"
        return f"{alias}.priority DESC, {alias}.scheduled_at, {alias}.id"

    def claim_flow(
        self,
        queue: str,
        *,
        limits: Limits,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> LimitedClaim | None:
        """The flow claim of a queue without limits in its settings, in one statement; None
        when the store holds runtime limits for the queue (the caller claims within them)."""
        rows = self._claim_flow_rows(queue, limits, kinds, limit, now, lease_until, worker)
        if limits.fairness is not None and len(rows) < limit:
            # Jobs enqueued before the queue had fairness have no turn: after the others.
            plain = Limits(sequenced=limits.sequenced)
            rows += self._claim_flow_rows(
                queue, plain, kinds, limit - len(rows), now, lease_until, worker, unturned=True
            )
        if not rows and self._runtime_limited(queue):
            return None
        return LimitedClaim(jobs=self.flow_claimed(rows, limits, now, lease_until))

    def claims_sequences(self, kinds: Collection[str] | None) -> bool:
        """Whether a plain claim of `kinds` (every kind when None) may meet jobs of a kind
        with a sequence that this process knows: it then keeps the sequences itself."""
        sequenced = registry.sequenced()
        return bool(sequenced) and (kinds is None or not sequenced.isdisjoint(kinds))

    def claim_sequenced(
        self,
        queue: str,
        *,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[ClaimedJob]:
        """The plain claim, keeping sequences (no limit, no fairness)."""
        limits = Limits(sequenced=True)
        rows = self._claim_flow_rows(
            queue, limits, kinds, limit, now, lease_until, worker, guard=False
        )
        return self.flow_claimed(rows, limits, now, lease_until)

    def flow_claimed(
        self, rows: Sequence[Sequence[Any]], limits: Limits, now: datetime, lease_until: datetime
    ) -> list[ClaimedJob]:
        """Claimed rows (each with its turn last) as jobs, in the claim's order."""
        claimed = [(self.claimed_job(row, now, lease_until), row[-1]) for row in rows]
        if limits.fairness is not None:
            claimed.sort(
                key=lambda c: (
                    -c[0].record.priority,
                    c[1] is None,
                    c[1] or 0.0,
                    c[0].record.id,
                )
            )
        else:
            claimed.sort(
                key=lambda c: (-c[0].record.priority, c[0].record.scheduled_at, c[0].record.id)
            )
        return self.remember_plain([job for job, _ in claimed])

    def _runtime_limited(self, queue: str) -> bool:
        with self.cursor() as cursor:
            cursor.execute(
                f'SELECT 1 FROM "{self.tables.limit}" WHERE queue = %s'
                " AND (global_concurrency IS NOT NULL OR rate_count IS NOT NULL)",
                [queue],
            )
            return cursor.fetchone() is not None

    def _claim_flow_rows(
        self,
        queue: str,
        limits: Limits,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
        *,
        unturned: bool = False,
        guard: bool = True,
    ) -> list[tuple[Any, ...]]:
        kind_filter = ""
        kind_params: list[Any] = []
        if kinds is not None:
            where, kind_params = self.in_list(CLAIM_KEY_SQL, kinds)
            kind_filter = f" AND {where}"
        conditions = self.flow_conditions(limits)
        if unturned:
            conditions += " AND c.fair_order IS NULL"
        # No runtime limit for the queue: with one, the caller claims within it.
        unlimited = (
            f' AND NOT EXISTS (SELECT 1 FROM "{self.tables.limit}" AS l WHERE l.queue = %s'
            " AND (l.global_concurrency IS NOT NULL OR l.rate_count IS NOT NULL))"
        )
        pick = (
            f"SELECT c.id FROM {self.job_table} AS c WHERE c.state = 'available'"
            f" AND c.queue = %s{kind_filter}{self.not_paused()}{conditions}"
            f"{unlimited if guard else ''}"
            f" ORDER BY {self.flow_order(limits)} LIMIT %s{self.skip_locked}"
        )
        params = [queue, *kind_params, queue, *([queue] if guard else []), limit]
        with self.flow_claiming() as relaxed, self.cursor() as cursor:
            if self.vendor == "postgresql":
                from anole_jobs.stores.database.ddl import CLAIMED_COLUMNS

                cursor.execute(
                    f"UPDATE {self.job_table} AS j SET state = 'running',"
                    " attempt = j.attempt + 1, claim_token = j.claim_token + 1,"
                    " attempted_at = %s, lease_until = %s, claimed_by = %s"
                    f" FROM ({pick}) AS p WHERE j.id = p.id{relaxed}"
                    f" RETURNING {CLAIMED_COLUMNS}, j.fair_order",
                    [now, lease_until, worker, *params],
                )
            else:
                cursor.execute(
                    f"UPDATE {self.job_table} SET state = 'running', attempt = attempt + 1,"
                    " claim_token = claim_token + 1, attempted_at = %s, lease_until = %s,"
                    f" claimed_by = %s WHERE id IN ({pick})"
                    f" RETURNING {self.select()}, fair_order",
                    [self.encode_time(now), self.encode_time(lease_until), worker, *params],
                )
            return list(cursor.fetchall())

    def flow_claiming(self) -> Any:
        """Vendor hook: the context of a one-statement flow claim, giving the condition that
        relaxes its commit ("" for none)."""
        raise NotImplementedError

    # -- what a job waits for ----------------------------------------------------------------
    def sequence_holder(self, job_id: int) -> int | None:
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT s.id FROM {self.job_table} AS j JOIN {self.job_table} AS s"
                f" ON s.sequence_key = j.sequence_key AND s.state IN {LIVE_SQL} AND s.id < j.id"
                f" WHERE j.id = %s AND j.state IN {LIVE_SQL} ORDER BY s.id LIMIT 1",
                [job_id],
            )
            row = cursor.fetchone()
        return None if row is None else int(row[0])

    def fairness_state(self, queue: str) -> FairnessState:
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT fair_key, SUM(CASE WHEN state = 'available' THEN 1 ELSE 0 END),"
                f" MAX(fair_order) FROM {self.job_table} WHERE queue = %s"
                f" AND fair_order IS NOT NULL AND state IN {LIVE_SQL} GROUP BY fair_key",
                [queue],
            )
            rows = cursor.fetchall()
            turn = self._fair_start(cursor, queue) if rows else 0.0
        return FairnessState(
            turn=turn,
            waiting={key: int(n) for key, n, _ in rows if n},
            last={key: float(last) for key, _, last in rows},
        )
