"""The SQL store logic SQLite and PostgreSQL share.

`SQLStore` implements the `Store` contract with raw SQL on the Django connection of one alias
(``connections[alias].cursor()``), never a connection of its own: its writes join the caller's
``transaction.atomic(using=alias)`` (`enqueue_in`, `complete_in`), and Django owns
connecting, closing and thread-locality. The vendor modules (`postgres.py`, `sqlite.py`) supply
the statements that differ: batch parameters (PostgreSQL arrays, SQLite ``json_each``), row
locking, time encoding and the write lock.

Rules every statement keeps:
- times come in as arguments and are encoded as the model's DateTimeField would be;
- states are written as SQL literals, so the partial indexes of `ddl.MODEL_JOB_INDEXES` apply;
- `unique_lock` is set to `unique_key` exactly while the job holds its key, so the unique
  constraint decides atomically which of two concurrent enqueues of one unique job wins
  (never check-then-insert);
- every write after a claim is fenced on (id, attempt, claim_token, state='running'), so a
  worker that lost its job can no longer change it;
- no statement maintains the counts: triggers on the job table keep ``<prefix>count`` (see
  `ddl` for why), so `counts()` reads that small table instead of the job table.

Broken connections raise Django's `OperationalError`/`InterfaceError`; nothing is swallowed.
"""

from __future__ import annotations

import builtins
import contextlib
import json
from abc import abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import IntegrityError, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper

from anole_jobs import timeline
from anole_jobs.conf import Settings
from anole_jobs.core import (
    FINAL_STATES,
    LIST_LIMIT_MAX,
    LIVE_STATES,
    CronState,
    JobRecord,
    ListFilter,
    State,
    WorkflowRow,
)
from anole_jobs.jsontext import compact
from anole_jobs.stores.base import (
    ClaimedJob,
    Finish,
    Inserted,
    NewJob,
    NewStep,
    NewWorkflow,
    RunRef,
    Store,
    ended_ids,
)
from anole_jobs.stores.database import workflows
from anole_jobs.stores.database.ddl import (
    HOT_STATES,
    NOT_HOT,
    NOT_RUNNING,
    STAT_COLUMNS,
    channel,
    done_channel,
    stat_hour_table,
    stat_table,
    tables,
)
from anole_jobs.stores.database.durable import SQLDurable
from anole_jobs.stores.database.fairflow import SQLFairFlow
from anole_jobs.stores.database.flow import SQLFlow
from anole_jobs.stores.database.limits import SQLLimits
from anole_jobs.stores.database.parts import LIVE, literals
from anole_jobs.stores.database.workers import SQLWorkers
from anole_jobs.stores.database.workflows import Settled
from anole_jobs.stores.durable import record_steps, steps_of
from anole_jobs.stores.search import BulkAction, search_matches
from anole_jobs.stores.stats import (
    Resolution,
    StatsByQueue,
    check_range,
    floor_time,
    hour_number,
    hourly_points,
    minute_number,
    minutes_to_prune,
    roll_range,
    roll_up_rows,
)
from anole_jobs.stores.wakeups import announce

#: The columns every read selects, in `_record`'s order.
COLUMNS = (
    "id",
    "kind",
    "queue",
    "state",
    "args",
    "meta",
    "priority",
    "attempt",
    "max_attempts",
    "errors",
    "created_at",
    "scheduled_at",
    "attempted_at",
    "finished_at",
    "unique_key",
    "claim_token",
    "lease_until",
    "result",
    "workflow_id",
    "step_name",
    "version",
)
#: The columns of the job's timeline `get` reads after `COLUMNS` (see `with_timeline`).
TIMELINE_COLUMNS = "progress, logs, attempts, claimed_by"
#: How every insert meets a job that holds its unique key: insert nothing. The predicate lets the
#: server infer the partial unique index on ``unique_lock`` (only jobs holding a key have an
#: entry in it), and still matches a full unique constraint (SQLite keeps one, see migration
#: 0011).
ON_KEY_CONFLICT = "ON CONFLICT (unique_lock) WHERE unique_lock IS NOT NULL DO NOTHING"
#: How many claimed runs of plain jobs a store remembers (see `SQLStore.remember_plain`): a
#: worker holds far fewer; past it the store forgets them all, which only costs their finish
#: a look for workflow steps.
PLAIN_RUNS_MAX = 100_000
#: The election `lead` takes part in (one row of the leader table).
LEADER_NAME = "leader"
#: How often `insert` retries rows whose key holder finished between its two statements.
INSERT_ROUNDS = 8
#: Rows of the count table past which `counts()` folds them (PostgreSQL's deltas): reading a
#: thousand small rows costs well under a millisecond, folding them one short transaction.
FOLD_AFTER = 1_000
#: Delta rows of the stat table a `stats()` read sums past which it folds them (PostgreSQL).
STAT_FOLD_AFTER = 20_000
#: The stat table's counters summed over a group of rows (the longest run kept).
_SUMS = ", ".join(f"MAX({c})" if c == "max_ms" else f"SUM({c})" for c in STAT_COLUMNS)
#: Rows a search that tests its terms in Python reads per statement.
SEARCH_CHUNK = 500


#: Each state the admin indexes leave out, as a condition (see `SQLStore.newest`).
HOT_CONDITIONS = tuple(f"state = {literals([state])}" for state in HOT_STATES)


def encode_json(value: object) -> str:
    return compact(value)


def decode_json(value: object) -> Any:
    # Django loads PostgreSQL jsonb as text for its JSONField; a custom loader may not.
    return json.loads(value) if isinstance(value, (str, bytes)) else value


class SQLStore(SQLDurable, SQLFairFlow, SQLFlow, SQLLimits, SQLWorkers, Store):
    """The durable store on one Django database alias; subclassed per vendor."""

    vendor: str = ""
    supports_transactions = True

    def __init__(self, alias: str, settings: Settings) -> None:
        self.alias = alias
        self.atomic_alias = alias
        self.prefix = settings.table_prefix
        self.tables = tables(self.prefix)
        self.job_table = f'"{self.tables.job}"'
        self.leader_table = f'"{self.tables.leader}"'
        self.cron_table = f'"{self.tables.cron}"'
        self.queue_table = f'"{self.tables.queue}"'
        self.count_table = f'"{self.tables.count}"'
        #: The LISTEN/NOTIFY channel (PostgreSQL); a listener thread subscribes to it.
        self.channel = channel(self.prefix)
        #: The channel of finished jobs (payload: their ids), for result waiters.
        self.done_channel = done_channel(self.prefix)
        self.notify = False
        #: Runs this store claimed of jobs that are no workflow step (see `remember_plain`).
        self._plain_runs: set[RunRef] = set()

    # -- vendor hooks ----------------------------------------------------------------------
    @abstractmethod
    def encode_time(self, value: datetime | None) -> Any:
        """A datetime as the model's DateTimeField would send it."""

    @abstractmethod
    def decode_time(self, value: Any) -> datetime | None:
        """A stored time back as an aware UTC datetime."""

    @abstractmethod
    def in_list(self, column: str, values: Collection[Any]) -> tuple[str, list[Any]]:
        """``column IN values`` with one parameter whatever the number of values."""

    @abstractmethod
    def insert_rows(self, cursor: CursorWrapper, jobs: Sequence[NewJob]) -> list[tuple[int, Any]]:
        """Run the one INSERT … `ON_KEY_CONFLICT` statement for `jobs`
        (in order) and return the ``(id, unique_lock)`` of the rows it inserted."""

    @abstractmethod
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
        """Claim and return the claimed rows (COLUMNS order)."""

    @abstractmethod
    def claim_ids(
        self,
        cursor: CursorWrapper,
        ids: Sequence[int],
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[tuple[Any, ...]]:
        """Claim the ``available`` jobs `ids` (a limited claim picked them, locked); rows as
        `claim_rows` returns them."""

    @abstractmethod
    def finish_rows(self, cursor: CursorWrapper, results: Sequence[Finish]) -> set[int]:
        """Apply `results` (distinct job ids) in one fenced UPDATE; return the ids written."""

    @abstractmethod
    def finish_plain_rows(self, cursor: CursorWrapper, results: Sequence[Finish]) -> set[int]:
        """`finish_rows` for the jobs of `results` that are no workflow step (their row has no
        ``workflow_id``); the steps' results are left unwritten, for `finish` to write with
        their dependents in one transaction. Costs a plain batch no more round trips."""

    @abstractmethod
    def heartbeat_rows(
        self, cursor: CursorWrapper, runs: Sequence[RunRef], lease_until: datetime
    ) -> list[tuple[int, int, int]]:
        """Extend the leases of `runs` still held; return their ``(id, attempt, token)``."""

    @abstractmethod
    def write_lock(self) -> AbstractContextManager[None]:
        """A transaction that writes several statements atomically (joins an open one)."""

    def writing(self) -> AbstractContextManager[Any]:
        """Around the store's own writes outside a transaction (SQLite: its writers in this
        process take turns; see sqlite.py)."""
        return contextlib.nullcontext()

    def fold_counts(self) -> None:
        """Fold the count table's rows into one per (queue, state), if the vendor's triggers
        leave several (PostgreSQL's insert-only deltas). Runs in autocommit only."""

    def not_paused(self) -> str:
        """The claim's condition that its queue (one ``%s`` parameter) is not paused: part of
        the claim statement, so a pause committed before the claim began always holds."""
        return (
            f" AND NOT EXISTS (SELECT 1 FROM {self.queue_table}"
            " WHERE name = %s AND paused_at IS NOT NULL)"
        )

    #: Appended to the subqueries that pick rows to change (PostgreSQL: skip rows others hold).
    skip_locked = ""
    #: Follows the job table in the stager's row pick (SQLite: force the stage index).
    stage_hint = ""

    # -- helpers ---------------------------------------------------------------------------
    @property
    def connection(self) -> BaseDatabaseWrapper:
        return connections[self.alias]

    def cursor(self) -> CursorWrapper:
        return self.connection.cursor()

    def select(self, alias: str = "", *, steps: bool = False) -> str:
        """The columns `record` reads; with `steps`, the job's durable steps too (the reads
        a person makes; claims leave them out: a handler reads them when it needs them)."""
        qualifier = f"{alias}." if alias else ""
        columns = (*COLUMNS, "steps") if steps else COLUMNS
        return ", ".join(qualifier + column for column in columns)

    def record(self, row: Sequence[Any]) -> JobRecord:
        return JobRecord(
            id=row[0],
            kind=row[1],
            queue=row[2],
            state=row[3],
            args=decode_json(row[4]),
            meta=decode_json(row[5]),
            priority=row[6],
            attempt=row[7],
            max_attempts=row[8],
            errors=tuple(decode_json(row[9])),
            created_at=self.decode_time(row[10]),  # type: ignore[arg-type]
            scheduled_at=self.decode_time(row[11]),  # type: ignore[arg-type]
            attempted_at=self.decode_time(row[12]),
            finished_at=self.decode_time(row[13]),
            unique_key=row[14],
            result=decode_json(row[17]) if row[17] is not None else None,
            workflow_id=row[18],
            step_name=row[19],
            version=row[20] if len(row) > 20 else 1,
            steps=record_steps(steps_of(row[21])) if len(row) > 21 else {},
        )

    def timeline_time(self, value: Any) -> datetime | None:
        """A time in the job's timeline JSON (ISO text, or the vendor's own text for a time
        copied from a column) as an aware UTC datetime."""
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                return None
        return self.decode_time(value) if isinstance(value, datetime) else None

    def with_timeline(self, record: JobRecord, row: Sequence[Any]) -> JobRecord:
        """`record` with its timeline from the `TIMELINE_COLUMNS` values `row` ends with."""
        progress, logs, attempts, worker = row[-4:]
        parse = self.timeline_time
        running = timeline.unwritten_attempt(
            record.state, record.attempt, worker, record.attempted_at, record.finished_at
        )
        return replace(
            record,
            progress=timeline.decode_progress(progress, parse),
            logs=timeline.decode_logs(logs, parse),
            attempts=timeline.decode_attempts(attempts, parse, running=running),
        )

    @abstractmethod
    def end_attempt_sql(self, outcome: str) -> str:
        """A SET clause that ends the running attempt of the row it updates in its attempts
        (outcome `outcome`, its end one ``%s`` parameter: `encode_time` of now) and leaves
        the attempts of a row that is not running as they are."""

    @abstractmethod
    def retry_attempts_sql(self, running: bool) -> str:
        """A SET clause for a retry of the row it updates: a ``completed`` row's completing
        attempt, which only its row says (the finish leaves it out of the attempts), goes into
        its attempts (unless already there); with `running`, a ``running`` row's attempt ends
        ``restarted`` as `end_attempt_sql` ends it (one ``%s`` parameter). Other rows' attempts
        are left as they are."""

    def claimed_job(self, row: Sequence[Any], now: datetime, lease_until: datetime) -> ClaimedJob:
        """A row `claim_rows` returned (all of `COLUMNS` unless the vendor returns less)."""
        return ClaimedJob(
            record=self.record(row), run=RunRef(row[0], row[7], row[15]), lease_until=lease_until
        )

    def fetch_one(self, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
        with self.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()

    # -- enqueueing ------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> list[Inserted]:
        if not jobs:
            return []
        if any(job.flow for job in jobs):
            # Turns and sequences are written with the jobs, in one transaction: no claim may
            # see a job of a sequence before it has its place.
            with self.write_lock(), self.cursor() as cursor:
                self.lock_sequences(cursor, jobs)
                results, woken = self._insert(cursor, jobs)
                self.stamp_flow(cursor, jobs, results)
        else:
            with self.writing(), self.cursor() as cursor:
                results, woken = self._insert(cursor, jobs)
        self.wake_at_commit(woken)
        return results

    def _insert(
        self, cursor: CursorWrapper, jobs: Sequence[NewJob]
    ) -> tuple[list[Inserted], dict[str, int]]:
        """Insert `jobs`; returns their results and the queues to wake with their top priority
        (PostgreSQL's statement has already sent their NOTIFY, which the server delivers at
        commit)."""
        results: list[Inserted | None] = [None] * len(jobs)
        woken: dict[str, int] = {}
        pending = list(range(len(jobs)))
        for _ in range(INSERT_ROUNDS):
            rows = sorted(self.insert_rows(cursor, [jobs[i] for i in pending]))
            # Ids grow in statement order, so rows without a key map back in order; a row
            # with a key maps back by its key (distinct within a batch).
            plain = iter(row_id for row_id, lock in rows if lock is None)
            by_lock = {lock: row_id for row_id, lock in rows if lock is not None}
            skipped = []
            for i in pending:
                job = jobs[i]
                if job.unique_key is None:
                    results[i] = Inserted(next(plain), True)
                elif job.unique_key in by_lock:
                    results[i] = Inserted(by_lock.pop(job.unique_key), True)
                else:
                    skipped.append(i)
                    continue
                if job.state == "available":
                    announce(woken, job.queue, job.priority)
            if not skipped:
                break
            holders = self._holders(cursor, {jobs[i].unique_key for i in skipped})  # type: ignore[misc]
            pending = []
            for i in skipped:
                holder = holders.get(jobs[i].unique_key)  # type: ignore[arg-type]
                if holder is None:
                    pending.append(i)  # the holder finished meanwhile: the key is free again
                else:
                    results[i] = Inserted(holder, False)
            if not pending:
                break
        else:
            raise RuntimeError(
                f"insert: unique keys kept changing hands in {INSERT_ROUNDS} rounds; try again"
            )
        return results, woken  # type: ignore[return-value]

    def _holders(self, cursor: CursorWrapper, keys: Collection[str]) -> dict[str, int]:
        where, params = self.in_list("unique_lock", keys)
        cursor.execute(f"SELECT unique_lock, id FROM {self.job_table} WHERE {where}", params)
        return dict(cursor.fetchall())

    # -- running ---------------------------------------------------------------------------
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
        if limit <= 0 or (kinds is not None and not kinds):
            return []
        if self.claims_sequences(kinds):  # jobs of a kind with a sequence may be among them
            return self.claim_sequenced(
                queue, kinds=kinds, limit=limit, now=now, lease_until=lease_until, worker=worker
            )
        with self.cursor() as cursor:
            rows = self.claim_rows(cursor, queue, kinds, limit, now, lease_until, worker)
        claimed = [self.claimed_job(row, now, lease_until) for row in rows]
        claimed.sort(key=lambda c: (-c.record.priority, c.record.scheduled_at, c.record.id))
        return self.remember_plain(claimed)

    # -- safe deploys (docs/deploys.md) ----------------------------------------------------
    def rename_kind(self, run: RunRef, kind: str) -> bool:
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f"UPDATE {self.job_table} SET kind = %s WHERE id = %s AND state = 'running'"
                " AND attempt = %s AND claim_token = %s",
                [kind, run.id, run.attempt, run.token],
            )
            return bool(cursor.rowcount)

    def rewrite_payload(
        self, job_id: int, *, args: Mapping[str, Any] | None, result: str | None
    ) -> bool:
        sets, params = ["id = id"], []
        if args is not None:
            sets.append("args = %s")
            params.append(encode_json(dict(args)))
        if result is not None:
            sets.append("result = %s")
            params.append(result)
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f"UPDATE {self.job_table} SET {', '.join(sets)} WHERE id = %s", [*params, job_id]
            )
            return bool(cursor.rowcount)

    def live_versions(self) -> dict[tuple[str, int], int]:
        states, params = self.in_list("state", list(LIVE_STATES))
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT kind, version, COUNT(*) FROM {self.job_table} WHERE {states}"
                " GROUP BY kind, version",
                params,
            )
            return {(kind, int(version)): int(n) for kind, version, n in cursor.fetchall()}

    def remember_plain(self, claimed: list[ClaimedJob]) -> list[ClaimedJob]:
        """Note the runs of `claimed` whose job is no workflow step (a job's `workflow_id`
        never changes), so that their finish need not look for steps; returns `claimed`.
        Forgetting is always safe (the finish then looks), so the note is bounded."""
        plain = self._plain_runs
        if len(plain) > PLAIN_RUNS_MAX:
            plain.clear()  # runs never finished here (rescued elsewhere, a crashed worker)
        plain.update(c.run for c in claimed if c.record.workflow_id is None)
        return claimed

    def heartbeat(self, runs: Collection[RunRef], *, lease_until: datetime) -> set[RunRef]:
        if not runs:
            return set()
        with self.writing(), self.cursor() as cursor:
            rows = self.heartbeat_rows(cursor, list(runs), lease_until)
        return {RunRef(*row) for row in rows} & set(runs)

    def finish(self, results: Sequence[Finish]) -> list[bool]:
        # Most jobs are no workflow step: their finishes are written as one statement each
        # chunk, in autocommit. Runs this store claimed are known to be plain or not; for
        # others the statement leaves a step's result unwritten. Only a batch that held a
        # step pays for a transaction, which settles the step's dependents with it.
        plain = self._plain_runs
        known = all(result.run in plain for result in results)
        for result in results:
            plain.discard(result.run)  # a run is finished once (a second write fails its fence)
        if known:
            return self._finish_plain(results)
        written = [False] * len(results)
        unwritten: list[int] = []
        with self.writing(), self.cursor() as cursor:
            for chunk in _distinct_chunks(results, range(len(results))):
                ids = self.finish_plain_rows(cursor, [results[i] for i in chunk])
                for i in chunk:
                    written[i] = results[i].run.id in ids
                unwritten += (i for i in chunk if not written[i])
            steps = self._steps(cursor, {results[i].run.id for i in unwritten})
        if steps:
            self._finish_steps(
                results, [i for i in unwritten if results[i].run.id in steps], written
            )
        if self.waits_for_finished():
            self.finished_at_commit(ended_ids(results, written))
        return written

    def _finish_plain(self, results: Sequence[Finish]) -> list[bool]:
        """`finish` of runs this store claimed of jobs that are no workflow step."""
        written = [False] * len(results)
        with self.writing(), self.cursor() as cursor:
            for chunk in _distinct_chunks(results, range(len(results))):
                ids = self.finish_rows(cursor, [results[i] for i in chunk])
                for i in chunk:
                    written[i] = results[i].run.id in ids
        if self.waits_for_finished():
            self.finished_at_commit(ended_ids(results, written))
        return written

    def _steps(self, cursor: CursorWrapper, job_ids: Collection[int]) -> set[int]:
        """Those of `job_ids` that are workflow steps (a stale run's job is read too: rare)."""
        if not job_ids:
            return set()
        cursor.execute(
            f"SELECT id FROM {self.job_table} WHERE workflow_id IS NOT NULL"
            f" AND id IN ({', '.join(['%s'] * len(job_ids))})",
            list(job_ids),
        )
        return {row_id for (row_id,) in cursor.fetchall()}

    def _finish_steps(
        self, results: Sequence[Finish], steps: list[int], written: list[bool]
    ) -> None:
        """Write the results `steps` (indexes of workflow steps' results) in one transaction
        that also settles the dependents of the steps they ended (stores/database/workflows.py);
        `written` gets what was written."""
        with self.write_lock(), self.cursor() as cursor:
            for chunk in _distinct_chunks(results, steps):
                ids = self.finish_rows(cursor, [results[i] for i in chunk])
                for i in chunk:
                    written[i] = results[i].run.id in ids
            ended_at = {
                results[i].run.id: results[i].at
                for i in steps
                if written[i] and results[i].state in FINAL_STATES
            }
            settled = Settled()
            if ended_at:
                # The whole batch at once: each dependent as of its own dependencies' ends.
                settled = workflows.settle_steps(
                    self, cursor, list(ended_at), max(ended_at.values()), ended_at=ended_at
                )
            workflows.announce(self, settled)

    #: How a JSON parameter is written in SQL (PostgreSQL casts the text to jsonb).
    json_parameter = "%s"

    def record_progress(self, run: RunRef, progress: str) -> bool:
        with self.writing(), self.cursor() as cursor:
            cursor.execute(
                f"UPDATE {self.job_table} SET progress = {self.json_parameter}"
                " WHERE id = %s AND attempt = %s AND claim_token = %s AND state = 'running'",
                [progress, run.id, run.attempt, run.token],
            )
            return cursor.rowcount > 0

    def record_logs(self, run: RunRef, logs: str, keep: int) -> bool:
        # Read, append and cut in one transaction with the row locked (SQLite: the write
        # lock): about once a second per long attempt, so plain Python over both vendors.
        # A job cancelled during the run still takes its last lines (see Store.record_logs).
        fence = (
            " WHERE id = %s AND attempt = %s AND claim_token = %s"
            " AND state IN ('running', 'cancelled')"
        )
        lock = " FOR UPDATE" if self.vendor == "postgresql" else ""
        with self.write_lock(), self.cursor() as cursor:
            cursor.execute(
                f"SELECT logs FROM {self.job_table}{fence}{lock}", [run.id, run.attempt, run.token]
            )
            row = cursor.fetchone()
            if row is None:
                return False
            old = decode_json(row[0]) or []
            kept = [*old, *json.loads(logs)][-keep:]
            cursor.execute(
                f"UPDATE {self.job_table} SET logs = {self.json_parameter} WHERE id = %s",
                [json.dumps(kept), run.id],
            )
            return True

    def update_meta(self, run: RunRef, meta: Mapping[str, Any]) -> bool:
        with self.cursor() as cursor:
            cursor.execute(
                f"UPDATE {self.job_table} SET meta = {self.json_parameter}"
                " WHERE id = %s AND attempt = %s AND claim_token = %s AND state = 'running'",
                [encode_json(dict(meta)), run.id, run.attempt, run.token],
            )
            return cursor.rowcount > 0

    # -- maintenance -----------------------------------------------------------------------
    def stage(self, *, now: datetime, limit: int = 10_000) -> int:
        if limit <= 0:
            return 0
        with self.cursor() as cursor:
            # MATERIALIZED: the pick runs once, whatever plan the UPDATE gets; its rows are
            # locked (PostgreSQL) or the statement holds the write lock (SQLite), so the
            # UPDATE matches by id alone (see PostgresStore.claim_rows).
            cursor.execute(
                f"WITH due AS MATERIALIZED (SELECT id FROM {self.job_table}{self.stage_hint}"
                " WHERE state IN ('scheduled', 'retrying') AND scheduled_at <= %s"
                f" ORDER BY scheduled_at, id LIMIT %s{self.skip_locked})"
                f" UPDATE {self.job_table} SET state = 'available'"
                # Counted by rows: Python's sqlite3 has no rowcount for a statement led by WITH.
                " WHERE id IN (SELECT id FROM due) RETURNING id",
                [self.encode_time(now), limit],
            )
            return len(cursor.fetchall())

    def prune(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> int:
        pruned = 0
        with self.cursor() as cursor:
            for state, horizon in horizons.items():
                if pruned >= limit:
                    break
                cursor.execute(
                    f"WITH old AS MATERIALIZED (SELECT id FROM {self.job_table}"
                    f" WHERE state = {literals([state])}"
                    " AND finished_at IS NOT NULL AND finished_at < %s"
                    f" ORDER BY finished_at, id LIMIT %s{self.skip_locked})"
                    f" DELETE FROM {self.job_table} WHERE id IN (SELECT id FROM old)"
                    " RETURNING id, workflow_id",
                    [self.encode_time(now - horizon), limit - pruned],
                )
                rows = cursor.fetchall()
                pruned += len(rows)
                workflows.forget_steps(self, cursor, rows)
        if not self.connection.in_atomic_block:
            self.fold_counts()  # the leader's periodic duty keeps the count table small
        return pruned

    def expired(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> builtins.list[JobRecord]:
        found: list[JobRecord] = []
        with self.cursor() as cursor:
            for state, horizon in horizons.items():
                if len(found) >= limit:
                    break
                cursor.execute(
                    f"SELECT {self.select()} FROM {self.job_table}"
                    f" WHERE state = {literals([state])}"
                    " AND finished_at IS NOT NULL AND finished_at < %s"
                    " ORDER BY finished_at, id LIMIT %s",
                    [self.encode_time(now - horizon), limit - len(found)],
                )
                found += [self.record(row) for row in cursor.fetchall()]
        return found

    def waiting_kinds(self, queues: Collection[str]) -> dict[str, set[str]]:
        if not queues:
            return {}
        where, params = self.in_list("queue", queues)
        found: dict[str, set[str]] = {}
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT DISTINCT queue, kind FROM {self.job_table}"
                f" WHERE state = 'available' AND {where}",
                params,
            )
            for queue, kind in cursor.fetchall():
                found.setdefault(queue, set()).add(kind)
        return found

    def lead(self, *, instance: str, now: datetime, ttl: timedelta) -> bool:
        # One atomic upsert: take the row when there is none, when it expired, or keep it.
        table = self.leader_table
        row = self.fetch_one(
            f"INSERT INTO {table} (name, holder, expires_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (name) DO UPDATE"
            " SET holder = excluded.holder, expires_at = excluded.expires_at"
            f" WHERE {table}.holder = excluded.holder OR {table}.expires_at <= %s"
            " RETURNING holder",
            [LEADER_NAME, instance, self.encode_time(now + ttl), self.encode_time(now)],
        )
        return row is not None

    def resign(self, *, instance: str) -> None:
        with self.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {self.leader_table} WHERE name = %s AND holder = %s",
                [LEADER_NAME, instance],
            )

    # -- cron ------------------------------------------------------------------------------
    def cron_states(self, names: Collection[str]) -> dict[str, CronState]:
        if not names:
            return {}
        where, params = self.in_list("name", names)
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT name, last_tick_at, last_job_id FROM {self.cron_table} WHERE {where}",
                params,
            )
            return {
                name: CronState(name=name, last_tick_at=self.decode_time(tick), last_job_id=job_id)
                for name, tick, job_id in cursor.fetchall()
            }

    def cron_advance(self, *, name: str, tick: datetime, job: NewJob | None) -> Inserted | None:
        table = self.cron_table
        with self.write_lock(), self.cursor() as cursor:
            # The conditional upsert locks the entry's row: a second instance advancing the
            # same tick waits, then finds the tick taken (each tick is enqueued once).
            cursor.execute(
                f"INSERT INTO {table} (name, last_tick_at, last_job_id) VALUES (%s, %s, NULL)"
                " ON CONFLICT (name) DO UPDATE SET last_tick_at = excluded.last_tick_at"
                f" WHERE {table}.last_tick_at IS NULL"
                f" OR {table}.last_tick_at < excluded.last_tick_at"
                " RETURNING name",
                [name, self.encode_time(tick)],
            )
            if cursor.fetchone() is None or job is None:
                return None
            (inserted,), woken = self._insert(cursor, [job])
            self.stamp_flow(cursor, [job], [inserted])
            cursor.execute(
                f"UPDATE {table} SET last_job_id = %s WHERE name = %s", [inserted.id, name]
            )
        self.wake_at_commit(woken)
        return inserted

    def cron_trigger(self, *, name: str, job: NewJob) -> Inserted:
        table = self.cron_table
        with self.write_lock(), self.cursor() as cursor:
            (inserted,), woken = self._insert(cursor, [job])
            self.stamp_flow(cursor, [job], [inserted])
            if inserted.inserted:
                # The last tick is left as it is (NULL for an entry the leader has not seen).
                cursor.execute(
                    f"INSERT INTO {table} (name, last_tick_at, last_job_id) VALUES (%s, NULL, %s)"
                    " ON CONFLICT (name) DO UPDATE SET last_job_id = excluded.last_job_id",
                    [name, inserted.id],
                )
        self.wake_at_commit(woken)
        return inserted

    # -- admin -----------------------------------------------------------------------------
    def ping(self) -> None:
        # A round trip that needs the job table but reads none of its later columns: a
        # database migrated by an older release answers it (the start-up check then says
        # which migrations it lacks), one without the tables does not.
        with self.cursor() as cursor:
            cursor.execute(f"SELECT 1 FROM {self.job_table} WHERE id = 0")
            cursor.fetchone()

    def get(self, job_id: int) -> JobRecord | None:
        row = self.fetch_one(
            f"SELECT {self.select(steps=True)}, {TIMELINE_COLUMNS} FROM {self.job_table}"
            " WHERE id = %s",
            [job_id],
        )
        return self.with_timeline(self.record(row), row) if row is not None else None

    def list(self, filter: ListFilter) -> list[JobRecord]:
        limit = max(0, min(filter.limit, LIST_LIMIT_MAX))
        if limit == 0:
            return []
        where, params = [], []
        if filter.state is not None:
            where.append(f"state = {literals([filter.state])}")
        for column, value in (
            ("queue", filter.queue),
            ("kind", filter.kind),
            ("id", filter.after),
            ("workflow_id", filter.workflow),
        ):
            if value is not None:
                where.append(f"{column} {'<' if column == 'id' else '='} %s")
                params.append(value)
        # -- search: the window and the kind prefix in SQL; error and args per vendor --
        if filter.min_id is not None:
            where.append("id >= %s")
            params.append(filter.min_id)
        if filter.kind_prefix is not None:
            where.append("substr(kind, 1, %s) = %s")
            params += [len(filter.kind_prefix), filter.kind_prefix]
        if filter.error is not None or filter.args is not None:
            conditions, values, exact = self.search_sql(filter)
            where += conditions
            params += values
            if not exact:
                return self._list_tested(filter, where, params, limit)
        # -- end of search --
        sql, values = self.newest(filter, where, params, limit)
        with self.cursor() as cursor:
            cursor.execute(sql, values)
            return [self.record(row) for row in cursor.fetchall()]

    def newest(
        self,
        filter: ListFilter,
        where: builtins.list[str],
        params: builtins.list[Any],
        limit: int,
    ) -> tuple[str, builtins.list[Any]]:
        """The statement that reads the jobs matching `where` newest first, at most `limit`,
        so that an index serves each state (migration 0011): the indexes by queue and by kind
        hold every state but available and running (`ddl.HOT_STATES`), the (state, id) index
        every state but running, the rescue index the running jobs. A list by queue or kind
        alone reads the three parts apart and merges them; a list by state names the
        predicates of the indexes that hold it (SQLite matches a partial index only on its
        predicate's very terms)."""
        head = f"SELECT {self.select(steps=True)} FROM {self.job_table}"
        by_queue_or_kind = filter.queue is not None or filter.kind is not None
        if filter.state is None and filter.workflow is None and by_queue_or_kind:
            parts = [NOT_HOT, *HOT_CONDITIONS]
            selects = [
                f"SELECT * FROM ({head} WHERE {' AND '.join([*where, part])}"
                " ORDER BY id DESC LIMIT %s) AS part"
                for part in parts
            ]
            sql = f"{' UNION ALL '.join(selects)} ORDER BY id DESC LIMIT %s"
            return sql, [*(value for _ in parts for value in (*params, limit)), limit]
        if filter.state == "available":
            where = [*where, NOT_RUNNING]
        elif filter.state is not None and filter.state != "running":
            where = [*where, NOT_RUNNING, NOT_HOT]
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return f"{head}{clause} ORDER BY id DESC LIMIT %s", [*params, limit]

    def search_sql(self, filter: ListFilter) -> tuple[builtins.list[str], builtins.list[Any], bool]:
        """The conditions (and their parameters) that test `filter`'s error and args terms in
        SQL, and whether they test them exactly; when not, they only narrow the rows, and
        `_list_tested` tests each row in Python."""
        return [], [], False

    def _list_tested(
        self, filter: ListFilter, where: builtins.list[str], params: builtins.list[Any], limit: int
    ) -> builtins.list[JobRecord]:
        """`list` with the error and args terms tested in Python, reading the rows the SQL
        conditions pick newest first, a chunk at a time (a search's id window bounds them)."""
        found: builtins.list[JobRecord] = []
        below = filter.after
        while len(found) < limit:
            conditions = [*where, "id < %s"] if below is not None else where
            sql, values = self.newest(
                filter,
                conditions,
                [*params, *([below] if below is not None else [])],
                SEARCH_CHUNK,
            )
            with self.cursor() as cursor:
                cursor.execute(sql, values)
                rows = cursor.fetchall()
            for row in rows:
                record = self.record(row)
                if search_matches(filter, kind=record.kind, args=record.args, errors=record.errors):
                    found.append(record)
            if len(rows) < SEARCH_CHUNK:
                break
            below = rows[-1][0]
        return found[:limit]

    # -- bulk actions: one statement per batch --
    def ids_sql(self, ids: Collection[int]) -> tuple[str, builtins.list[Any]]:
        """``id IN`` `ids`, as one parameter."""
        return "id IN (SELECT value FROM json_each(%s))", [encode_json(sorted(ids))]

    def act(
        self, action: BulkAction, ids: Collection[int], *, state: State | None, now: datetime
    ) -> int:
        if not ids:
            return 0
        where, params = self.ids_sql(ids)
        if state is not None:
            where += f" AND state = {literals([state])}"
        if action == "delete":
            with self.writing(), self.cursor() as cursor:
                cursor.execute(f"DELETE FROM {self.job_table} WHERE {where} RETURNING id", params)
                gone = [row[0] for row in cursor.fetchall()]
            self.send_done_notify(gone)
            self.finished_at_commit(gone)
            return len(gone)
        if action == "cancel":
            with self.writing(), self.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {self.job_table} SET {self.end_attempt_sql(timeline.CANCELLED)},"
                    " state = 'cancelled', finished_at = %s,"
                    " lease_until = NULL,"
                    " unique_lock = CASE WHEN unique_scope = 'any' THEN unique_lock ELSE NULL END"
                    f" WHERE {where} AND state IN ({LIVE}) RETURNING id",
                    [self.encode_time(now), self.encode_time(now), *params],
                )
                ended = [row[0] for row in cursor.fetchall()]
            self.send_done_notify(ended)
            self.finished_at_commit(ended)
            return len(ended)
        return self._retry_batch(where, params, ids, state=state, now=now)

    def _retry_batch(
        self,
        where: str,
        params: builtins.list[Any],
        ids: Collection[int],
        *,
        state: State | None,
        now: datetime,
    ) -> int:
        table = self.job_table
        try:
            with transaction.atomic(using=self.alias), self.cursor() as cursor:
                # As `retry`, for the batch: a job whose key another job holds stays as it is.
                cursor.execute(
                    f"UPDATE {table} SET {self.retry_attempts_sql(running=False)},"
                    " state = 'available', scheduled_at = %s,"
                    " finished_at = NULL, lease_until = NULL, unique_lock = unique_key,"
                    " result = NULL,"
                    " max_attempts = CASE WHEN attempt >= max_attempts THEN attempt + 1"
                    f" ELSE max_attempts END WHERE {where}"
                    " AND state NOT IN ('running', 'available')"
                    " AND (unique_key IS NULL OR unique_lock IS NOT NULL"
                    f" OR NOT EXISTS (SELECT 1 FROM {table} AS other"
                    f" WHERE other.unique_lock = {table}.unique_key))"
                    " RETURNING queue",
                    [self.encode_time(now), *params],
                )
                queues = [row[0] for row in cursor.fetchall()]
                if queues:
                    self.send_notify(sorted(set(queues)))
        except IntegrityError:
            # Two jobs of the batch share a free unique key (or a concurrent insert took one):
            # one job at a time, as `retry` decides each.
            return super().act("retry", ids, state=state, now=now)
        self.wake_at_commit(set(queues))
        return len(queues)

    def counts(self) -> dict[str, dict[str, int]]:
        # The count table, never the job table: one row per (queue, state) on SQLite, and on
        # PostgreSQL that row plus the deltas of the statements since the last fold.
        counts: dict[str, dict[str, int]] = {}
        rows = 0
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT queue, state, SUM(n), COUNT(*) FROM {self.count_table} GROUP BY 1, 2"
            )
            for queue, state, n, deltas in cursor.fetchall():
                rows += deltas
                if n:
                    counts.setdefault(queue, {})[state] = int(n)
        # Inside the caller's transaction the fold's row locks would last until its commit.
        if rows > FOLD_AFTER and not self.connection.in_atomic_block:
            self.fold_counts()
        return counts

    def retry(self, job_id: int, *, now: datetime) -> JobRecord | None:
        table = self.job_table
        try:
            with transaction.atomic(using=self.alias):
                lock = " FOR UPDATE" if self.vendor == "postgresql" else ""
                before = self.fetch_one(
                    f"SELECT state, workflow_id FROM {table} WHERE id = %s{lock}", [job_id]
                )
                if before is not None and before[0] == "pending":
                    return self.get(job_id)  # it runs when its dependencies allow, not before
                # A job that does not hold its key takes it back, unless another job holds it
                # (two live jobs with one key): then it is left as it is, like memory.py.
                row = self.fetch_one(
                    f"UPDATE {table} SET {self.retry_attempts_sql(running=True)},"
                    " state = 'available', scheduled_at = %s,"
                    " finished_at = NULL, lease_until = NULL, unique_lock = unique_key,"
                    " result = NULL,"
                    " max_attempts = CASE WHEN attempt >= max_attempts THEN attempt + 1"
                    " ELSE max_attempts END"
                    " WHERE id = %s AND (unique_key IS NULL OR unique_lock IS NOT NULL"
                    f" OR NOT EXISTS (SELECT 1 FROM {table} AS other"
                    f" WHERE other.unique_lock = {table}.unique_key))"
                    f" RETURNING {self.select(steps=True)}",
                    [self.encode_time(now), self.encode_time(now), job_id],
                )
                if row is not None:
                    self.send_notify([row[2]])  # delivered if this transaction commits
                    if before is not None and before[1] is not None and before[0] in FINAL_STATES:
                        with self.cursor() as cursor:
                            workflows.reopen_steps(self, cursor, job_id)
        except IntegrityError:
            row = None  # a concurrent insert took the key between the check and the write
        if row is None:
            return self.get(job_id)
        self.wake_at_commit({row[2]})
        return self.record(row)

    def cancel(self, job_id: int, *, now: datetime) -> JobRecord | None:
        with self.write_lock():
            row = self.fetch_one(
                f"UPDATE {self.job_table} SET {self.end_attempt_sql(timeline.CANCELLED)},"
                " state = 'cancelled', finished_at = %s,"
                " lease_until = NULL, cancelled_by = NULL,"
                " unique_lock = CASE WHEN unique_scope = 'any' THEN unique_lock ELSE NULL END"
                f" WHERE id = %s AND state IN ({LIVE}) RETURNING {self.select(steps=True)}",
                [self.encode_time(now), self.encode_time(now), job_id],
            )
            if row is not None and row[18] is not None:  # a workflow step: settle its dependents
                with self.cursor() as cursor:
                    workflows.announce(self, workflows.settle_steps(self, cursor, [job_id], now))
        if row is None:
            return self.get(job_id)
        # After the write (delivered at commit inside a transaction): a waiter that hears
        # it finds the job cancelled.
        self.send_done_notify([job_id])
        self.finished_at_commit([job_id])
        return self.record(row)

    def delete(self, job_id: int) -> bool:
        with self.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {self.job_table} WHERE id = %s RETURNING id, workflow_id", [job_id]
            )
            rows = cursor.fetchall()
            deleted = bool(rows)
            workflows.forget_steps(self, cursor, rows)  # a step: its edges, its empty workflow
        if deleted:
            self.send_done_notify([job_id])
            self.finished_at_commit([job_id])
        return deleted

    # -- queue pause ------------------------------------------------------------------------
    def pause(self, queue: str, *, now: datetime) -> bool:
        table = self.queue_table
        row = self.fetch_one(
            f"INSERT INTO {table} (name, paused_at) VALUES (%s, %s)"
            f" ON CONFLICT (name) DO UPDATE SET paused_at = excluded.paused_at"
            f" WHERE {table}.paused_at IS NULL RETURNING name",
            [queue, self.encode_time(now)],
        )
        return row is not None

    def resume(self, queue: str) -> bool:
        with self.cursor() as cursor:
            cursor.execute(
                f"UPDATE {self.queue_table} SET paused_at = NULL"
                " WHERE name = %s AND paused_at IS NOT NULL",
                [queue],
            )
            return cursor.rowcount > 0

    def paused_queues(self) -> dict[str, datetime]:
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT name, paused_at FROM {self.queue_table} WHERE paused_at IS NOT NULL"
            )
            return {name: self.decode_time(at) for name, at in cursor.fetchall()}  # type: ignore[misc]

    # -- workflows (stores/database/workflows.py) --------------------------------------------
    def insert_workflow(
        self, workflow: NewWorkflow, steps: Sequence[NewStep], *, last: bool, now: datetime
    ) -> builtins.list[int]:
        return workflows.insert_workflow(self, workflow, steps, last=last, now=now)

    def workflow(self, workflow_id: str) -> WorkflowRow | None:
        return workflows.workflow(self, workflow_id)

    def cancel_workflow(self, workflow_id: str, *, now: datetime) -> bool | None:
        return workflows.cancel_workflow(self, workflow_id, now=now)

    def dependency_results(self, job_id: int) -> dict[str, Any]:
        return workflows.dependency_results(self, job_id)

    # -- wake-ups ---------------------------------------------------------------------------
    def wake(self, queues: Collection[str]) -> None:
        self.wakeups.wake(queues)
        self.send_notify(sorted(queues))

    def wake_at_commit(self, queues: Collection[str]) -> None:
        """Wake this process's waiters of `queues` once the write just made is committed: at
        once in autocommit, at commit inside the caller's atomic block, never on rollback
        (other processes hear of it by the NOTIFY sent in the same transaction)."""
        if not queues:
            return
        if self.connection.in_atomic_block:
            transaction.on_commit(lambda: self.wakeups.wake(queues), using=self.alias)
        else:
            self.wakeups.wake(queues)

    def send_notify(self, queues: Sequence[str]) -> None:
        """Tell other processes (no-op but on PostgreSQL with NOTIFY on); inside a transaction
        the server delivers it at commit."""

    def send_done_notify(self, job_ids: Sequence[int]) -> None:
        """Tell other processes' result waiters that `job_ids` ended (as `send_notify`). The
        batched `finish` sends its own from its statement."""

    def finished_at_commit(self, job_ids: Collection[int]) -> None:
        """Wake this process's result waiters of `job_ids` once the write just made is
        committed (as `wake_at_commit`)."""
        if not job_ids or not self.waits_for_finished():
            return
        if self.connection.in_atomic_block:
            transaction.on_commit(lambda: self.wake_finished(job_ids), using=self.alias)
        else:
            self.wake_finished(job_ids)

    # -- statistics (kept by a trigger, see migration 0007) ---------------------------
    def stats(
        self,
        queues: Collection[str] | None,
        *,
        since: datetime,
        until: datetime,
        resolution: Resolution = "minute",
    ) -> StatsByQueue:
        check_range(since, until, resolution)
        table = f'"{stat_table(self.prefix)}"'
        first, last = minute_number(floor_time(since, resolution)), minute_number(until)
        of_queues = ""
        queue_params: list[Any] = []
        if queues is not None:
            if not queues:
                return {}
            clause, queue_params = self.in_list("queue", queues)
            of_queues = f" AND {clause}"
        minutes: dict[str, dict[int, Sequence[int]]] = {}
        hours: dict[str, dict[int, Sequence[int]]] = {}
        rows = 0
        with self.cursor() as cursor:
            # Summed per minute or per hour by the database: a day is 24 rows per queue.
            start = "minute" if resolution == "minute" else "minute - minute %% 60"
            cursor.execute(
                f"SELECT queue, {start} AS start, COUNT(*), {_SUMS} FROM {table}"
                f" WHERE minute >= %s AND minute <= %s{of_queues} GROUP BY queue, start",
                [first, last, *queue_params],
            )
            for queue, minute, deltas, *values in cursor.fetchall():
                rows += deltas
                minutes.setdefault(queue, {})[int(minute)] = values
            if resolution == "hour":
                cursor.execute(
                    f"SELECT queue, hour, {', '.join(STAT_COLUMNS)}"
                    f' FROM "{stat_hour_table(self.prefix)}"'
                    f" WHERE hour >= %s AND hour <= %s{of_queues}",
                    [first // 60, last // 60, *queue_params],
                )
                for queue, hour, *values in cursor.fetchall():
                    hours.setdefault(queue, {})[int(hour)] = values
        if rows > STAT_FOLD_AFTER and not self.connection.in_atomic_block:
            self.fold_stats()
        if resolution == "hour":
            return hourly_points(hours, minutes)
        return roll_up_rows(minutes, resolution)

    def _rolled_through(self, cursor: CursorWrapper) -> int | None:
        cursor.execute(f'SELECT MAX(hour) FROM "{stat_hour_table(self.prefix)}"')
        (through,) = cursor.fetchone()
        return None if through is None else int(through)

    def roll_up_stats(self, *, now: datetime, keep: timedelta) -> int:
        table, hour_table = f'"{stat_table(self.prefix)}"', f'"{stat_hour_table(self.prefix)}"'
        columns = ", ".join(STAT_COLUMNS)
        with self.cursor() as cursor:
            through, oldest = self._rolled_through(cursor), None
            if through is None:
                cursor.execute(f"SELECT MIN(minute) FROM {table}")
                (found,) = cursor.fetchone()
                oldest = None if found is None else int(found)
            hours = roll_range(through, oldest, now)
            if not hours:
                return 0
            # One statement: the hours' sums over their rows, where they count more moves (a
            # re-roll of an hour whose minutes are gone inserts nothing, so overwrites nothing).
            counted = " + ".join(f"{{0}}.{c}" for c in STAT_COLUMNS[:4])
            cursor.execute(
                f"INSERT INTO {hour_table} (queue, hour, {columns})"
                f" SELECT queue, minute / 60, {_SUMS} FROM {table}"
                " WHERE minute >= %s AND minute < %s GROUP BY queue, minute / 60"
                f" ON CONFLICT (queue, hour) DO UPDATE SET"
                f" {', '.join(f'{c} = excluded.{c}' for c in STAT_COLUMNS)}"
                f" WHERE {counted.format('excluded')} > {counted.format(hour_table)}",
                [hours.start * 60, hours.stop * 60],
            )
            return max(cursor.rowcount, 0)

    def prune_stats(self, *, minutes_before: datetime, hours_before: datetime) -> None:
        with self.cursor() as cursor:
            keep_from = minutes_to_prune(minutes_before, self._rolled_through(cursor))
            cursor.execute(
                f'DELETE FROM "{stat_table(self.prefix)}" WHERE minute < %s', [keep_from]
            )
            cursor.execute(
                f'DELETE FROM "{stat_hour_table(self.prefix)}" WHERE hour < %s',
                [hour_number(hours_before)],
            )
        if not self.connection.in_atomic_block:
            self.fold_stats()

    def fold_stats(self) -> None:  # noqa: B027 - only PostgreSQL keeps deltas
        """Fold the statistics' delta rows (PostgreSQL): nothing to do on SQLite."""


def _distinct_chunks(results: Sequence[Finish], indexes: Iterable[int]) -> Iterator[list[int]]:
    """Split `indexes` (of `results`) into runs of distinct job ids, in order: one UPDATE
    cannot apply two writes to one row, and the second must see the first (it then fails its
    fence)."""
    chunk: list[int] = []
    ids: set[int] = set()
    for index in indexes:
        job_id = results[index].run.id
        if job_id in ids:
            yield chunk
            chunk, ids = [], set()
        chunk.append(index)
        ids.add(job_id)
    if chunk:
        yield chunk


def insert_values(
    jobs: Sequence[NewJob],
    *,
    encode_args: Callable[[Any], Any],
    encode_time: Callable[[datetime], Any],
) -> list[list[Any]]:
    """Each job's values for an insert, in the order every vendor's insert statement reads
    them: kind, queue, state, args, meta, priority, max_attempts, created_at, scheduled_at,
    unique_key, unique_scope, version. A batch's jobs mostly share their two times, so each distinct
    time is encoded once."""
    times: dict[datetime, Any] = {}

    def time(value: datetime) -> Any:
        encoded = times.get(value)
        if encoded is None:
            encoded = times[value] = encode_time(value)
        return encoded

    return [
        [
            job.kind,
            job.queue,
            job.state,
            encode_args(job.args),
            encode_args(job.meta),
            job.priority,
            job.max_attempts,
            time(job.created_at),
            time(job.scheduled_at),
            job.unique_key,
            job.unique_scope,
            job.version,
        ]
        for job in jobs
    ]


def error_json(error: Any) -> str | None:
    return None if error is None else encode_json(error.as_json())


def aware_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)
