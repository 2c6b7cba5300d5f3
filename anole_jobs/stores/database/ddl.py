"""The database store's schema names: tables, indexes, constraints, triggers and functions.

This module owns every name the schema uses, so the models, the migrations, the store's SQL and
`sql()` agree. The SQL itself is not here: each migration's is frozen in
``anole_jobs/migrations/sql/`` (see `frozen`), which also builds `sql()` (re-exported as
``anole_jobs.sql``), the DDL for ``MIGRATE=False`` users.

It imports no model and needs no configured database.

The job counts (migration 0003): ``counts()`` must not read the whole job
table, so the database keeps a count table, ``<prefix>count``, with triggers on the job table.
Triggers, not the store's statements, because they hold for every statement that changes a
job's queue or state or removes it (insert, unique conflicts that insert nothing, claim,
finish, give-back, stage, rescue, prune, admin retry/cancel/delete, an ORM update or delete a
user makes, TRUNCATE) without editing, or ever forgetting, one of them; and they commit or roll
back with the statement that fired them.

- PostgreSQL: statement-level AFTER triggers with transition tables (one trigger call per
  statement, whatever the batch) INSERT one delta row per (queue, state) the statement
  changed. Insert-only, never an UPDATE of a shared row: a counter row updated in place would
  serialize every enqueue and claim behind the previous one's commit (and a user's long
  transaction that enqueued would hold it, blocking every worker). A count is the sum of a
  pair's rows; `SQLStore.counts` folds the deltas into one row per pair (a DELETE … RETURNING
  of the rows it could lock, SKIP LOCKED, and an INSERT of their sums, in one statement) when
  there are many, and the leader folds them at each prune. The table has a primary key so
  that logical replication can publish its deletes.
- SQLite: one writer at a time, so a counter row updated in place costs no contention there
  (every write transaction already holds the database's only write lock): row-level triggers
  upsert one row per (queue, state), and there is nothing to fold.

The count table is not a Django model: Django's ``flush`` (tests' TransactionTestCase)
empties model tables one by one in no set order, and emptying the counts before the jobs would
leave negative counts behind; the triggers keep it right through any flush instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from django.db.backends.utils import names_digest

from anole_jobs.stores.stats import STAT_COLUMNS

__all__ = ["STAT_COLUMNS"]  # re-exported: the stores read the stat table's columns from here

DEFAULT_PREFIX = "anole_jobs_"
VENDORS = ("postgresql", "sqlite")
#: Django refuses index names longer than this (models.E034), whatever the database.
INDEX_NAME_MAX = 30
#: PostgreSQL truncates identifiers longer than this.
PG_NAME_MAX = 63


def configured() -> tuple[str, bool]:
    """``(TABLE_PREFIX, MIGRATE)`` from ``settings.ANOLE_JOBS``, read leniently.

    Read when the models and the migration are imported, so it must never raise: a malformed
    value falls back to the default here and is reported by the system checks (conf.py).
    """
    from django.conf import settings

    raw = getattr(settings, "ANOLE_JOBS", None)
    if not isinstance(raw, Mapping):
        return DEFAULT_PREFIX, True
    prefix = raw.get("TABLE_PREFIX", DEFAULT_PREFIX)
    migrate = raw.get("MIGRATE", True)
    return (
        prefix if isinstance(prefix, str) else DEFAULT_PREFIX,
        migrate if isinstance(migrate, bool) else True,
    )


@dataclass(frozen=True)
class Tables:
    """The table names for one prefix."""

    job: str
    leader: str
    cron: str
    queue: str  # one row per queue that was ever paused (migration 0002)
    count: str  # job counts per queue and state, kept by triggers (migration 0003)
    workflow: str  # one row per workflow (migration 0005)
    dependency: str  # one row per (step, dependency) edge of a workflow (migration 0005)
    limit: str = ""  # one row per limited queue: its runtime limits, its recent claims (0006)
    worker: str = ""  # one row per running worker process (migration 0008)
    audit: str = ""  # one row per operator action (migration 0017)


def tables(prefix: str) -> Tables:
    return Tables(
        job=prefix + "job",
        leader=prefix + "leader",
        cron=prefix + "cron",
        queue=prefix + "queue",
        count=prefix + "count",
        workflow=prefix + "workflow",
        dependency=prefix + "dependency",
        limit=prefix + "limit",
        worker=prefix + "worker",
        audit=prefix + "audit",
    )


def channel(prefix: str) -> str:
    """The PostgreSQL NOTIFY channel of the stores using `prefix` (payload: a queue name)."""
    return prefix + "wake"


def done_channel(prefix: str) -> str:
    """The PostgreSQL NOTIFY channel of finished jobs (payload: their ids, comma-separated, or
    "" for "look again at every job you wait for")."""
    return prefix + "done"


def index_name(prefix: str, suffix: str) -> str:
    """``prefix + suffix`` when Django accepts it as an index name, else a short stand-in.

    Index names are global to a PostgreSQL schema, so they carry the prefix: two prefixes in
    one schema never collide. Django caps index names at 30 characters and forbids a leading
    digit or underscore; a prefix that breaks either rule is replaced by a digest of it.
    """
    name = prefix + suffix
    if len(name) <= INDEX_NAME_MAX and name[:1].isalpha():
        return name
    digest = hashlib.sha256(prefix.encode()).hexdigest()[:8]
    return f"aj{digest}_{suffix}"


def schema_name(prefix: str, suffix: str) -> str:
    """``prefix + suffix`` for a schema-wide name with no 30-character cap (a constraint, a
    function, a SQLite trigger), or a digest of the prefix past PostgreSQL's 63."""
    name = prefix + suffix
    if len(name) <= PG_NAME_MAX:
        return name
    return f"aj{hashlib.sha256(prefix.encode()).hexdigest()[:8]}_{suffix}"


def unique_lock_name(prefix: str) -> str:
    """The unique constraint on ``job.unique_lock``."""
    return schema_name(prefix, "job_unique_lock")


def pg_like_index_name(table: str, column: str) -> str:
    """The name Django's PostgreSQL schema editor gives the ``text_pattern_ops`` index it adds
    to a text primary key (``BaseDatabaseSchemaEditor._create_index_name`` with ``_like``)."""
    hash_suffix = names_digest(table, column, length=8) + "_like"
    name = f"{table}_{column}_{hash_suffix}"
    if len(name) <= PG_NAME_MAX:
        return name
    other = (PG_NAME_MAX - len(hash_suffix)) // 2 - 1
    name = f"{table[:other]}_{column[:other]}_{hash_suffix}"
    if name[0] == "_" or name[0].isdigit():
        name = "D" + name[:-1]
    return name


@dataclass(frozen=True)
class IndexSpec:
    """One index of the job table: the models build a Django `Index` from it, `sql()` DDL."""

    suffix: str
    columns: tuple[str, ...]  # "-col" sorts descending
    where: str | None  # the partial-index predicate, as Django renders the model's condition


#: The job table's indexes. Every hot query names its state as a literal so the planner can
#: use a partial index (SQLite only matches literal terms), and finished jobs never enter the
#: claim, stage or rescue indexes.
JOB_INDEXES: tuple[IndexSpec, ...] = (
    # claim: available jobs of one queue by priority DESC, scheduled_at, id
    IndexSpec("job_claim", ("queue", "-priority", "scheduled_at", "id"), "\"state\" = 'available'"),
    # stage: scheduled/retrying jobs that are due
    IndexSpec("job_stage", ("scheduled_at",), "\"state\" IN ('scheduled', 'retrying')"),
    # rescue: running jobs whose lease lapsed
    IndexSpec("job_rescue", ("lease_until",), "\"state\" = 'running'"),
    # prune: finished jobs by state and age
    IndexSpec("job_prune", ("state", "finished_at"), '"finished_at" IS NOT NULL'),
    # admin: list(state=...), list(queue=...), list(kind=...), newest first; narrowed by
    # migration 0011 (`ADMIN_INDEXES`)
    IndexSpec("job_state", ("state", "id"), None),
    IndexSpec("job_queue", ("queue", "state", "id"), None),
    IndexSpec("job_kind", ("kind", "id"), None),
)

#: The states the admin indexes by queue and kind leave out (migration 0011): every enqueued
#: job starts in one and every claim moves it to the other, so each entry there cost an
#: enqueue or a claim one more index write (with the unique key's, a third of the WAL an
#: insert wrote). The claim index holds the available jobs and the rescue index the running
#: ones; the (state, id) index leaves out only the running jobs, so a list of the available
#: ones, newest first, still reads no more than a page of them. `SQLStore.newest` says how a
#: list reads each state.
HOT_STATES = ("available", "running")
#: The predicates, as Django renders the models' conditions (SQLite uses a partial index only
#: for a query that repeats its predicate term for term, so the store's queries write these).
NOT_HOT = "NOT (\"state\" IN ('available', 'running'))"
NOT_RUNNING = "NOT (\"state\" = 'running')"

#: The admin indexes as migration 0011 leaves them.
ADMIN_INDEXES: tuple[IndexSpec, ...] = (
    IndexSpec("job_state", ("state", "id"), NOT_RUNNING),
    IndexSpec("job_queue", ("queue", "state", "id"), NOT_HOT),
    IndexSpec("job_kind", ("kind", "id"), NOT_HOT),
)
#: The job table's indexes as the models declare them (after migration 0011).
MODEL_JOB_INDEXES: tuple[IndexSpec, ...] = tuple(
    next((narrow for narrow in ADMIN_INDEXES if narrow.suffix == spec.suffix), spec)
    for spec in JOB_INDEXES
)

#: The indexes migration 0005 adds (workflows): a workflow's steps, and each step's
#: dependents and dependencies.
WORKFLOW_INDEXES: tuple[IndexSpec, ...] = (
    IndexSpec("job_workflow", ("workflow_id", "id"), '"workflow_id" IS NOT NULL'),
)
#: The indexes migration 0015 adds (fair flow and sequences): only jobs that have a turn or a
#: sequence have an entry.
_LIVE = "('pending', 'scheduled', 'available', 'running', 'retrying')"
FLOW_INDEXES: tuple[IndexSpec, ...] = (
    IndexSpec(
        "job_fair",
        ("queue", "-priority", "fair_order", "id"),
        '("fair_order" IS NOT NULL AND "state" = \'available\')',
    ),
    IndexSpec(
        "job_fair_key",
        ("queue", "fair_key", "fair_order"),
        f'("fair_order" IS NOT NULL AND "state" IN {_LIVE})',
    ),
    IndexSpec(
        "job_sequence",
        ("sequence_key", "id"),
        f'("sequence_key" IS NOT NULL AND "state" IN {_LIVE})',
    ),
)
DEPENDENCY_INDEXES: tuple[IndexSpec, ...] = (
    IndexSpec("dep_dependency", ("dependency_id",), None),
    IndexSpec("dep_job", ("job_id",), None),
)


def count_function_name(prefix: str) -> str:
    """The PostgreSQL function the count triggers call (functions are schema-wide)."""
    return schema_name(prefix, "count_jobs")


def stat_table(prefix: str) -> str:
    """The table of per-queue, per-minute run statistics (migration 0007)."""
    return prefix + "stat"


def stat_hour_table(prefix: str) -> str:
    """The table of per-queue, per-hour run statistics the leader rolls up from the minutes
    (migration 0018)."""
    return prefix + "stat_hour"


def stat_function_name(prefix: str) -> str:
    """The PostgreSQL function the statistics trigger calls (migration 0007)."""
    return schema_name(prefix, "stat_runs")


#: The transaction-local setting a run function (migration 0009) sets while its statement runs,
#: so the statistics trigger leaves that statement to it.
STATS_WRITTEN = "anole_jobs.stats_written"


def claim_function_name(prefix: str) -> str:
    """The PostgreSQL function that claims jobs (migration 0009)."""
    return schema_name(prefix, "claim")


def finish_function_name(prefix: str) -> str:
    """The PostgreSQL function that finishes runs (migration 0009)."""
    return schema_name(prefix, "finish")


#: What a claim returns, and its types: only what the record does not already know (its state
#: is running, `attempted_at` is the claim's `now`), times as integer microseconds since the
#: epoch (Django's timestamptz loader and `decode_time` in Python were a third of a claimed
#: row's cost).
CLAIMED_RESULT = (
    ("id", "bigint", "j.id"),
    ("kind", "text", "j.kind"),
    ("queue", "text", "j.queue"),
    ("args", "jsonb", "j.args"),
    ("meta", "jsonb", "j.meta"),
    ("priority", "smallint", "j.priority"),
    ("attempt", "integer", "j.attempt"),
    ("max_attempts", "integer", "j.max_attempts"),
    ("errors", "jsonb", "j.errors"),
    ("created_us", "bigint", "(extract(epoch FROM j.created_at) * 1000000)::bigint"),
    ("scheduled_us", "bigint", "(extract(epoch FROM j.scheduled_at) * 1000000)::bigint"),
    ("finished_us", "bigint", "(extract(epoch FROM j.finished_at) * 1000000)::bigint"),
    ("unique_key", "text", "j.unique_key"),
    ("claim_token", "bigint", "j.claim_token"),
    ("workflow_id", "text", "j.workflow_id"),
    ("step_name", "text", "j.step_name"),
)
CLAIMED_COLUMNS = ", ".join(expression for _, _, expression in CLAIMED_RESULT)


def claim_limited_function_name(prefix: str) -> str:
    """The PostgreSQL function that claims within a queue's limits (migration 0010)."""
    return schema_name(prefix, "claim_limited")
