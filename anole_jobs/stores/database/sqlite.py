"""The SQLite flavour of the database store.

SQLite has one writer at a time, so claims cannot race once the store holds the write lock:
outside an atomic block it runs ``BEGIN IMMEDIATE`` … ``COMMIT`` itself, which takes the lock
up front and waits (Django's default 5 s ``timeout``) instead of failing on a lock upgrade.
This works with Django's default SQLite settings: in autocommit mode Django leaves
``isolation_level=None`` and so issues no BEGIN of its own. Inside the caller's atomic block
the statements simply join it.

Batches travel as one JSON parameter read with ``json_each`` (no variable limit, one statement
text whatever the batch size). Times are stored as Django stores them (naive text in the
connection's time zone, UTC by default), which sort correctly as text. Needs SQLite ≥ 3.35
(RETURNING; UPDATE … FROM needs 3.33).
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from typing import Any

from django.db.backends.utils import CursorWrapper
from django.utils import timezone

from anole_jobs import timeline
from anole_jobs.conf import Settings
from anole_jobs.core import ErrorEntry, ListFilter
from anole_jobs.stores.base import Finish, NewJob, Rescued, RunRef
from anole_jobs.stores.database import workflows
from anole_jobs.stores.database.base import (
    ON_KEY_CONFLICT,
    SQLStore,
    aware_utc,
    encode_json,
    error_json,
    insert_values,
)
from anole_jobs.stores.database.ddl import index_name
from anole_jobs.stores.database.parts import CLAIM_KEY_SQL, FINAL

MIN_SQLITE = (3, 35, 0)


#: The job's attempts with room for one more (the oldest dropped past `ATTEMPTS_KEPT`).
_ROOMY_ATTEMPTS = (
    f"CASE WHEN json_array_length(COALESCE(attempts, '[]')) >= {timeline.ATTEMPTS_KEPT}"
    " THEN json_remove(attempts, '$[0]') ELSE COALESCE(attempts, '[]') END"
)


def _attempt_entry(attempt: str, started: str, ended: str, outcome: str) -> str:
    """The SQL of one entry of a job's attempts (the worker: the claim's)."""
    return (
        f"json_object('attempt', {attempt}, 'worker', claimed_by, 'started_at', {started},"
        f" 'finished_at', {ended}, 'outcome', {outcome})"
    )


def _fields(names: Sequence[str]) -> str:
    """``json_extract(value, '$[i]') AS name`` for each name: one row of a json_each batch."""
    return ", ".join(f"json_extract(value, '$[{i}]') AS {name}" for i, name in enumerate(names))


_WRITERS: dict[str, threading.RLock] = {}
_WRITERS_LOCK = threading.Lock()


def _writers_of(database: object) -> threading.RLock:
    """One lock per database file, shared by every store on it in this process."""
    with _WRITERS_LOCK:
        return _WRITERS.setdefault(str(database), threading.RLock())


_INSERT_ONE = (
    "INSERT INTO {table} (kind, queue, state, args, meta, priority, max_attempts, created_at,"
    " scheduled_at, unique_key, unique_scope, version, unique_lock, errors, attempt,"
    " claim_token) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, '[]', 0, 0)"
    f" {ON_KEY_CONFLICT} RETURNING id, unique_lock"
)


class SqliteStore(SQLStore):
    name = "sqlite"
    vendor = "sqlite"
    #: No cross-process wake-ups: a result waiter hears of other processes' finishes by polling.
    finished_poll = 0.25

    def __init__(self, alias: str, settings: Settings) -> None:
        super().__init__(alias, settings)
        # Without ANALYZE statistics SQLite prefers the (state, id) index and would read
        # every scheduled job, however far in the future, at each stage.
        self.stage_hint = f' INDEXED BY "{index_name(self.prefix, "job_stage")}"'
        # And for the rescue: the (state, id) index that gave its order holds no running job
        # (migration 0011), and a scan in id order would read the whole table.
        self.rescue_hint = f' INDEXED BY "{index_name(self.prefix, "job_rescue")}"'
        self._writers = _writers_of(self.connection.settings_dict["NAME"])

    # -- vendor hooks ----------------------------------------------------------------------
    def _tz(self) -> Any:
        # With USE_TZ=False Django stores local (TIME_ZONE) times; with USE_TZ, the
        # connection's zone (UTC unless DATABASES[alias]["TIME_ZONE"] says otherwise).
        return self.connection.timezone or timezone.get_default_timezone()

    def encode_time(self, value: datetime | None) -> Any:
        if value is None:
            return None
        naive = timezone.make_naive(value, self._tz())
        return self.connection.ops.adapt_datetimefield_value(naive)

    def decode_time(self, value: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        if timezone.is_naive(value):
            value = timezone.make_aware(value, self._tz())
        return aware_utc(value)

    def in_list(self, column: str, values: Collection[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN (SELECT value FROM json_each(%s))", [encode_json(list(values))]

    def end_attempt_sql(self, outcome: str) -> str:
        entry = _attempt_entry("attempt", "attempted_at", "%s", f"'{outcome}'")
        return (
            "attempts = CASE WHEN state = 'running'"
            f" THEN json_insert({_ROOMY_ATTEMPTS}, '$[#]', json({entry})) ELSE attempts END"
        )

    def retry_attempts_sql(self, running: bool) -> str:
        restarted = _attempt_entry("attempt", "attempted_at", "%s", f"'{timeline.RESTARTED}'")
        completed = _attempt_entry(
            "attempt", "attempted_at", "finished_at", f"'{timeline.COMPLETED}'"
        )
        return (
            "attempts = CASE"
            + (
                f" WHEN state = 'running' THEN json_insert({_ROOMY_ATTEMPTS}, '$[#]',"
                f" json({restarted}))"
                if running
                else ""
            )
            # A completed row whose attempts do not end with its completing attempt (as the
            # finish of older code appended it): the finish leaves it out, the row says it.
            + " WHEN state = 'completed' AND NOT (COALESCE(json_extract(attempts,"
            f" '$[#-1].outcome'), '') = '{timeline.COMPLETED}'"
            " AND json_extract(attempts, '$[#-1].attempt') = attempt)"
            f" THEN json_insert({_ROOMY_ATTEMPTS}, '$[#]', json({completed}))"
            " ELSE attempts END"
        )

    def search_sql(self, filter: ListFilter) -> tuple[list[str], list[Any], bool]:
        # Narrowed in SQL, tested exactly in Python (jsonb's containment has no SQLite form).
        where, params = _narrowing(filter)
        return where, params, False

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        connection = self.connection
        if connection.in_atomic_block or not connection.get_autocommit():
            yield  # the caller's transaction: never wait on this process's writers inside it
            return
        with self._writers:
            yield

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        connection = self.connection
        if connection.in_atomic_block or not connection.get_autocommit() or _began(connection):
            yield  # the caller's transaction (or this store's own, a limited claim's): join it
            return
        # The store's own writes in this process (these transactions and `writing`) take
        # turns on a Python lock first: two of its threads (the claimer and the completer)
        # contending for SQLite's write lock would otherwise meet SQLite's busy handler, which
        # sleeps 1, 2, 5, 10 ... ms between retries; a Python lock hands over the moment it is
        # released. Other processes, and the app's own transactions, still meet the handler.
        with self._writers, connection.cursor() as cursor:
            cursor.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                with contextlib.suppress(Exception):
                    cursor.execute("ROLLBACK")
                raise
            cursor.execute("COMMIT")

    @contextlib.contextmanager
    def flow_claiming(self) -> Iterator[str]:
        with self.write_lock():
            yield ""

    # -- statements ------------------------------------------------------------------------
    def insert_rows(self, cursor: CursorWrapper, jobs: Sequence[NewJob]) -> list[tuple[int, Any]]:
        rows = insert_values(jobs, encode_args=encode_json, encode_time=self.encode_time)
        if len(rows) == 1:
            # One job (every single enqueue): plain VALUES, no JSON batch to unpack.
            cursor.execute(_INSERT_ONE.format(table=self.job_table), [*rows[0], jobs[0].unique_key])
            return cursor.fetchall()
        batch = encode_json(rows)
        row = _fields(
            (
                "kind",
                "queue",
                "state",
                "args",
                "meta",
                "priority",
                "max_attempts",
                "created_at",
                "scheduled_at",
                "unique_key",
                "unique_scope",
                "version",
            )
        )
        cursor.execute(
            f"INSERT INTO {self.job_table} (kind, queue, state, args, meta, errors, priority,"
            " attempt, max_attempts, claim_token, created_at, scheduled_at, unique_key,"
            " unique_scope, unique_lock, version)"
            " SELECT kind, queue, state, args, meta, '[]', priority, 0, max_attempts, 0,"
            " created_at, scheduled_at, unique_key, unique_scope, unique_key, version"
            f" FROM (SELECT key AS ord, {row} FROM json_each(%s)) WHERE 1 ORDER BY ord"
            f" {ON_KEY_CONFLICT} RETURNING id, unique_lock",
            [batch],
        )
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
            where, kind_params = self.in_list(CLAIM_KEY_SQL, kinds)
            kind_filter = f" AND {where}"
        with self.write_lock():
            cursor.execute(
                f"UPDATE {self.job_table} SET state = 'running', attempt = attempt + 1,"
                " claim_token = claim_token + 1, attempted_at = %s, lease_until = %s,"
                " claimed_by = %s"
                f" WHERE id IN (SELECT id FROM {self.job_table}"
                f" WHERE state = 'available' AND queue = %s{kind_filter}{self.not_paused()}"
                " ORDER BY priority DESC, scheduled_at, id LIMIT %s)"
                f" RETURNING {self.select()}",
                [
                    self.encode_time(now),
                    self.encode_time(lease_until),
                    worker,
                    queue,
                    *kind_params,
                    queue,
                    limit,
                ],
            )
            return cursor.fetchall()

    def finish_rows(self, cursor: CursorWrapper, results: Sequence[Finish]) -> set[int]:
        return self._finish(cursor, results, "")

    def finish_plain_rows(self, cursor: CursorWrapper, results: Sequence[Finish]) -> set[int]:
        return self._finish(cursor, results, " AND workflow_id IS NULL")

    def _finish(self, cursor: CursorWrapper, results: Sequence[Finish], only: str) -> set[int]:
        # A batch in which no attempt reported progress or logged (plain jobs) takes the
        # statement without those columns: nothing to read per row, nothing to merge. And
        # one in which every attempt completed (whose attempts the finish leaves as they are:
        # the row says a completed attempt, timeline.py) the statement without the attempts.
        notes = any(r.progress is not None or r.logs is not None for r in results)
        kept = timeline.kept
        ended = any(kept(r.outcome) for r in results)
        encode_time = self.encode_time
        batch = encode_json(
            [
                [
                    r.run.id,
                    r.run.attempt,
                    r.run.token,
                    r.state,
                    encode_time(r.at),
                    encode_time(r.scheduled_at),
                    error_json(r.error),
                    1 if r.give_back_attempt else 0,
                    r.result,
                    encode_time(r.started_at),
                    *((r.outcome if kept(r.outcome) else None,) if ended else ()),
                    *((r.progress, r.logs, r.logs_kept) if notes else ()),
                ]
                for r in results
            ]
        )
        key = (only, ended, notes)
        sql = self._finish_sql.get(key)
        if sql is None:
            sql = self._finish_sql[key] = self._finish_statement(only, ended, notes)
        # A named parameter: Django turns the statement's ``%(batch)s`` into ``:batch`` with
        # one string format, where its ``%s`` costs a regular expression scan of this long
        # statement on every execution.
        cursor.execute(sql, {"batch": batch})
        return {row_id for (row_id,) in cursor.fetchall()}

    @functools.cached_property
    def _finish_sql(self) -> dict[tuple[str, bool, bool], str]:
        """`_finish`'s statements, made once each (by `only`, whether rows end attempts that
        are kept in the job's attempts and whether they carry notes)."""
        return {}

    def _finish_statement(self, only: str, ended: bool, notes: bool) -> str:
        names = ("f_id", "f_attempt", "f_token", "f_state", "f_at", "f_scheduled_at", "f_error")
        timeline_names = (("f_outcome",) if ended else ()) + (
            ("f_progress", "f_logs", "f_logs_kept") if notes else ()
        )
        row = _fields((*names, "f_give_back", "f_result", "f_started_at", *timeline_names))
        table = self.job_table
        entry = _attempt_entry(
            "f_attempt", "COALESCE(f_started_at, attempted_at)", "f_at", "f_outcome"
        )
        # The newest `f_logs_kept` of the job's lines and the attempt's, oldest first.
        logs = (
            "(SELECT json_group_array(json(v)) FROM (SELECT v FROM (SELECT v,"
            " row_number() OVER (ORDER BY s, k) AS n, count(*) OVER () AS c FROM ("
            f"SELECT 0 AS s, a.key AS k, a.value AS v FROM json_each(COALESCE({table}.logs,"
            " '[]')) AS a UNION ALL SELECT 1, b.key, b.value FROM json_each(f_logs) AS b))"
            " WHERE n > c - f_logs_kept ORDER BY n))"
        )
        attempts_sql = (
            ", attempts = CASE WHEN f_outcome IS NULL THEN attempts"
            # A job's first attempt (most jobs' only one): no array to read and grow.
            f" WHEN attempts IS NULL THEN json_array({entry})"
            f" ELSE json_insert({_ROOMY_ATTEMPTS}, '$[#]', json({entry})) END"
            if ended
            else ""
        )
        notes_sql = (
            f", progress = COALESCE(f_progress, progress),"
            f" logs = CASE WHEN f_logs IS NULL THEN logs ELSE {logs} END"
            if notes
            else ""
        )
        return (
            f"UPDATE {self.job_table} SET state = f_state, lease_until = NULL,"
            " attempt = attempt - f_give_back,"
            " errors = CASE WHEN f_error IS NULL THEN errors"
            " ELSE json_insert(errors, '$[#]', json(f_error)) END,"
            f" finished_at = CASE WHEN f_state IN ({FINAL}) THEN f_at ELSE finished_at END,"
            " scheduled_at = COALESCE(f_scheduled_at, scheduled_at),"
            f" unique_lock = CASE WHEN f_state IN ({FINAL}) AND unique_scope != 'any'"
            " THEN NULL ELSE unique_lock END,"
            " result = CASE WHEN f_state = 'completed' THEN f_result ELSE result END,"
            " attempted_at = COALESCE(f_started_at, attempted_at)"
            f"{attempts_sql}{notes_sql}"
            f" FROM (SELECT {row} FROM json_each(%(batch)s)) AS f"
            " WHERE id = f_id AND attempt = f_attempt AND claim_token = f_token"
            # `+state`: keep SQLite on the primary key per batch row; through the state index
            # it would scan every running job and rescan the batch for each (quadratic).
            f" AND +state = 'running'{only} RETURNING id"
        )

    def heartbeat_rows(
        self, cursor: CursorWrapper, runs: Sequence[RunRef], lease_until: datetime
    ) -> list[tuple[int, int, int]]:
        batch = encode_json([[run.id, run.attempt, run.token] for run in runs])
        cursor.execute(
            f"UPDATE {self.job_table} SET lease_until = %s"
            f" FROM (SELECT {_fields(('f_id', 'f_attempt', 'f_token'))} FROM json_each(%s)) AS f"
            " WHERE id = f_id AND attempt = f_attempt AND claim_token = f_token"
            " AND +state = 'running' RETURNING id, attempt, claim_token",  # see finish_rows
            [self.encode_time(lease_until), batch],
        )
        return cursor.fetchall()

    # -- maintenance -----------------------------------------------------------------------
    def rescue(self, *, now: datetime, limit: int = 10_000) -> list[Rescued]:
        if limit <= 0:
            return []
        table = self.job_table
        with self.write_lock(), self.cursor() as cursor:
            # Under the write lock nothing changes between the read and the fenced write; the
            # read lets the error entry quote the lease exactly as memory.py does.
            cursor.execute(
                f"SELECT id, attempt, claim_token, max_attempts, lease_until, kind, queue"
                f" FROM {table}{self.rescue_hint} WHERE state = 'running' AND lease_until < %s"
                " ORDER BY id LIMIT %s",
                [self.encode_time(now), limit],
            )
            lapsed = cursor.fetchall()
            if not lapsed:
                return []
            at = self.encode_time(now)
            batch = []
            for row_id, attempt, token, max_attempts, lease_until, _kind, _queue in lapsed:
                error = ErrorEntry(
                    at=now,
                    attempt=attempt,
                    type="LeaseExpired",
                    message=f"the lease ended at {self.decode_time(lease_until).isoformat()}"  # type: ignore[union-attr]
                    " before the run reported",
                )
                dead = attempt >= max_attempts
                batch.append([row_id, attempt, token, encode_json(error.as_json()), int(dead)])
            row = _fields(("f_id", "f_attempt", "f_token", "f_error", "f_dead"))
            cursor.execute(
                f"UPDATE {table} SET errors = json_insert(errors, '$[#]', json(f_error)),"
                f" {self.end_attempt_sql(timeline.RESCUED)}, lease_until = NULL,"
                " state = CASE WHEN f_dead THEN 'dead' ELSE 'available' END,"
                " finished_at = CASE WHEN f_dead THEN %s ELSE finished_at END,"
                " scheduled_at = CASE WHEN f_dead THEN scheduled_at ELSE %s END,"
                " unique_lock = CASE WHEN f_dead AND unique_scope != 'any' THEN NULL"
                " ELSE unique_lock END"
                f" FROM (SELECT {row} FROM json_each(%s)) AS f"
                " WHERE id = f_id AND attempt = f_attempt AND claim_token = f_token"
                " AND state = 'running' AND lease_until < %s RETURNING id, kind, queue, state",
                [at, at, at, encode_json(batch), at],
            )
            rows = sorted(cursor.fetchall())
            killed = [i for i, _, _, s in rows if s == "dead"]
            if killed:  # the steps a kill cancels or releases change in the same write
                workflows.announce(self, workflows.settle_steps(self, cursor, killed, now))
        self.finished_at_commit(killed)
        return [Rescued(id=i, kind=k, queue=q, state=s) for i, k, q, s in rows]

    # -- queue limits ------------------------------------------------------------------------
    def claim_ids(
        self,
        cursor: CursorWrapper,
        ids: Sequence[int],
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[tuple[Any, ...]]:
        marks = ", ".join("%s" for _ in ids)
        cursor.execute(
            f"UPDATE {self.job_table} SET state = 'running', attempt = attempt + 1,"
            " claim_token = claim_token + 1, attempted_at = %s, lease_until = %s,"
            f" claimed_by = %s WHERE id IN ({marks}) AND state = 'available'"
            f" RETURNING {self.select()}",
            [self.encode_time(now), self.encode_time(lease_until), worker, *ids],
        )
        return cursor.fetchall()


def _began(connection: Any) -> bool:
    """Whether this store's own transaction is open on `connection` (a write lock held)."""
    raw = connection.connection
    return raw is not None and raw.in_transaction


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _narrowing(filter: ListFilter) -> tuple[list[str], list[Any]]:
    """SQL conditions every row matching `filter`'s error and args terms meets, so that only
    those rows reach Python's exact test: the error text (ASCII only: SQLite's lower() folds
    nothing else) and each top-level key of args with a number or string value."""
    where: list[str] = []
    params: list[Any] = []
    if filter.error is not None and filter.error.isascii():
        where.append(
            "json_array_length(errors) > 0 AND instr(lower("
            "coalesce(json_extract(errors, '$[#-1].type'), '') || ': ' ||"
            " coalesce(json_extract(errors, '$[#-1].message'), '')), %s) > 0"
        )
        params.append(filter.error.lower())
    for key, value in (filter.args or {}).items():
        plain = isinstance(value, (int, float, str)) and not isinstance(value, bool)
        if plain and _PLAIN_KEY.fullmatch(key):
            where.append(f"json_extract(args, '$.{key}') = %s")
            params.append(value)
    return where, params


def check_version(version: tuple[int, ...]) -> str | None:
    """Why this SQLite cannot run the store, or None."""
    if version < MIN_SQLITE:
        found = ".".join(map(str, version))
        return f"the database store needs SQLite 3.35 or later (RETURNING); this is {found}"
    return None


__all__ = ["SqliteStore", "check_version"]
