"""The PostgreSQL flavour of the database store.

Claims pick rows with ``FOR UPDATE SKIP LOCKED`` inside one UPDATE, so concurrent workers
never wait for each other nor claim one job twice. Batches travel as one array parameter per
column through ``unnest`` (one statement text whatever the batch size, no parameter limit).

Wake-ups: with ``NOTIFY`` on, an insert sends ``pg_notify(channel, queue)`` from the same
statement (a CTE), so an enqueue stays one round trip, and PostgreSQL delivers it only if the
transaction commits. The channel is ``TABLE_PREFIX + "wake"`` (`SQLStore.channel`); the payload
is a queue name, or ``""`` for every queue. The LISTEN side is the runtime's listener thread.

Sessions (docs/deployment.md#connections): the runtime's threads share `POOL_SIZE` sessions
(`sessions.SessionPool`); LISTEN and the leader's advisory lock have one session each, on
`DIRECT_DATABASE` when given. Behind a pooler in transaction mode (`TRANSACTION_POOLER`) with
no direct connection, neither is taken: the workers poll, and the leader holds a row.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from anole_jobs import timeline
from anole_jobs.conf import Settings
from anole_jobs.core import VERSION_MARK, JobRecord, ListFilter, split_claim_key
from anole_jobs.limits import Limits
from anole_jobs.stores.base import ClaimedJob, Finish, LimitedClaim, NewJob, Rescued, RunRef
from anole_jobs.stores.database import workflows
from anole_jobs.stores.database.base import (
    ON_KEY_CONFLICT,
    SQLStore,
    aware_utc,
    decode_json,
    encode_json,
    insert_values,
)
from anole_jobs.stores.database.ddl import (
    CLAIMED_COLUMNS,
    STAT_COLUMNS,
    claim_function_name,
    claim_limited_function_name,
    finish_function_name,
    stat_table,
)
from anole_jobs.stores.database.parts import CLAIM_KEY_SQL
from anole_jobs.stores.database.pg_session import AdvisoryLeadership, Listener
from anole_jobs.stores.database.sessions import SessionPool
from anole_jobs.stores.wakeups import Subscription, deliver_payload, priority_payload

#: ``lease_until`` as Python's ``datetime.isoformat()`` writes an aware UTC time, so a rescue's
#: error message reads exactly as the memory store's (microseconds only when not zero).
_ISO_LEASE = (
    "to_char(j.lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
    " || CASE WHEN to_char(j.lease_until, 'US') = '000000' THEN ''"
    " ELSE '.' || to_char(j.lease_until, 'US') END || '+00:00'"
)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _from_micros(value: int | None) -> datetime | None:
    return None if value is None else _EPOCH + timedelta(microseconds=value)


def _as_is(value: Any) -> Any:
    return value


def _appended(row: str, outcome: str, ended: str) -> str:
    """`row`'s attempts (a qualifier: "" or "j.") with its current attempt appended, ended
    `ended` (SQL) with `outcome`; the oldest goes past `timeline.ATTEMPTS_KEPT`."""
    attempts = f"COALESCE({row}attempts, '[]'::jsonb)"
    return (
        f"(CASE WHEN jsonb_array_length({attempts}) >= {timeline.ATTEMPTS_KEPT}"
        f" THEN {row}attempts - 0 ELSE {attempts} END) || jsonb_build_array(jsonb_build_object("
        f"'attempt', {row}attempt, 'worker', {row}claimed_by, 'started_at',"
        f" to_jsonb({row}attempted_at), 'finished_at', {ended}, 'outcome', '{outcome}'::text))"
    )


def _end_attempt(outcome: str, row: str) -> str:
    """A SET clause ending the running attempt of `row` (a qualifier: "" or "j.") in its
    attempts with `outcome`, its end one ``%s`` parameter (ISO text); other rows' attempts
    are left as they are. The oldest attempt goes past `timeline.ATTEMPTS_KEPT`."""
    ended = _appended(row, outcome, "to_jsonb(%s::timestamptz)")
    return f"attempts = CASE WHEN {row}state = 'running' THEN {ended} ELSE {row}attempts END"


#: A completed row whose attempts do not end with its completing attempt (appended by the
#: finish of older code): the finish leaves that attempt out, its row says it.
_COMPLETING_UNKEPT = (
    "state = 'completed' AND NOT (COALESCE(attempts->-1->>'outcome', '') = 'completed'"
    " AND (attempts->-1->>'attempt')::int = attempt)"
)


class PostgresStore(SQLStore):
    name = "postgresql"
    vendor = "postgresql"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    json_parameter = "%s::jsonb"
    leadership_lapses = False  # an advisory lock, held by a session

    shares_sessions = True

    def __init__(self, alias: str, settings: Settings) -> None:
        super().__init__(alias, settings)
        self.notify = settings.notify
        #: Where LISTEN and the leader's lock connect: DIRECT_DATABASE, or the alias itself
        #: unless it goes through a transaction pooler (then neither is used: None).
        self.direct: str | None = settings.direct_database or (
            None if settings.transaction_pooler else alias
        )
        self.listens = self.notify and self.direct is not None
        # LISTEN/NOTIFY, unless turned off or no session can LISTEN.
        self.supports_cross_process_wakeups = self.listens
        if self.direct is None:
            self.leadership_lapses = True  # a leader row, renewed, through the pooler
        self.leadership = AdvisoryLeadership(self.direct or alias, self.prefix)
        self.sessions = SessionPool(alias, settings.pool_size)
        # POOL_SIZE 0: each of the runtime's threads keeps a connection of its own.
        self.shares_sessions = settings.pool_size > 0
        self._listener: Listener | None = None
        self._listener_lock = threading.Lock()
        self._label: str | None = None
        # Without LISTEN, result waiters in other processes learn of a finish by polling.
        self.finished_poll = 1.0 if self.listens else 0.25

    # -- sessions --------------------------------------------------------------------------
    def shared_session(self) -> AbstractContextManager[None]:
        if not self.shares_sessions:
            return nullcontext()  # POOL_SIZE 0: the thread's own connection
        return self.sessions.borrow()

    def name_sessions(self, label: str) -> None:
        self._label = label
        self.sessions.name(label)
        self.leadership.label = label
        with self._listener_lock:
            if self._listener is not None:
                self._listener.session_label = label  # from its next connection on

    # -- claims: no wait for the WAL flush ------------------------------------------------
    def relaxed_claim(self) -> str:
        """A condition for a claim statement's WHERE clause that lets the claim's commit skip
        the wait for the WAL flush (see `Store.claim`): ``set_config(..., true)`` lasts for
        the statement's own transaction only, and is evaluated once a row is claimed (no row:
        nothing to commit). Never inside the caller's transaction, whose writes it would
        relax too."""
        connection = self.connection
        if connection.in_atomic_block or not connection.get_autocommit():
            return ""
        return " WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL"

    def flow_claiming(self) -> AbstractContextManager[str]:
        relaxed = self.relaxed_claim()
        return contextlib.nullcontext(relaxed.replace(" WHERE ", " AND ", 1))

    # -- leadership: an advisory lock on a dedicated session ------------------------------
    def lead(self, *, instance: str, now: datetime, ttl: timedelta) -> bool:
        if self.direct is None:
            return super().lead(instance=instance, now=now, ttl=ttl)  # the leader row
        # The lock lives as long as the session: `ttl` does not apply here.
        return self.leadership.hold(instance)

    def resign(self, *, instance: str) -> None:
        if self.direct is None:
            super().resign(instance=instance)
            return
        self.leadership.release(instance)

    # -- wake-ups: LISTEN on a dedicated session --------------------------------------------
    def subscribe(self, queues: Collection[str]) -> Subscription:
        subscription = super().subscribe(queues)
        if self.listens:
            self._listen(self.channel, self._deliver_wake)
        return subscription

    def subscribe_finished(self, job_ids: Collection[int]) -> Subscription:
        subscription = super().subscribe_finished(job_ids)
        if self.listens:
            self._listen(self.done_channel, self._deliver_done)
        return subscription

    def _listen(self, channel: str, deliver: Any) -> None:
        """One LISTEN session per store carries every channel it listens on."""
        assert self.direct is not None
        with self._listener_lock:
            if self._listener is None:
                self._listener = Listener(self.direct, channel, deliver)
                self._listener.session_label = self._label
                self._listener.start()
            else:
                self._listener.add(channel, deliver)

    def _deliver_wake(self, payloads: list[str]) -> None:
        if not payloads:
            self.wakeups.wake(())
        for payload in payloads:
            deliver_payload(self.wakeups, payload)

    def _deliver_done(self, payloads: list[str]) -> None:
        # A payload is ids joined by commas; none (a reconnection, or "") wakes every waiter.
        ids = [job_id for payload in payloads for job_id in payload.split(",") if job_id]
        self.finished_wakeups.wake(ids)

    def close(self) -> None:
        with self._listener_lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()
        self.leadership.close()
        self.sessions.close()

    # -- vendor hooks ----------------------------------------------------------------------
    def encode_time(self, value: datetime | None) -> Any:
        return value  # psycopg sends aware datetimes as timestamptz

    def decode_time(self, value: Any) -> datetime | None:
        if value is None:
            return None
        if timezone.is_naive(value):  # USE_TZ=False: Django loads local (TIME_ZONE) times
            value = timezone.make_aware(value, timezone.get_default_timezone())
        return aware_utc(value)

    def in_list(self, column: str, values: Collection[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s::text[])", [list(values)]

    def end_attempt_sql(self, outcome: str) -> str:
        return _end_attempt(outcome, "")

    def retry_attempts_sql(self, running: bool) -> str:
        restarted = (
            f" WHEN state = 'running' THEN"
            f" {_appended('', timeline.RESTARTED, 'to_jsonb(%s::timestamptz)')}"
            if running
            else ""
        )
        completed = _appended("", timeline.COMPLETED, "to_jsonb(finished_at)")
        return (
            f"attempts = CASE{restarted} WHEN {_COMPLETING_UNKEPT} THEN {completed}"
            " ELSE attempts END"
        )

    # -- search and bulk actions in SQL (see stores/search.py for the rule) --
    def search_sql(self, filter: ListFilter) -> tuple[list[str], list[Any], bool]:
        where: list[str] = []
        params: list[Any] = []
        if filter.error is not None:
            where.append(
                "jsonb_array_length(errors) > 0 AND strpos(lower("
                "coalesce(errors->-1->>'type', '') || ': ' || coalesce(errors->-1->>'message', '')"
                "), lower(%s)) > 0"
            )
            params.append(filter.error)
        if filter.args is not None:
            where.append("args @> %s::jsonb")
            params.append(encode_json(filter.args))
        return where, params, True

    def ids_sql(self, ids: Collection[int]) -> tuple[str, list[Any]]:
        return "id = ANY(%s::bigint[])", [sorted(ids)]

    def write_lock(self) -> AbstractContextManager[None]:
        return transaction.atomic(using=self.alias)

    def send_notify(self, queues: Sequence[str]) -> None:
        if not self.notify:
            return
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT pg_notify(%s, q) FROM unnest(%s::text[]) AS q",
                [self.channel, list(queues) or [""]],
            )

    def send_done_notify(self, job_ids: Sequence[int]) -> None:
        if not self.notify or not job_ids:
            return
        with self.cursor() as cursor:
            cursor.execute(
                "SELECT pg_notify(%s, %s)", [self.done_channel, ",".join(map(str, job_ids))]
            )

    # -- statements ------------------------------------------------------------------------
    def insert_rows(self, cursor: CursorWrapper, jobs: Sequence[NewJob]) -> list[tuple[int, Any]]:
        if len(jobs) == 1:
            return self._insert_one(cursor, jobs[0])
        # The whole batch travels as ONE json parameter, encoded by the json module's C
        # encoder and unpacked by the server (`json_to_recordset`): dumping one text array per
        # column made psycopg quote every element in Python, a third of enqueue_many's time.
        # args and meta go in as JSON values, not JSON text inside JSON (no double encoding).
        batch = encode_json(insert_values(jobs, encode_args=_as_is, encode_time=datetime.isoformat))
        insert = (
            f"INSERT INTO {self.job_table} (kind, queue, state, args, meta, errors, priority,"
            " attempt, max_attempts, claim_token, created_at, scheduled_at, unique_key,"
            " unique_scope, unique_lock, version)"
            " SELECT r->>0, r->>1, r->>2, r->3, r->4, '[]'::jsonb, (r->>5)::smallint, 0,"
            " (r->>6)::int, 0, (r->>7)::timestamptz, (r->>8)::timestamptz, r->>9, r->>10, r->>9,"
            " (r->>11)::smallint"
            " FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS t(r, ord)"
            " ORDER BY t.ord"
            f" {ON_KEY_CONFLICT} RETURNING id, unique_lock, queue, state"
        )
        if self.notify:
            # The scalar subquery makes the `woken` CTE run (once) whenever a row went in.
            sql = (
                f"WITH ins AS ({insert}), woken AS (SELECT pg_notify(%s, q.queue) FROM"
                " (SELECT DISTINCT queue FROM ins WHERE state = 'available') AS q)"
                " SELECT id, unique_lock FROM ins WHERE (SELECT COUNT(*) FROM woken) >= 0"
            )
            params: list[Any] = [batch, self.channel]
        else:
            sql = f"WITH ins AS ({insert}) SELECT id, unique_lock FROM ins"
            params = [batch]
        cursor.execute(sql, params)
        return cursor.fetchall()

    def _insert_one(self, cursor: CursorWrapper, job: NewJob) -> list[tuple[int, Any]]:
        """One job (every single enqueue): plain VALUES, which the server plans and runs
        faster than unpacking a one-element JSON batch. The NOTIFY rides on the returned row,
        so it is sent only when the row went in."""
        insert = (
            f"INSERT INTO {self.job_table} (kind, queue, state, args, meta, errors, priority,"
            " attempt, max_attempts, claim_token, created_at, scheduled_at, unique_key,"
            " unique_scope, version, unique_lock)"
            " VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, '[]'::jsonb, %s, 0, %s, 0, %s, %s, %s,"
            f" %s, %s, %s) {ON_KEY_CONFLICT} RETURNING id, unique_lock"
        )
        (values,) = insert_values([job], encode_args=encode_json, encode_time=_as_is)
        params: list[Any] = [*values, job.unique_key]
        if self.notify and job.state == "available":
            notify = "pg_notify(%s, %s)"
            params += [self.channel, job.queue]
            if job.priority > 0:
                # Above the default priority the wake-up also announces it (wakeups.py), so a
                # worker holding lower jobs claimed ahead claims this one at once.
                notify += ", pg_notify(%s, %s)"
                params += [self.channel, priority_payload(job.queue, job.priority)]
            sql = f"WITH ins AS ({insert}) SELECT id, unique_lock, {notify} FROM ins"
            cursor.execute(sql, params)
            return [(row[0], row[1]) for row in cursor.fetchall()]
        cursor.execute(insert, params)
        return cursor.fetchall()

    # The claim functions return no version: a claim that may take a job stored at a version
    # above 1 (its `kinds` name one, docs/deploys.md) reads the versions of such jobs after.
    def claim(
        self,
        queue: str,
        *,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[ClaimedJob]:
        claimed = super().claim(
            queue, kinds=kinds, limit=limit, now=now, lease_until=lease_until, worker=worker
        )
        return self._with_versions(claimed, kinds)

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
        result = super().claim_limited(
            queue,
            limits=limits,
            kinds=kinds,
            limit=limit,
            now=now,
            lease_until=lease_until,
            worker=worker,
        )
        jobs = self._with_versions(result.jobs, kinds)
        return result if jobs is result.jobs else replace(result, jobs=jobs)

    def _with_versions(
        self, claimed: list[ClaimedJob], kinds: Collection[str] | None
    ) -> list[ClaimedJob]:
        if kinds is None:
            return claimed  # the runtime always names its kinds
        versioned = {split_claim_key(k)[0] for k in kinds if VERSION_MARK in k}
        ids = [c.record.id for c in claimed if c.record.kind in versioned] if versioned else []
        if not ids:
            return claimed
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT id, version FROM {self.job_table}"
                " WHERE id = ANY(%s::bigint[]) AND version <> 1",
                [ids],
            )
            found = dict(cursor.fetchall())
        if not found:
            return claimed
        return [
            c
            if c.record.id not in found
            else replace(c, record=replace(c.record, version=int(found[c.record.id])))
            for c in claimed
        ]

    def claim_rows(
        self,
        cursor: CursorWrapper,
        queue: str,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[tuple[Any, ...]]:
        # The claim function (migration 0009): it writes the claim's statistics row
        # itself, in the same statement.
        cursor.execute(
            f'SELECT * FROM "{claim_function_name(self.prefix)}"(%s, %s, %s, %s, %s, %s)'
            + self.relaxed_claim(),
            [queue, list(kinds) if kinds is not None else None, limit, now, lease_until, worker],
        )
        return cursor.fetchall()

    def claimed_job(self, row: Sequence[Any], now: datetime, lease_until: datetime) -> ClaimedJob:
        record = JobRecord(
            id=row[0],
            kind=row[1],
            queue=row[2],
            state="running",
            args=decode_json(row[3]),
            meta=decode_json(row[4]),
            priority=row[5],
            attempt=row[6],
            max_attempts=row[7],
            errors=tuple(decode_json(row[8])),
            created_at=_from_micros(row[9]),  # type: ignore[arg-type]
            scheduled_at=_from_micros(row[10]),  # type: ignore[arg-type]
            attempted_at=aware_utc(now),
            finished_at=_from_micros(row[11]),
            unique_key=row[12],
            workflow_id=row[14],
            step_name=row[15],
        )
        return ClaimedJob(
            record=record, run=RunRef(row[0], row[6], row[13]), lease_until=lease_until
        )

    def finish_rows(self, cursor: CursorWrapper, results: Sequence[Finish]) -> set[int]:
        return self._finish(cursor, results, "%s::jsonb")

    def finish_plain_rows(self, cursor: CursorWrapper, results: Sequence[Finish]) -> set[int]:
        # The finish function writes every row of its batch: the batch it gets leaves out the
        # workflow steps' (one primary-key read per row, in the same statement). A scalar
        # subquery, not NOT EXISTS: the planner may turn an anti-join into a scan of the table.
        return self._finish(
            cursor,
            results,
            "(SELECT COALESCE(jsonb_agg(e.r), '[]'::jsonb)"
            " FROM jsonb_array_elements(%s::jsonb) AS e(r)"
            f" WHERE (SELECT s.workflow_id FROM {self.job_table} AS s"
            " WHERE s.id = (e.r->>0)::bigint) IS NULL)",
        )

    def _finish(self, cursor: CursorWrapper, results: Sequence[Finish], batch_sql: str) -> set[int]:
        # One json parameter for the batch, as in insert_rows: one array per column made
        # psycopg dump every element in Python, the completer's largest cost per job. The
        # error goes in as a JSON value (JSON null when there is none).
        batch = encode_json(
            [
                [
                    r.run.id,
                    r.run.attempt,
                    r.run.token,
                    r.state,
                    r.at.isoformat(),
                    r.scheduled_at.isoformat() if r.scheduled_at is not None else None,
                    r.error.as_json() if r.error is not None else None,
                    1 if r.give_back_attempt else 0,
                    r.result,
                    r.started_at.isoformat() if r.started_at is not None else None,
                    # A completed attempt is not appended: the row says it (timeline.py).
                    r.outcome if r.outcome != timeline.COMPLETED else None,
                    r.progress,
                    r.logs,
                    r.logs_kept,
                ]
                for r in results
            ]
        )
        # The finish function (migration 0009): it writes the statistics of the
        # runs it ended, and, with NOTIFY on, sends the ids of the jobs it ended as ONE
        # notification (delivered at commit) for result waiters in other processes.
        cursor.execute(
            f'SELECT id FROM "{finish_function_name(self.prefix)}"({batch_sql}, %s)',
            [batch, self.done_channel if self.notify else None],
        )
        return {row_id for (row_id,) in cursor.fetchall()}

    def heartbeat_rows(
        self, cursor: CursorWrapper, runs: Sequence[RunRef], lease_until: datetime
    ) -> list[tuple[int, int, int]]:
        cursor.execute(
            f"UPDATE {self.job_table} AS j SET lease_until = %s"
            " FROM unnest(%s::bigint[], %s::int[], %s::bigint[]) AS r(id, attempt, token)"
            " WHERE j.id = r.id AND j.attempt = r.attempt AND j.claim_token = r.token"
            " AND j.state = 'running' RETURNING j.id, j.attempt, j.claim_token",
            [
                lease_until,
                [run.id for run in runs],
                [run.attempt for run in runs],
                [run.token for run in runs],
            ],
        )
        return cursor.fetchall()

    # -- counts ----------------------------------------------------------------------------
    #: Delta rows one fold takes at most (the rest wait for the next one).
    fold_limit = 100_000

    def fold_counts(self) -> None:
        # One statement: delete the deltas this call could lock and insert their sums. SKIP
        # LOCKED: two folds at once take disjoint rows instead of waiting for each other, and
        # each sums exactly the rows it deleted, so together they stay exact. Enqueues and
        # claims only insert rows, so a fold never waits for them nor they for it.
        table = self.count_table
        with self.cursor() as cursor:
            cursor.execute(
                f"WITH picked AS MATERIALIZED (SELECT id FROM {table} LIMIT %s"
                " FOR UPDATE SKIP LOCKED),"
                f" gone AS (DELETE FROM {table} AS c USING picked WHERE c.id = picked.id"
                " RETURNING c.queue, c.state, c.n)"
                f" INSERT INTO {table} (queue, state, n)"
                " SELECT queue, state, SUM(n) FROM gone GROUP BY 1, 2 HAVING SUM(n) <> 0",
                [self.fold_limit],
            )

    # -- statistics ------------------------------------------------------------------------
    def fold_stats(self) -> None:
        # As fold_counts: delete the delta rows of the (queue, minute) pairs that have several
        # and insert their sums, taking only rows no other fold holds (SKIP LOCKED).
        table = f'"{stat_table(self.prefix)}"'
        columns = ", ".join(STAT_COLUMNS)
        sums = ", ".join(f"MAX({c})" if c == "max_ms" else f"SUM({c})" for c in STAT_COLUMNS)
        with self.cursor() as cursor:
            cursor.execute(
                f"WITH many AS (SELECT queue, minute FROM {table} GROUP BY 1, 2"
                " HAVING COUNT(*) > 1),"
                f" picked AS MATERIALIZED (SELECT s.id FROM {table} AS s JOIN many"
                " ON s.queue = many.queue AND s.minute = many.minute"
                " LIMIT %s FOR UPDATE OF s SKIP LOCKED),"
                f" gone AS (DELETE FROM {table} AS s USING picked WHERE s.id = picked.id"
                " RETURNING s.*)"
                f" INSERT INTO {table} (queue, minute, {columns})"
                f" SELECT queue, minute, {sums} FROM gone GROUP BY 1, 2",
                [self.fold_limit],
            )

    # -- maintenance -----------------------------------------------------------------------
    def rescue(self, *, now: datetime, limit: int = 10_000) -> list[Rescued]:
        if limit <= 0:
            return []
        table = self.job_table
        error = (
            "jsonb_build_object('at', %s::text, 'attempt', j.attempt, 'type', 'LeaseExpired',"
            f" 'message', 'the lease ended at ' || {_ISO_LEASE} || ' before the run reported',"
            " 'traceback', '')"
        )
        dead = "j.attempt >= j.max_attempts"
        # A transaction: the steps a kill cancels or releases change in the same write.
        with self.write_lock(), self.cursor() as cursor:
            # One conditional statement: the CTE locks only rows that still match once locked
            # (rows another transaction holds are skipped), so a job that finished meanwhile
            # is never touched, and the rows stay as they matched until this commits.
            cursor.execute(
                f"WITH d AS MATERIALIZED (SELECT id FROM {table}"
                " WHERE state = 'running' AND lease_until < %s"
                " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)"
                f" UPDATE {table} AS j SET errors = j.errors || jsonb_build_array({error}),"
                f" {_end_attempt(timeline.RESCUED, 'j.')}, lease_until = NULL,"
                f" state = CASE WHEN {dead} THEN 'dead' ELSE 'available' END,"
                f" finished_at = CASE WHEN {dead} THEN %s ELSE j.finished_at END,"
                f" scheduled_at = CASE WHEN {dead} THEN j.scheduled_at ELSE %s END,"
                f" unique_lock = CASE WHEN {dead} AND j.unique_scope <> 'any' THEN NULL"
                " ELSE j.unique_lock END"
                " FROM d WHERE j.id = d.id RETURNING j.id, j.kind, j.queue, j.state",
                [now, limit, now.isoformat(), now.isoformat(), now, now],
            )
            rows = sorted(cursor.fetchall())
            killed = [i for i, _, _, s in rows if s == "dead"]
            if killed:
                workflows.announce(self, workflows.settle_steps(self, cursor, killed, now))
        if killed:
            self.send_done_notify(killed)
            self.finished_at_commit(killed)
        return [Rescued(id=i, kind=k, queue=q, state=s) for i, k, q, s in rows]

    # -- queue limits ------------------------------------------------------------------------
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
        # One statement, its own transaction unless the caller has one: the function
        # (migration 0010) takes the queue's row lock, which the commit releases.
        rate = limits.rate_limit
        with self.cursor() as cursor:
            cursor.execute(
                f'SELECT * FROM "{claim_limited_function_name(self.prefix)}"'
                "(%s, %s, %s, %s, %s, %s, %s, %s, %s)" + self.relaxed_claim(),
                [
                    queue,
                    list(kinds) if kinds is not None else None,
                    limit,
                    now,
                    lease_until,
                    worker,
                    limits.global_concurrency,
                    rate.count if rate is not None else None,
                    rate.seconds if rate is not None else None,
                ],
            )
            rows = cursor.fetchall()
        *claimed, (*_, held, reopens_at) = rows
        reopens = None
        if reopens_at is not None:
            reopens = now + timedelta(seconds=reopens_at - now.timestamp())
        return LimitedClaim(
            jobs=self._claimed(claimed, now, lease_until), held=bool(held), reopens_at=reopens
        )

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
        # One statement after the limit row's lock: its snapshot sees every claim committed
        # before the lock was granted, and the claim statement of `claim_rows` with its LIMIT
        # lowered to the room the running count leaves.
        kind_filter: str = ""
        kind_params: list[Any] = []
        if kinds is not None:
            kind_filter = f" AND {CLAIM_KEY_SQL} = ANY(%s::text[])"
            kind_params = [list(kinds)]
        cursor.execute(
            f"WITH r AS (SELECT COUNT(*) AS n FROM {self.job_table}"
            " WHERE queue = %s AND state = 'running'),"
            f" c AS MATERIALIZED (SELECT id FROM {self.job_table}"
            f" WHERE state = 'available' AND queue = %s{kind_filter}{self.not_paused()}"
            " ORDER BY priority DESC, scheduled_at, id"
            " LIMIT GREATEST(0, LEAST(%s, %s - (SELECT n FROM r))) FOR UPDATE SKIP LOCKED)"
            f" UPDATE {self.job_table} AS j SET state = 'running', attempt = j.attempt + 1,"
            " claim_token = j.claim_token + 1, attempted_at = %s, lease_until = %s,"
            " claimed_by = %s"
            f" FROM c WHERE j.id = c.id RETURNING {CLAIMED_COLUMNS}, (SELECT n FROM r)",
            [queue, queue, *kind_params, queue, limit, cap, now, lease_until, worker],
        )
        rows = cursor.fetchall()
        return rows, (rows[0][-1] if rows else None)

    def claim_ids(
        self,
        cursor: CursorWrapper,
        ids: Sequence[int],
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[tuple[Any, ...]]:
        cursor.execute(
            f"UPDATE {self.job_table} AS j SET state = 'running', attempt = j.attempt + 1,"
            " claim_token = j.claim_token + 1, attempted_at = %s, lease_until = %s,"
            " claimed_by = %s WHERE j.id = ANY(%s::bigint[]) AND j.state = 'available'"
            f" RETURNING {CLAIMED_COLUMNS}",
            [now, lease_until, worker, list(ids)],
        )
        return cursor.fetchall()
