"""The PostgreSQL flavour of the database store.

Claims pick rows with ``FOR UPDATE SKIP LOCKED`` inside one UPDATE, so concurrent workers
never wait for each other nor claim one job twice. Batches travel as one array parameter per
column through ``unnest`` (one statement text whatever the batch size, no parameter limit).

Wake-ups: with ``NOTIFY`` on, an insert sends ``pg_notify(channel, queue)`` from the same
statement (a CTE), so an enqueue stays one round trip, and PostgreSQL delivers it only if the
transaction commits. The channel is ``TABLE_PREFIX + "wake"`` (`SQLStore.channel`); the payload
is a queue name, or ``""`` for every queue. The LISTEN side is the runtime's listener thread.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from typing import Any

from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from anole_jobs.conf import Settings
from anole_jobs.stores.base import Capabilities, Finish, NewJob, Rescued, RunRef
from anole_jobs.stores.database.base import (
    FINAL,
    SQLStore,
    aware_utc,
    encode_json,
    error_json,
)
from anole_jobs.stores.database.pg_session import AdvisoryLeadership, Listener
from anole_jobs.stores.wakeups import Subscription

#: ``lease_until`` as Python's ``datetime.isoformat()`` writes an aware UTC time, so a rescue's
#: error message reads exactly as the memory store's (microseconds only when not zero).
_ISO_LEASE = (
    "to_char(j.lease_until AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
    " || CASE WHEN to_char(j.lease_until, 'US') = '000000' THEN ''"
    " ELSE '.' || to_char(j.lease_until, 'US') END || '+00:00'"
)


class PostgresStore(SQLStore):
    name = "postgresql"
    vendor = "postgresql"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    json_parameter = "%s::jsonb"

    def __init__(self, alias: str, settings: Settings) -> None:
        super().__init__(alias, settings)
        self.notify = settings.notify
        self.capabilities = Capabilities(
            transactions=True, durable=True, notify=settings.notify, extra={"channel": self.channel}
        )
        self.leadership = AdvisoryLeadership(alias, self.prefix)
        self._listener: Listener | None = None
        self._listener_lock = threading.Lock()

    # -- claims: no wait for the WAL flush on a claim-only connection ----------------------
    def relax_claim_durability(self) -> None:
        self._local.relaxed_claims = True

    def _relax_if_asked(self, cursor: CursorWrapper) -> None:
        # Per raw connection: Django may reconnect the thread's connection after an error.
        if not getattr(self._local, "relaxed_claims", False):
            return
        raw = connections[self.alias].connection
        if getattr(self._local, "relaxed_on", None) is not raw:
            cursor.execute("SET synchronous_commit TO off")
            self._local.relaxed_on = raw

    # -- leadership: an advisory lock on a dedicated session (R23) --------------------------
    def lead(self, *, instance: str, now: datetime, ttl: timedelta) -> bool:
        # The lock lives as long as the session: `ttl` does not apply here.
        return self.leadership.hold(instance)

    def resign(self, *, instance: str) -> None:
        self.leadership.release(instance)

    # -- wake-ups: LISTEN on a dedicated session --------------------------------------------
    def subscribe(self, queues: Collection[str]) -> Subscription:
        subscription = super().subscribe(queues)
        if self.notify:
            with self._listener_lock:
                if self._listener is None:
                    self._listener = Listener(self.alias, self.channel, self.wakeups.wake)
                    self._listener.start()
        return subscription

    def close(self) -> None:
        with self._listener_lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()
        self.leadership.close()

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

    # -- statements ------------------------------------------------------------------------
    def insert_rows(self, cursor: CursorWrapper, jobs: Sequence[NewJob]) -> list[tuple[int, Any]]:
        if len(jobs) == 1:
            return self._insert_one(cursor, jobs[0])
        # The whole batch travels as ONE json parameter, encoded by the json module's C
        # encoder and unpacked by the server (`json_to_recordset`): dumping one text array per
        # column made psycopg quote every element in Python, a third of enqueue_many's time.
        # args and meta go in as JSON values, not JSON text inside JSON (no double encoding).
        # A batch's jobs mostly share their two times: write each distinct one once.
        times: dict[datetime, str] = {}

        def iso(value: datetime) -> str:
            text = times.get(value)
            if text is None:
                text = times[value] = value.isoformat()
            return text

        batch = encode_json(
            [
                [
                    job.kind,
                    job.queue,
                    job.state,
                    job.args,
                    job.meta,
                    job.priority,
                    job.max_attempts,
                    iso(job.created_at),
                    iso(job.scheduled_at),
                    job.unique_key,
                    job.unique_scope,
                ]
                for job in jobs
            ]
        )
        insert = (
            f"INSERT INTO {self.job_table} (kind, queue, state, args, meta, errors, priority,"
            " attempt, max_attempts, claim_token, created_at, scheduled_at, unique_key,"
            " unique_scope, unique_lock)"
            " SELECT r->>0, r->>1, r->>2, r->3, r->4, '[]'::jsonb, (r->>5)::smallint, 0,"
            " (r->>6)::int, 0, (r->>7)::timestamptz, (r->>8)::timestamptz, r->>9, r->>10, r->>9"
            " FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS t(r, ord)"
            " ORDER BY t.ord"
            " ON CONFLICT (unique_lock) DO NOTHING"
            " RETURNING id, unique_lock, queue, state"
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
            " unique_scope, unique_lock)"
            " VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, '[]'::jsonb, %s, 0, %s, 0, %s, %s, %s,"
            " %s, %s) ON CONFLICT (unique_lock) DO NOTHING RETURNING id, unique_lock"
        )
        params: list[Any] = [
            job.kind,
            job.queue,
            job.state,
            encode_json(job.args),
            encode_json(job.meta),
            job.priority,
            job.max_attempts,
            job.created_at,
            job.scheduled_at,
            job.unique_key,
            job.unique_scope,
            job.unique_key,
        ]
        if self.notify and job.state == "available":
            sql = f"WITH ins AS ({insert}) SELECT id, unique_lock, pg_notify(%s, %s) FROM ins"
            params += [self.channel, job.queue]
            cursor.execute(sql, params)
            return [(row[0], row[1]) for row in cursor.fetchall()]
        cursor.execute(insert, params)
        return cursor.fetchall()

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
        kind_filter: str = ""
        kind_params: list[Any] = []
        if kinds is not None:
            kind_filter = " AND kind = ANY(%s::text[])"
            kind_params = [list(kinds)]
        self._relax_if_asked(cursor)
        # A MATERIALIZED CTE picks the rows once: as a subquery on the inner side of a
        # nested loop it could be rescanned, and each rescan would lock `limit` more rows.
        # The rows it locked are re-checked by the lock and held until commit, so the UPDATE
        # needs no condition but the id (one more would invite a scan of every available job).
        cursor.execute(
            f"WITH c AS MATERIALIZED (SELECT id FROM {self.job_table}"
            f" WHERE state = 'available' AND queue = %s{kind_filter}{self.not_paused()}"
            " ORDER BY priority DESC, scheduled_at, id LIMIT %s FOR UPDATE SKIP LOCKED)"
            f" UPDATE {self.job_table} AS j SET state = 'running', attempt = j.attempt + 1,"
            " claim_token = j.claim_token + 1, attempted_at = %s, lease_until = %s,"
            " claimed_by = %s"
            f" FROM c WHERE j.id = c.id RETURNING {self.select('j')}",
            [queue, *kind_params, queue, limit, now, lease_until, worker],
        )
        return cursor.fetchall()

    def finish_rows(self, cursor: CursorWrapper, results: Sequence[Finish]) -> set[int]:
        cursor.execute(
            f"UPDATE {self.job_table} AS j SET state = f.state, lease_until = NULL,"
            " attempt = j.attempt - f.give_back,"
            " errors = CASE WHEN f.error IS NULL THEN j.errors"
            " ELSE j.errors || jsonb_build_array(f.error::jsonb) END,"
            f" finished_at = CASE WHEN f.state IN ({FINAL}) THEN f.at ELSE j.finished_at END,"
            " scheduled_at = COALESCE(f.scheduled_at, j.scheduled_at),"
            f" unique_lock = CASE WHEN f.state IN ({FINAL}) AND j.unique_scope <> 'any'"
            " THEN NULL ELSE j.unique_lock END"
            " FROM unnest(%s::bigint[], %s::int[], %s::bigint[], %s::text[], %s::timestamptz[],"
            " %s::timestamptz[], %s::text[], %s::int[])"
            " AS f(id, attempt, token, state, at, scheduled_at, error, give_back)"
            " WHERE j.id = f.id AND j.attempt = f.attempt AND j.claim_token = f.token"
            " AND j.state = 'running' RETURNING j.id",
            [
                [r.run.id for r in results],
                [r.run.attempt for r in results],
                [r.run.token for r in results],
                [r.state for r in results],
                [r.at for r in results],
                [r.scheduled_at for r in results],
                [error_json(r.error) for r in results],
                [1 if r.give_back_attempt else 0 for r in results],
            ],
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
        with self.cursor() as cursor:
            # One conditional statement: the CTE locks only rows that still match once locked
            # (rows another transaction holds are skipped), so a job that finished meanwhile
            # is never touched, and the rows stay as they matched until this commits.
            cursor.execute(
                f"WITH d AS MATERIALIZED (SELECT id FROM {table}"
                " WHERE state = 'running' AND lease_until < %s"
                " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)"
                f" UPDATE {table} AS j SET errors = j.errors || jsonb_build_array({error}),"
                " lease_until = NULL,"
                f" state = CASE WHEN {dead} THEN 'dead' ELSE 'available' END,"
                f" finished_at = CASE WHEN {dead} THEN %s ELSE j.finished_at END,"
                f" scheduled_at = CASE WHEN {dead} THEN j.scheduled_at ELSE %s END,"
                f" unique_lock = CASE WHEN {dead} AND j.unique_scope <> 'any' THEN NULL"
                " ELSE j.unique_lock END"
                " FROM d WHERE j.id = d.id RETURNING j.id, j.kind, j.queue, j.state",
                [now, limit, now.isoformat(), now, now],
            )
            rows = sorted(cursor.fetchall())
        return [Rescued(id=i, kind=k, queue=q, state=s) for i, k, q, s in rows]
