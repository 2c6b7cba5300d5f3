"""Queue limits on the database store (docs/limits.md): the limited claim, runtime limits and
the held count, shared by PostgreSQL and SQLite.

A limited claim is one transaction that first upserts and so locks its queue's row of the
limit table (``<prefix>limit``): the limited claims of one queue take turns on that row, and
claims of other queues, or of queues without limits, never wait for it. Holding it, the claim
reads what runs and the recent claims (each statement after the lock sees every claim
committed before it), takes what `anole_jobs.limits.Planner` allows, and writes the window of
recent claims back to the row. On SQLite the claim's write transaction already excludes every
other writer.

Without a partition the claim is the plain claim statement with its limit lowered to the room
left. With one, candidates are read in claim order, a page at a time, and each job's
partition computed from its args: a claim looks at most `SCAN_MAX` waiting jobs for ones
whose partition has room.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from anole_jobs.limits import Limits, Planner, RateLimit, RuntimeLimits, held_count
from anole_jobs.stores.base import ClaimedJob, LimitedClaim
from anole_jobs.stores.database.parts import CLAIM_KEY_SQL

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from django.db.backends.utils import CursorWrapper

    from anole_jobs.stores.database.ddl import Tables

#: Candidates read per page of a partitioned claim, and at most per claim.
PAGE = 500
SCAN_MAX = 5000


def _decode(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value


class SQLLimits:
    """Mixed into `SQLStore`: the limits part of the store contract."""

    if TYPE_CHECKING:  # what it uses of `SQLStore`
        tables: Tables
        job_table: str
        skip_locked: str

        def cursor(self) -> CursorWrapper: ...
        def write_lock(self) -> AbstractContextManager[None]: ...
        def writing(self) -> AbstractContextManager[Any]: ...
        def in_list(self, column: str, values: Collection[Any]) -> tuple[str, list[Any]]: ...
        def not_paused(self) -> str: ...
        def claimed_job(
            self, row: Sequence[Any], now: datetime, lease_until: datetime
        ) -> ClaimedJob: ...
        def remember_plain(self, claimed: list[ClaimedJob]) -> list[ClaimedJob]: ...
        def claim_rows(
            self,
            cursor: CursorWrapper,
            queue: str,
            kinds: Collection[str] | None,
            limit: int,
            now: datetime,
            lease_until: datetime,
            worker: str,
        ) -> list[tuple[Any, ...]]: ...
        def claim_ids(
            self,
            cursor: CursorWrapper,
            ids: Sequence[int],
            now: datetime,
            lease_until: datetime,
            worker: str,
        ) -> list[tuple[Any, ...]]: ...
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
        ) -> LimitedClaim | None: ...
        def flow_conditions(self, limits: Limits, *, alias: str = "c") -> str: ...
        @staticmethod
        def flow_order(limits: Limits, *, alias: str = "c") -> str: ...

    def claim_limited(
        self,
        queue: str,
        *,
        limits: Limits,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> LimitedClaim:
        if limit <= 0 or (kinds is not None and not kinds):
            return LimitedClaim(jobs=[])
        if limits.flow and not limits.active:
            flowing = self.claim_flow(
                queue,
                limits=limits,
                kinds=kinds,
                limit=limit,
                now=now,
                lease_until=lease_until,
                worker=worker,
            )
            if flowing is not None:
                return flowing
        if not limits.partition and not limits.flow:
            found = self.claim_limited_call(
                queue,
                limits=limits,
                kinds=kinds,
                limit=limit,
                now=now,
                lease_until=lease_until,
                worker=worker,
            )
            if found is not None:
                return found
        table = f'"{self.tables.limit}"'
        with self.write_lock(), self.cursor() as cursor:
            # The upsert locks the queue's row (PostgreSQL: until commit) and returns it.
            cursor.execute(
                f"INSERT INTO {table} (queue, claims) VALUES (%s, '{{}}')"
                " ON CONFLICT (queue) DO UPDATE SET queue = excluded.queue"
                " RETURNING global_concurrency, rate_count, rate_seconds, claims",
                [queue],
            )
            concurrency, rate_count, rate_seconds, claims = cursor.fetchone()
            effective = limits.overlay(_runtime(concurrency, rate_count, rate_seconds))
            if effective.flow:
                planner = Planner(
                    effective,
                    now=now.timestamp(),
                    want=limit,
                    running=self._running(cursor, queue, effective),
                    window=_decode(claims) or {},
                )
                ids = self._pick(cursor, queue, kinds, planner, effective)
                rows = self.claim_ids(cursor, ids, now, lease_until, worker) if ids else []
                plan = planner.finish()
                if effective.rate_limit is not None:
                    cursor.execute(
                        f"UPDATE {table} SET claims = %s WHERE queue = %s",
                        [json.dumps(plan.window, separators=(",", ":")), queue],
                    )
                place = {job_id: i for i, job_id in enumerate(ids)}
                claimed = self._claimed(rows, now, lease_until)
                claimed.sort(key=lambda c: place[c.record.id])
                reopens = None
                if plan.reopens_at is not None:
                    reopens = now + timedelta(seconds=plan.reopens_at - now.timestamp())
                return LimitedClaim(jobs=claimed, held=plan.held, reopens_at=reopens)
            if not effective.active:
                rows = self.claim_rows(cursor, queue, kinds, limit, now, lease_until, worker)
                return LimitedClaim(jobs=self._claimed(rows, now, lease_until))
            cap = effective.global_concurrency
            if cap is not None and effective.rate_limit is None and not effective.partition:
                capped = self.claim_capped(
                    cursor, queue, kinds, limit, cap, now, lease_until, worker
                )
                if capped is not None:
                    rows, running = capped
                    if running is None:  # nothing claimed: count to tell "held" from "none"
                        running = self._running(cursor, queue, effective)[""]
                    held = running + len(rows) >= cap and len(rows) < limit
                    return LimitedClaim(jobs=self._claimed(rows, now, lease_until), held=held)
            planner = Planner(
                effective,
                now=now.timestamp(),
                want=limit,
                running=self._running(cursor, queue, effective),
                window=_decode(claims) or {},
            )
            if not effective.partition:
                room = planner.room("")
                rows = []
                if room > 0:
                    rows = self.claim_rows(cursor, queue, kinds, room, now, lease_until, worker)
                planner.offer((i, "") for i in range(len(rows)))
                if len(rows) == room < limit:
                    planner.offer([(len(rows), "")])  # the next one is held: note it
            else:
                ids = self._pick(cursor, queue, kinds, planner, effective)
                rows = self.claim_ids(cursor, ids, now, lease_until, worker) if ids else []
            plan = planner.finish()
            if effective.rate_limit is not None:
                cursor.execute(
                    f"UPDATE {table} SET claims = %s WHERE queue = %s",
                    [json.dumps(plan.window, separators=(",", ":")), queue],
                )
        reopens = None
        if plan.reopens_at is not None:
            reopens = now + timedelta(seconds=plan.reopens_at - now.timestamp())
        claimed = self._claimed(rows, now, lease_until)
        return LimitedClaim(jobs=claimed, held=plan.held, reopens_at=reopens)

    def claim_limited_call(
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
        """Vendor hook: the whole limited claim of a queue without a partition in one call to
        the database (its lock, counts, claim and window write), or None when the vendor has
        none (the steps above then run from here)."""
        return None

    def claim_capped(
        self,
        cursor: CursorWrapper,
        queue: str,
        kinds: Collection[str] | None,
        limit: int,
        cap: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> tuple[list[tuple[Any, ...]], int | None] | None:
        """Vendor hook: claim up to `limit` jobs but no more than `cap` minus the queue's
        running jobs, counting and claiming in one statement (after the row lock); the rows
        and the running count before the claim (None when no row came back). None when the
        vendor has no such statement (the caller counts, then claims)."""
        return None

    def _claimed(
        self, rows: Sequence[Sequence[Any]], now: datetime, lease_until: datetime
    ) -> list[ClaimedJob]:
        claimed = [self.claimed_job(row, now, lease_until) for row in rows]
        claimed.sort(key=lambda c: (-c.record.priority, c.record.scheduled_at, c.record.id))
        return self.remember_plain(claimed)

    def _running(self, cursor: CursorWrapper, queue: str, limits: Limits) -> dict[str, int]:
        """Claimed and unfinished jobs of `queue` per partition."""
        if not limits.partition:
            cursor.execute(
                f"SELECT COUNT(*) FROM {self.job_table} WHERE queue = %s AND state = 'running'",
                [queue],
            )
            return {"": cursor.fetchone()[0]}
        cursor.execute(
            f"SELECT args FROM {self.job_table} WHERE queue = %s AND state = 'running'", [queue]
        )
        running: dict[str, int] = {}
        for (args,) in cursor.fetchall():
            key = limits.key(_decode(args))
            running[key] = running.get(key, 0) + 1
        return running

    def _pick(
        self,
        cursor: CursorWrapper,
        queue: str,
        kinds: Collection[str] | None,
        planner: Planner,
        limits: Limits,
    ) -> list[int]:
        """The ids of the candidates the plan takes, read in claim order a page at a time."""
        kind_filter = ""
        kind_params: list[Any] = []
        if kinds is not None:
            where, kind_params = self.in_list(CLAIM_KEY_SQL, kinds)
            kind_filter = f" AND {where}"
        ids: list[int] = []
        # With fairness or sequences: their conditions, and a fair queue's order (flow.py);
        # a fair queue's jobs without a turn (enqueued before it had fairness) come after.
        passes = [(self.flow_conditions(limits) if limits.flow else "", self.flow_order(limits))]
        if limits.fairness is not None:
            unturned = replace(limits, fairness=None)
            passes.append(
                (
                    self.flow_conditions(unturned) + " AND c.fair_order IS NULL",
                    self.flow_order(unturned),
                )
            )
        for conditions, order in passes:
            offset = 0
            while not planner.done and offset < SCAN_MAX:
                cursor.execute(
                    f"SELECT c.id, c.args FROM {self.job_table} AS c WHERE c.state = 'available'"
                    f" AND c.queue = %s{kind_filter}{self.not_paused()}{conditions}"
                    f" ORDER BY {order} LIMIT %s OFFSET %s{self.skip_locked}",
                    [queue, *kind_params, queue, PAGE, offset],
                )
                page = cursor.fetchall()
                first = len(ids)
                ids.extend(row[0] for row in page)
                planner.offer(
                    (first + i, limits.key(_decode(args))) for i, (_, args) in enumerate(page)
                )
                if len(page) < PAGE:
                    break
                offset += PAGE
        return [ids[i] for i in planner.plan.taken]

    def set_limits(self, queue: str, limits: RuntimeLimits) -> None:
        rate = limits.rate_limit
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f'INSERT INTO "{self.tables.limit}" (queue, global_concurrency, rate_count,'
                " rate_seconds, claims) VALUES (%s, %s, %s, %s, '{}') ON CONFLICT (queue)"
                " DO UPDATE SET global_concurrency = excluded.global_concurrency,"
                " rate_count = excluded.rate_count, rate_seconds = excluded.rate_seconds",
                [
                    queue,
                    limits.global_concurrency,
                    rate.count if rate is not None else None,
                    rate.seconds if rate is not None else None,
                ],
            )

    def runtime_limits(self) -> dict[str, RuntimeLimits]:
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT queue, global_concurrency, rate_count, rate_seconds"
                f' FROM "{self.tables.limit}"'
                " WHERE global_concurrency IS NOT NULL OR rate_count IS NOT NULL"
            )
            rows = cursor.fetchall()
        return {queue: _runtime(c, n, s) for queue, c, n, s in rows}

    def held_count(self, queue: str, limits: Limits, *, now: datetime) -> int:
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT global_concurrency, rate_count, rate_seconds, claims"
                f' FROM "{self.tables.limit}" WHERE queue = %s',
                [queue],
            )
            row = cursor.fetchone()
            runtime = _runtime(*row[:3]) if row is not None else None
            effective = limits.overlay(runtime)
            if not effective.active:
                return 0
            window = (_decode(row[3]) or {}) if row is not None else {}
            running = self._running(cursor, queue, effective)
            if effective.partition:
                cursor.execute(
                    f"SELECT args FROM {self.job_table} WHERE queue = %s AND state = 'available'",
                    [queue],
                )
                available: dict[str, int] = {}
                for (args,) in cursor.fetchall():
                    key = effective.key(_decode(args))
                    available[key] = available.get(key, 0) + 1
            else:
                cursor.execute(
                    f"SELECT COUNT(*) FROM {self.job_table}"
                    " WHERE queue = %s AND state = 'available'",
                    [queue],
                )
                available = {"": cursor.fetchone()[0]}
        return held_count(
            effective, now=now.timestamp(), available=available, running=running, window=window
        )


def _runtime(
    concurrency: int | None, rate_count: int | None, rate_seconds: float | None
) -> RuntimeLimits:
    rate = None
    if rate_count is not None and rate_seconds is not None:
        rate = RateLimit(rate_count, timedelta(seconds=rate_seconds))
    return RuntimeLimits(global_concurrency=concurrency, rate_limit=rate)
