"""The database store's schema: table and index names, and the DDL to apply by hand.

This module owns every name the schema uses, so the models, the migrations, the store's SQL and
`sql()` agree. `sql(vendor, prefix)` (re-exported as ``anole_jobs.sql``) returns the DDL for
``MIGRATE=False`` users; a test checks that it builds exactly what the migrations build.

It imports no model and needs no configured database: `sql()` works for any vendor and prefix.

The job counts (migration 0003, `count_statements`): ``counts()`` must not read the whole job
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from django.db.backends.utils import names_digest

from anole_jobs.stores.stats import RUNTIME_BUCKETS_MS, STAT_BUCKET_COLUMNS, STAT_COLUMNS

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
DEPENDENCY_INDEXES: tuple[IndexSpec, ...] = (
    IndexSpec("dep_dependency", ("dependency_id",), None),
    IndexSpec("dep_job", ("job_id",), None),
)

_PG_TABLES = """\
CREATE TABLE "{job}" (
    "id" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY,
    "kind" text NOT NULL,
    "queue" text NOT NULL,
    "state" varchar(16) NOT NULL,
    "args" jsonb NOT NULL,
    "meta" jsonb NOT NULL,
    "errors" jsonb NOT NULL,
    "priority" smallint NOT NULL,
    "attempt" integer NOT NULL,
    "max_attempts" integer NOT NULL,
    "claim_token" bigint NOT NULL,
    "created_at" timestamp with time zone NOT NULL,
    "scheduled_at" timestamp with time zone NOT NULL,
    "attempted_at" timestamp with time zone NULL,
    "finished_at" timestamp with time zone NULL,
    "lease_until" timestamp with time zone NULL,
    "claimed_by" text NULL,
    "unique_key" text NULL,
    "unique_scope" varchar(8) NOT NULL,
    "unique_lock" text NULL,
    CONSTRAINT "{unique_lock}" UNIQUE ("unique_lock")
);
CREATE TABLE "{leader}" (
    "name" text NOT NULL PRIMARY KEY,
    "holder" text NOT NULL,
    "expires_at" timestamp with time zone NOT NULL
);
CREATE TABLE "{cron}" (
    "name" text NOT NULL PRIMARY KEY,
    "last_tick_at" timestamp with time zone NULL,
    "last_job_id" bigint NULL
);
CREATE INDEX "{leader_like}" ON "{leader}" ("name" text_pattern_ops);
CREATE INDEX "{cron_like}" ON "{cron}" ("name" text_pattern_ops);
CREATE TABLE "{queue}" (
    "name" text NOT NULL PRIMARY KEY,
    "paused_at" timestamp with time zone NULL
);
CREATE INDEX "{queue_like}" ON "{queue}" ("name" text_pattern_ops);
"""

_SQLITE_TABLES = """\
CREATE TABLE "{job}" (
    "id" integer NOT NULL PRIMARY KEY AUTOINCREMENT,
    "kind" text NOT NULL,
    "queue" text NOT NULL,
    "state" varchar(16) NOT NULL,
    "args" text NOT NULL CHECK ((JSON_VALID("args") OR "args" IS NULL)),
    "meta" text NOT NULL CHECK ((JSON_VALID("meta") OR "meta" IS NULL)),
    "errors" text NOT NULL CHECK ((JSON_VALID("errors") OR "errors" IS NULL)),
    "priority" smallint NOT NULL,
    "attempt" integer NOT NULL,
    "max_attempts" integer NOT NULL,
    "claim_token" bigint NOT NULL,
    "created_at" datetime NOT NULL,
    "scheduled_at" datetime NOT NULL,
    "attempted_at" datetime NULL,
    "finished_at" datetime NULL,
    "lease_until" datetime NULL,
    "claimed_by" text NULL,
    "unique_key" text NULL,
    "unique_scope" varchar(8) NOT NULL,
    "unique_lock" text NULL,
    CONSTRAINT "{unique_lock}" UNIQUE ("unique_lock")
);
CREATE TABLE "{leader}" (
    "name" text NOT NULL PRIMARY KEY,
    "holder" text NOT NULL,
    "expires_at" datetime NOT NULL
);
CREATE TABLE "{cron}" (
    "name" text NOT NULL PRIMARY KEY,
    "last_tick_at" datetime NULL,
    "last_job_id" bigint NULL
);
CREATE TABLE "{queue}" (
    "name" text NOT NULL PRIMARY KEY,
    "paused_at" datetime NULL
);
"""


def _index_sql(prefix: str, table: str, spec: IndexSpec) -> str:
    columns = ", ".join(
        f'"{column[1:]}" DESC' if column.startswith("-") else f'"{column}"'
        for column in spec.columns
    )
    where = f" WHERE {spec.where}" if spec.where else ""
    return f'CREATE INDEX "{index_name(prefix, spec.suffix)}" ON "{table}" ({columns}){where}'


#: The job table's statements that fire a count trigger, by trigger suffix.
COUNT_EVENTS = {"count_insert": "INSERT", "count_update": "UPDATE", "count_delete": "DELETE"}

_PG_COUNT_TABLE = """\
CREATE TABLE "{count}" (
    "id" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY,
    "queue" text NOT NULL,
    "state" varchar(16) NOT NULL,
    "n" bigint NOT NULL
)"""

# One function for the four triggers; each statement of it is planned at its first use, so a
# branch may name a transition table its trigger does not have. An UPDATE that changes no
# queue or state (a heartbeat, a meta write) nets to zero and inserts nothing.
_PG_COUNT_FUNCTION = """\
CREATE FUNCTION "{function}"() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO "{count}" (queue, state, n)
        SELECT queue, state, COUNT(*) FROM new_jobs GROUP BY queue, state;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO "{count}" (queue, state, n)
        SELECT queue, state, SUM(n) FROM (
            SELECT queue, state, -1 AS n FROM old_jobs
            UNION ALL SELECT queue, state, 1 AS n FROM new_jobs
        ) AS moved GROUP BY queue, state HAVING SUM(n) <> 0;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO "{count}" (queue, state, n)
        SELECT queue, state, -COUNT(*) FROM old_jobs GROUP BY queue, state;
    ELSE
        -- TRUNCATE: not MVCC, so a fold running meanwhile cannot leave its sums behind.
        TRUNCATE "{count}";
    END IF;
    RETURN NULL;
END
$body$"""

_PG_TRANSITIONS = {
    "INSERT": "REFERENCING NEW TABLE AS new_jobs ",
    "UPDATE": "REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs ",
    "DELETE": "REFERENCING OLD TABLE AS old_jobs ",
    "TRUNCATE": "",
}

_SQLITE_COUNT_TABLE = """\
CREATE TABLE "{count}" (
    "queue" text NOT NULL,
    "state" varchar(16) NOT NULL,
    "n" integer NOT NULL,
    PRIMARY KEY ("queue", "state")
) WITHOUT ROWID"""

_SQLITE_BUMP = """\
    INSERT INTO "{count}" (queue, state, n) VALUES ({row}.queue, {row}.state, {first})
        ON CONFLICT (queue, state) DO UPDATE SET n = n {sign} 1;
"""


def count_function_name(prefix: str) -> str:
    """The PostgreSQL function the count triggers call (functions are schema-wide)."""
    return schema_name(prefix, "count_jobs")


def _sqlite_trigger(prefix: str, names: Tables, suffix: str) -> str:
    event = COUNT_EVENTS[suffix]
    if event == "UPDATE":
        head = (
            f'AFTER UPDATE OF queue, state ON "{names.job}"'
            " WHEN OLD.queue IS NOT NEW.queue OR OLD.state IS NOT NEW.state"
        )
        bumps = [("OLD", "-"), ("NEW", "+")]
    else:
        head = f'AFTER {event} ON "{names.job}"'
        bumps = [("NEW", "+")] if event == "INSERT" else [("OLD", "-")]
    body = "".join(
        _SQLITE_BUMP.format(count=names.count, row=row, sign=sign, first=f"{sign}1".lstrip("+"))
        for row, sign in bumps
    )
    return f'CREATE TRIGGER "{schema_name(prefix, suffix)}" {head} BEGIN\n{body}END'


def count_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """The count table, its triggers, and the statement that counts the jobs already in the
    job table (run it in the transaction that creates the triggers: on PostgreSQL creating a
    trigger locks out writers to the job table until that transaction ends, so no job is
    counted twice or missed). Migration 0003 runs these; `sql()` ends with them."""
    _check(vendor, prefix)
    names = tables(prefix)
    seed = (
        f'INSERT INTO "{names.count}" (queue, state, n)'
        f' SELECT queue, state, COUNT(*) FROM "{names.job}" GROUP BY queue, state'
    )
    if vendor == "sqlite":
        triggers = [_sqlite_trigger(prefix, names, suffix) for suffix in COUNT_EVENTS]
        return [_SQLITE_COUNT_TABLE.format(count=names.count), *triggers, seed]
    function = count_function_name(prefix)
    triggers = [
        f'CREATE TRIGGER "{schema_name(prefix, suffix)}" AFTER {event} ON "{names.job}"'
        f' {_PG_TRANSITIONS[event]}FOR EACH STATEMENT EXECUTE FUNCTION "{function}"()'
        for suffix, event in [*COUNT_EVENTS.items(), ("count_truncate", "TRUNCATE")]
    ]
    return [
        _PG_COUNT_TABLE.format(count=names.count),
        _PG_COUNT_FUNCTION.format(function=function, count=names.count),
        *triggers,
        seed,
    ]


def drop_count_statements(
    vendor: str, prefix: str = DEFAULT_PREFIX, *, keep_table: bool = False
) -> list[str]:
    """Undo `count_statements` (migration 0003 backwards). With `keep_table`, drop only the
    triggers: the bench measures the hot paths without them that way."""
    _check(vendor, prefix)
    names = tables(prefix)
    suffixes = list(COUNT_EVENTS)
    if vendor == "sqlite":
        drops = [f'DROP TRIGGER IF EXISTS "{schema_name(prefix, s)}"' for s in suffixes]
    else:
        drops = [
            f'DROP TRIGGER IF EXISTS "{schema_name(prefix, s)}" ON "{names.job}"'
            for s in [*suffixes, "count_truncate"]
        ]
        if not keep_table:
            drops.append(f'DROP FUNCTION IF EXISTS "{count_function_name(prefix)}"()')
    if not keep_table:
        drops.append(f'DROP TABLE IF EXISTS "{names.count}"')
    return drops


def _check(vendor: str, prefix: object) -> None:
    if vendor not in VENDORS:
        raise ValueError(f"vendor must be one of {', '.join(map(repr, VENDORS))}, got {vendor!r}")
    if not isinstance(prefix, str):
        raise ValueError(f"prefix must be a string, got {prefix!r}")


def _table_statements(vendor: str, prefix: str) -> list[str]:
    """Migrations 0001 and 0002: the tables and the job table's indexes."""
    names = tables(prefix)
    template = _PG_TABLES if vendor == "postgresql" else _SQLITE_TABLES
    text = template.format(
        job=names.job,
        leader=names.leader,
        cron=names.cron,
        queue=names.queue,
        unique_lock=unique_lock_name(prefix),
        leader_like=pg_like_index_name(names.leader, "name"),
        cron_like=pg_like_index_name(names.cron, "name"),
        queue_like=pg_like_index_name(names.queue, "name"),
    )
    created = [statement for statement in text.split(";\n") if statement.strip()]
    return created + [_index_sql(prefix, names.job, spec) for spec in JOB_INDEXES]


#: The job table's ``result`` column (migration 0004), as Django's schema editor adds it.
_RESULT_COLUMN = {
    "postgresql": '"result" jsonb NULL',
    "sqlite": '"result" text NULL CHECK ((JSON_VALID("result") OR "result" IS NULL))',
}


def result_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Migration 0004: the column that keeps a completed job's result (JSON, NULL for none).
    Adding a nullable column rewrites no row on either database."""
    _check(vendor, prefix)
    return [f'ALTER TABLE "{tables(prefix).job}" ADD COLUMN {_RESULT_COLUMN[vendor]}']


#: The job table's workflow columns (migration 0005), as Django's schema editor adds them.
_WORKFLOW_COLUMNS = (
    ("workflow_id", "text", "text"),
    ("step_name", "text", "text"),
    ("waiting_on", "integer", "integer"),
    ("ignore_failed", "boolean", "bool"),
    ("ready_delay", "bigint", "bigint"),
    ("cancelled_by", "bigint", "bigint"),
)


def workflow_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Migration 0005: a step's columns on the job table (nullable: no row is rewritten),
    the index of a workflow's steps, the workflow table and the dependency table."""
    _check(vendor, prefix)
    names = tables(prefix)
    pg = vendor == "postgresql"
    columns = [
        f'ALTER TABLE "{names.job}" ADD COLUMN "{name}" {pg_type if pg else sqlite_type} NULL'
        for name, pg_type, sqlite_type in _WORKFLOW_COLUMNS
    ]
    time_type = "timestamp with time zone" if pg else "datetime"
    bool_type = "boolean" if pg else "bool"
    auto_id = (
        '"id" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY'
        if pg
        else '"id" integer NOT NULL PRIMARY KEY AUTOINCREMENT'
    )
    created = [
        *columns,
        *(_index_sql(prefix, names.job, spec) for spec in WORKFLOW_INDEXES),
        f'CREATE TABLE "{names.workflow}" ("id" text NOT NULL PRIMARY KEY, "name" text NOT NULL,'
        f' "created_at" {time_type} NOT NULL, "cancelled" {bool_type} NOT NULL)',
        f'CREATE TABLE "{names.dependency}" ({auto_id}, "job_id" bigint NOT NULL,'
        ' "dependency_id" bigint NOT NULL)',
    ]
    if pg:
        like = pg_like_index_name(names.workflow, "id")
        created.append(f'CREATE INDEX "{like}" ON "{names.workflow}" ("id" text_pattern_ops)')
    created += [_index_sql(prefix, names.dependency, spec) for spec in DEPENDENCY_INDEXES]
    return created


#: The queue limits table (migration 0006), as Django's schema editor creates it.
_LIMIT_TABLE = {
    "postgresql": (
        'CREATE TABLE "{limit}" ("queue" text NOT NULL PRIMARY KEY,'
        ' "global_concurrency" integer NULL, "rate_count" integer NULL,'
        ' "rate_seconds" double precision NULL, "claims" text NOT NULL)'
    ),
    "sqlite": (
        'CREATE TABLE "{limit}" ("queue" text NOT NULL PRIMARY KEY,'
        ' "global_concurrency" integer NULL, "rate_count" integer NULL,'
        ' "rate_seconds" real NULL, "claims" text NOT NULL)'
    ),
}


def limit_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Migration 0006: one row per queue that has limits: those set at runtime (NULL: the
    settings apply) and the times of its recent claims per partition (JSON), which its
    limited claims lock, read and rewrite."""
    _check(vendor, prefix)
    name = tables(prefix).limit
    created = [_LIMIT_TABLE[vendor].format(limit=name)]
    if vendor == "postgresql":
        like = pg_like_index_name(name, "queue")
        created.append(f'CREATE INDEX "{like}" ON "{name}" ("queue" text_pattern_ops)')
    return created


# -- job statistics (migration 0007) -------------------------------------------------------
# Per-queue, per-minute counters of runs (anole_jobs.stores.stats says what counts where),
# kept by triggers for the reasons the counts are: every statement that claims, finishes or
# rescues a job keeps them, in its own transaction, and no store statement had to change.
# ``minute`` is minutes since 1970-01-01 UTC. PostgreSQL inserts one delta row per (queue,
# minute) and statement (an AFTER UPDATE statement trigger joining its transition tables), which
# the leader folds at each prune, as it folds the counts; SQLite upserts one row per (queue,
# minute). Minutes older than the store's keep are deleted at prune time.
# Since migration 0009 PostgreSQL's claims and finishes write their own rows instead (below).


def stat_table(prefix: str) -> str:
    """The table of per-queue, per-minute run statistics."""
    return prefix + "stat"


def stat_function_name(prefix: str) -> str:
    """The PostgreSQL function the statistics trigger calls."""
    return schema_name(prefix, "stat_runs")


def _bucket_case(ms: str) -> str:
    arms = " ".join(f"WHEN {ms} <= {bound} THEN {i}" for i, bound in enumerate(RUNTIME_BUCKETS_MS))
    return f"CASE WHEN {ms} IS NULL THEN NULL {arms} ELSE {len(RUNTIME_BUCKETS_MS)} END"


#: Which moves of a job (OLD to NEW) count, for both vendors: a claim, or the end of a run
#: (completed, dead, or waiting again after a failure: the same attempt and one more error, as
#: a failure or a lapsed lease leaves it). Snoozes and drains give their attempt back and
#: append no error, so they count nothing.
_STAT_WHEN = (
    "(n.state = 'running' AND o.state <> 'running')"
    " OR (o.state = 'running' AND (n.state IN ('completed', 'dead')"
    " OR (n.state IN ('retrying', 'available', 'scheduled') AND n.attempt = o.attempt"
    " AND {length}(n.errors) > {length}(o.errors))))"
)

_PG_STAT_TABLE = """CREATE TABLE "{stat}" (
    "id" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY,
    "queue" text NOT NULL,
    "minute" bigint NOT NULL,
{counters}
)"""

# OFFSET 0 keeps each subquery apart: flattened, the planner would compute the run time and
# its bucket once per histogram column (19 times per row), which made the trigger ten times
# slower than the count trigger.
_PG_STAT_FUNCTION = """{create} FUNCTION "{function}"() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN{skip}
    INSERT INTO "{stat}" (queue, minute, {columns})
    SELECT queue, minute, SUM(started), SUM(completed), SUM(retried), SUM(dead),
        COALESCE(SUM(ms), 0), COALESCE(MAX(ms), 0), {buckets}
    FROM (
        SELECT queue, minute, started, completed, retried, dead, ms, {bucket} AS b FROM (
            SELECT n.queue,
                floor(extract(epoch FROM CASE
                    WHEN n.state = 'running' THEN n.attempted_at
                    WHEN n.state IN ('completed', 'dead') THEN n.finished_at
                    ELSE (n.errors -> -1 ->> 'at')::timestamptz END) / 60)::bigint AS minute,
                (n.state = 'running')::int AS started,
                (n.state = 'completed')::int AS completed,
                (n.state NOT IN ('running', 'completed', 'dead'))::int AS retried,
                (n.state = 'dead')::int AS dead,
                CASE WHEN n.state = 'completed' THEN GREATEST(0, ceil(extract(epoch FROM
                    n.finished_at - n.attempted_at) * 1000))::bigint END AS ms
            FROM old_jobs AS o JOIN new_jobs AS n ON n.id = o.id
            WHERE {when}
            OFFSET 0
        ) AS moved
        OFFSET 0
    ) AS bucketed
    GROUP BY queue, minute;
    RETURN NULL;
END
$body$"""


def _sqlite_micros(column: str) -> str:
    """Microseconds since 1970 of a time as Django stores it in SQLite ('YYYY-MM-DD
    HH:MM:SS[.ffffff]', or ISO 8601 with an offset in an error entry): exact, unlike
    julianday()."""
    return (
        f"(CAST(strftime('%s', {column}) AS INTEGER) * 1000000 + CASE WHEN"
        f" substr({column}, 20, 1) = '.' THEN CAST(substr({column}, 21, 6) AS INTEGER)"
        " ELSE 0 END)"
    )


_SQLITE_STAT_TABLE = """CREATE TABLE "{stat}" (
    "queue" text NOT NULL,
    "minute" integer NOT NULL,
{counters},
    PRIMARY KEY ("queue", "minute")
) WITHOUT ROWID"""

_SQLITE_STAT_TRIGGER = """CREATE TRIGGER "{trigger}" AFTER UPDATE OF state ON "{job}" FOR EACH ROW
WHEN {when}
BEGIN
    INSERT INTO "{stat}" (queue, minute, {columns})
    SELECT queue, minute, started, completed, retried, dead, COALESCE(ms, 0), COALESCE(ms, 0),
        {buckets}
    FROM (SELECT *, {bucket} AS b FROM (SELECT NEW.queue AS queue,
        CAST(strftime('%s', CASE
            WHEN NEW.state = 'running' THEN NEW.attempted_at
            WHEN NEW.state IN ('completed', 'dead') THEN NEW.finished_at
            ELSE json_extract(NEW.errors, '$[#-1].at') END) AS INTEGER) / 60 AS minute,
        NEW.state = 'running' AS started,
        NEW.state = 'completed' AS completed,
        NEW.state NOT IN ('running', 'completed', 'dead') AS retried,
        NEW.state = 'dead' AS dead,
        CASE WHEN NEW.state = 'completed' THEN
            max(0, ({finished} - {attempted} + 999) / 1000) END AS ms
        LIMIT 1 OFFSET 0) AS moved LIMIT 1 OFFSET 0) AS bucketed
    WHERE true
    ON CONFLICT (queue, minute) DO UPDATE SET {updates};
END"""


def stat_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Migration 0007: the stat table, its index (PostgreSQL) and the trigger that keeps it.
    Jobs already finished are not counted: statistics start when the trigger exists."""
    _check(vendor, prefix)
    job, stat = tables(prefix).job, stat_table(prefix)
    columns = ", ".join(STAT_COLUMNS)
    if vendor == "sqlite":
        counters = ",\n".join(f'    "{c}" integer NOT NULL' for c in STAT_COLUMNS)
        updates = ", ".join(
            f"{c} = max({c}, excluded.{c})" if c == "max_ms" else f"{c} = {c} + excluded.{c}"
            for c in STAT_COLUMNS
        )
        buckets = ", ".join(f"coalesce(b = {i}, 0)" for i in range(len(STAT_BUCKET_COLUMNS)))
        when = _STAT_WHEN.replace("n.", "NEW.").replace("o.", "OLD.")
        trigger = _SQLITE_STAT_TRIGGER.format(
            trigger=schema_name(prefix, "stat_runs"),
            job=job,
            stat=stat,
            when=when.format(length="json_array_length"),
            columns=columns,
            buckets=buckets,
            bucket=_bucket_case("ms"),
            finished=_sqlite_micros("NEW.finished_at"),
            attempted=_sqlite_micros("NEW.attempted_at"),
            updates=updates,
        )
        return [_SQLITE_STAT_TABLE.format(stat=stat, counters=counters), trigger]
    counters = ",\n".join(f'    "{c}" bigint NOT NULL' for c in STAT_COLUMNS)
    function = stat_function_name(prefix)
    return [
        _PG_STAT_TABLE.format(stat=stat, counters=counters),
        f'CREATE INDEX "{index_name(prefix, "stat_minute")}" ON "{stat}" ("minute")',
        _pg_stat_function(prefix),
        f'CREATE TRIGGER "{schema_name(prefix, "stat_runs")}" AFTER UPDATE ON "{job}"'
        " REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs"
        f' FOR EACH STATEMENT EXECUTE FUNCTION "{function}"()',
    ]


def _pg_stat_function(prefix: str, *, skip_written: bool = False) -> str:
    """The statistics trigger's function: 0007's, or 0009's, which first returns when the
    statement that fired it wrote its own statistics (`run_function_statements`)."""
    skip = (
        f"\n    IF current_setting('{STATS_WRITTEN}', true) = 'on' THEN RETURN NULL; END IF;"
        if skip_written
        else ""
    )
    return _PG_STAT_FUNCTION.format(
        create="CREATE OR REPLACE" if skip_written else "CREATE",
        skip=skip,
        function=stat_function_name(prefix),
        stat=stat_table(prefix),
        columns=", ".join(STAT_COLUMNS),
        buckets=", ".join(
            f"COUNT(*) FILTER (WHERE b = {i})" for i in range(len(STAT_BUCKET_COLUMNS))
        ),
        bucket=_bucket_case("ms"),
        when=_STAT_WHEN.format(length="jsonb_array_length"),
    )


def drop_stat_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Undo `stat_statements` (migration 0007 backwards)."""
    _check(vendor, prefix)
    job, stat = tables(prefix).job, stat_table(prefix)
    trigger = schema_name(prefix, "stat_runs")
    if vendor == "sqlite":
        return [f'DROP TRIGGER IF EXISTS "{trigger}"', f'DROP TABLE IF EXISTS "{stat}"']
    return [
        f'DROP TRIGGER IF EXISTS "{trigger}" ON "{job}"',
        f'DROP FUNCTION IF EXISTS "{stat_function_name(prefix)}"()',
        f'DROP TABLE IF EXISTS "{stat}"',
    ]


# -- claims and finishes in server functions (migration 0009) -------------------------------
# The statistics trigger's statement cost PostgreSQL its executor set-up at every claim and
# finish, whatever the batch: a third or more of a worker's throughput on no-op jobs. So on
# PostgreSQL the claim and the finish are functions that each write their own statistics
# row(s) from the rows they moved, in the same statement (PL/pgSQL also saves the parsing of
# their statements; they are still planned at each call, see PLAN_EACH_CALL), then tell the
# trigger so through a transaction-local setting: the trigger returns at once for
# them and still counts every other statement (rescues, the limited claims of several
# statements, a user's own UPDATE). SQLite keeps its triggers, which run in process.

#: The transaction-local setting a run function sets while its statement runs, so the statistics
#: trigger leaves that statement to it.
STATS_WRITTEN = "anole_jobs.stats_written"


#: The run functions' statements are planned at each call, with the values passed and the
#: table's size then, as the plain statements were (PL/pgSQL still saves their parsing). A
#: generic plan, kept for the session, was made when the worker started on an empty job table
#: (a scan of the table, kept as it filled): measured, that halved a worker's throughput.
PLAN_EACH_CALL = "SET plan_cache_mode = force_custom_plan"


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

# The plain claim: an uncorrelated ARRAY(subquery) picks and locks the rows once, before the
# UPDATE (a subquery on the inner side of a nested loop could be rescanned, and each rescan
# would lock `p_limit` more rows), and the UPDATE finds them by primary key whatever its
# estimate of `p_limit`; the rows it locked are re-checked
# by the lock and held until commit, so the UPDATE needs no condition but the id. The queue's
# pause is read in the same statement, so a pause committed before the claim began always holds.
_PG_CLAIM_FUNCTION = """CREATE OR REPLACE FUNCTION "{function}"(p_queue text, p_kinds text[],
    p_limit integer, p_now timestamptz, p_lease_until timestamptz, p_worker text)
RETURNS TABLE ({result}) LANGUAGE plpgsql {generic} AS $body$
#variable_conflict use_column
DECLARE
    n_claimed bigint;
    v_setting text;  -- set_config's result (an assignment runs as a simple expression, no query)
BEGIN
    v_setting := set_config('{written}', 'on', true);
    RETURN QUERY WITH claimed AS (UPDATE "{job}" AS j SET state = 'running',
        attempt = j.attempt + 1, claim_token = j.claim_token + 1, attempted_at = p_now,
        lease_until = p_lease_until, claimed_by = p_worker
        WHERE j.id = ANY(ARRAY(SELECT id FROM "{job}"
            WHERE state = 'available' AND queue = p_queue
            AND (p_kinds IS NULL OR kind = ANY(p_kinds))
            AND NOT EXISTS (SELECT 1 FROM "{queue}" WHERE name = p_queue AND paused_at IS NOT NULL)
            ORDER BY priority DESC, scheduled_at, id LIMIT p_limit FOR UPDATE SKIP LOCKED))
        RETURNING {columns})
    SELECT * FROM claimed;
    GET DIAGNOSTICS n_claimed = ROW_COUNT;
    v_setting := set_config('{written}', '', true);{stats}
END
$body$"""

_PG_CLAIM_STATS = """
    IF n_claimed > 0 THEN
        INSERT INTO "{stat}" (queue, minute, {columns})
        VALUES (p_queue, div(extract(epoch FROM p_now), 60)::bigint, n_claimed, {zeros});
    END IF;"""

# The fenced finish of a batch (one JSON array of rows, see PostgresStore.finish_rows), the
# statistics of the runs it ended (grouped by queue, minute and outcome: completed in a run-time
# bucket, retried or dead; one row each), and the ids of the jobs it ended as ONE notification
# (delivered at commit) when `p_channel` is set; a payload over PostgreSQL's limit says "look
# again at every job you wait for" ("").
_PG_FINISH_FUNCTION = """CREATE OR REPLACE FUNCTION "{function}"(p_batch jsonb, p_channel text)
RETURNS TABLE (id bigint, state text) LANGUAGE plpgsql {generic} AS $body$
#variable_conflict use_column
DECLARE
    v_setting text;  -- set_config's result (an assignment runs as a simple expression, no query)
BEGIN
    v_setting := set_config('{written}', 'on', true);
    RETURN QUERY WITH f AS (SELECT (r->>0)::bigint AS id, (r->>1)::int AS attempt,
        (r->>2)::bigint AS token, r->>3 AS state, (r->>4)::timestamptz AS at,
        (r->>5)::timestamptz AS scheduled_at, NULLIF(r->6, 'null'::jsonb) AS error,
        (r->>7)::int AS give_back, (r->>8)::jsonb AS result, (r->>9)::timestamptz AS started_at
        FROM jsonb_array_elements(p_batch) AS e(r)),
    ended AS (UPDATE "{job}" AS j SET state = f.state, lease_until = NULL,
        attempt = j.attempt - f.give_back,
        errors = CASE WHEN f.error IS NULL THEN j.errors
            ELSE j.errors || jsonb_build_array(f.error) END,
        finished_at = CASE WHEN f.state IN ({final}) THEN f.at ELSE j.finished_at END,
        scheduled_at = COALESCE(f.scheduled_at, j.scheduled_at),
        unique_lock = CASE WHEN f.state IN ({final}) AND j.unique_scope <> 'any'
            THEN NULL ELSE j.unique_lock END,
        result = CASE WHEN f.state = 'completed' THEN f.result ELSE j.result END,
        attempted_at = COALESCE(f.started_at, j.attempted_at)
        FROM f WHERE j.id = f.id AND j.attempt = f.attempt AND j.claim_token = f.token
        AND j.state = 'running'
        RETURNING j.id, j.state, j.queue, j.attempted_at, j.finished_at,
            f.error IS NOT NULL AND f.give_back = 0 AS failed, f.error ->> 'at' AS failed_at){stats}
    SELECT ended.id, ended.state::text FROM ended WHERE (SELECT COUNT(*) FROM done) >= 0;
    v_setting := set_config('{written}', '', true);
END
$body$"""

# Runs that count (as the trigger's rule): completed, dead, or a failure that will run again
# (an error appended and the attempt kept: not a snooze or a drain, which give it back). The
# bucket is the number of bounds below the run time, as `stats.bucket_of` computes it.
_PG_FINISH_STATS = """,
    counted AS (SELECT queue, minute, outcome, COUNT(*) AS n, COALESCE(SUM(ms), 0) AS total_ms,
            COALESCE(MAX(ms), 0) AS max_ms FROM (
        SELECT queue, div(extract(epoch FROM CASE WHEN state IN ('completed', 'dead')
                THEN finished_at ELSE failed_at::timestamptz END), 60)::bigint AS minute,
            CASE state WHEN 'completed' THEN width_bucket(ms - 1, '{{{bounds}}}'::bigint[])
                WHEN 'dead' THEN -2 ELSE -1 END AS outcome, ms
        FROM (SELECT queue, state, finished_at, failed_at,
                CASE WHEN state = 'completed' THEN GREATEST(0, ceil(extract(epoch FROM
                    finished_at - attempted_at) * 1000))::bigint END AS ms
            FROM ended WHERE state IN ('completed', 'dead') OR failed) AS r
        ) AS o GROUP BY queue, minute, outcome),
    stats AS (INSERT INTO "{stat}" (queue, minute, {columns})
        SELECT queue, minute, 0, CASE WHEN outcome >= 0 THEN n ELSE 0 END,
            CASE WHEN outcome = -1 THEN n ELSE 0 END, CASE WHEN outcome = -2 THEN n ELSE 0 END,
            total_ms, max_ms, {buckets} FROM counted)"""

_PG_FINISH_NOTIFY = """,
    done AS (SELECT pg_notify(p_channel, CASE WHEN length(s) <= {payload_max} THEN s ELSE '' END)
        FROM (SELECT string_agg(id::text, ',') AS s FROM ended WHERE state IN ({final})) AS t
        WHERE s IS NOT NULL AND p_channel IS NOT NULL)"""

#: The longest NOTIFY payload sent (PostgreSQL refuses 8000 bytes or more).
NOTIFY_PAYLOAD_MAX = 7900


def run_function_statements(
    vendor: str, prefix: str = DEFAULT_PREFIX, *, stats: bool = True
) -> list[str]:
    """Migration 0009 (PostgreSQL; nothing on SQLite): the claim and finish functions, which
    write their statistics themselves, and the statistics trigger's function that leaves their
    statements to them. `stats=False` builds the functions without their statistics (the bench
    measures what they cost that way, with the trigger dropped)."""
    _check(vendor, prefix)
    if vendor == "sqlite":
        return []
    names = tables(prefix)
    stat = stat_table(prefix)
    columns = ", ".join(STAT_COLUMNS)
    claim_stats = _PG_CLAIM_STATS.format(
        stat=stat, columns=columns, zeros=", ".join(["0"] * (len(STAT_COLUMNS) - 1))
    )
    finish_stats = _PG_FINISH_STATS.format(
        stat=stat,
        columns=columns,
        bounds=",".join(map(str, RUNTIME_BUCKETS_MS)),
        buckets=", ".join(
            f"CASE WHEN outcome = {i} THEN n ELSE 0 END" for i in range(len(STAT_BUCKET_COLUMNS))
        ),
    )
    final = "'completed', 'cancelled', 'dead'"
    notify = _PG_FINISH_NOTIFY.format(payload_max=NOTIFY_PAYLOAD_MAX, final=final)
    return [
        _PG_CLAIM_FUNCTION.format(
            function=claim_function_name(prefix),
            generic=PLAN_EACH_CALL,
            result=", ".join(f"{name} {kind}" for name, kind, _ in CLAIMED_RESULT),
            written=STATS_WRITTEN,
            job=names.job,
            queue=names.queue,
            columns=CLAIMED_COLUMNS,
            stats=claim_stats if stats else "",
        ),
        _PG_FINISH_FUNCTION.format(
            function=finish_function_name(prefix),
            generic=PLAN_EACH_CALL,
            written=STATS_WRITTEN,
            job=names.job,
            final=final,
            stats=(finish_stats if stats else "") + notify,
        ),
        _pg_stat_function(prefix, skip_written=True),
    ]


def drop_run_function_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Undo `run_function_statements` (migration 0009 backwards): the trigger counts every
    statement again."""
    _check(vendor, prefix)
    if vendor == "sqlite":
        return []
    return [
        f'DROP FUNCTION IF EXISTS "{claim_function_name(prefix)}"'
        "(text, text[], integer, timestamptz, timestamptz, text)",
        f'DROP FUNCTION IF EXISTS "{finish_function_name(prefix)}"(jsonb, text)',
        _pg_stat_function(prefix).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1),
    ]


# -- a claim within a queue's limits in one statement (migration 0010) ----------------------
# A limited claim (docs/limits.md, stores/database/limits.py) locks its queue's row of the limit
# table, reads what runs and the recent claims, claims within the room left and writes the
# window back: from Python that is three round trips or more (the lock, the claim, the commit).
# This function does the same in one call, for a queue without a partition (a partition's key is
# computed from the args in Python, whose JSON the window's keys are; those claims keep the
# Python path). It follows `anole_jobs.limits.Planner` step for step: each statement after the
# lock sees every claim committed before it was granted (PL/pgSQL takes a new snapshot per
# statement of a volatile function under READ COMMITTED).
_PG_CLAIM_LIMITED_FUNCTION = """CREATE OR REPLACE FUNCTION "{function}"(p_queue text,
    p_kinds text[], p_limit integer, p_now timestamptz, p_lease_until timestamptz,
    p_worker text, p_concurrency integer, p_rate_count integer, p_rate_seconds double precision)
RETURNS TABLE ({result}, held boolean, reopens_at double precision)
LANGUAGE plpgsql {generic} AS $body$
#variable_conflict use_column
DECLARE
    v_set_concurrency integer;
    v_set_rate_count integer;
    v_set_rate_seconds double precision;
    v_stored text;
    v_concurrency integer;
    v_rate_count integer;
    v_rate_seconds double precision;
    v_now_s double precision := extract(epoch FROM p_now)::double precision;
    v_running bigint := 0;
    v_recent double precision[] := '{{}}';
    v_counted double precision[];
    v_room bigint;
    v_taken bigint := 0;
    v_is_held boolean := false;
    v_reopens double precision;
    v_setting text;  -- set_config's result (an assignment runs as a simple expression, no query)
BEGIN
    -- The upsert locks the queue's row until commit and returns it.
    INSERT INTO "{limit}" (queue, claims) VALUES (p_queue, '{{}}')
        ON CONFLICT (queue) DO UPDATE SET queue = excluded.queue
        RETURNING global_concurrency, rate_count, rate_seconds, claims
        INTO v_set_concurrency, v_set_rate_count, v_set_rate_seconds, v_stored;
    -- Limits set at runtime in place of the settings' (Limits.overlay).
    v_concurrency := COALESCE(v_set_concurrency, p_concurrency);
    IF v_set_rate_count IS NOT NULL AND v_set_rate_seconds IS NOT NULL THEN
        v_rate_count := v_set_rate_count;
        v_rate_seconds := v_set_rate_seconds;
    ELSE
        v_rate_count := p_rate_count;
        v_rate_seconds := p_rate_seconds;
    END IF;
    v_room := p_limit;
    IF v_concurrency IS NOT NULL THEN
        SELECT COUNT(*) INTO v_running FROM "{job}" WHERE queue = p_queue AND state = 'running';
        v_room := LEAST(v_room, v_concurrency - v_running);
    END IF;
    IF v_rate_count IS NOT NULL THEN
        -- The claims of the last two periods (Planner: a claimer whose clock read earlier
        -- still finds every claim of its own window); this claim counts those of one.
        SELECT COALESCE(array_agg(t ORDER BY t), '{{}}') INTO v_recent FROM (
            SELECT v::double precision AS t
            FROM jsonb_array_elements_text(COALESCE(v_stored::jsonb -> '', '[]')) AS e(v)) AS w
            WHERE t > v_now_s - 2 * v_rate_seconds;
        v_room := LEAST(v_room, v_rate_count - cardinality(
            ARRAY(SELECT t FROM unnest(v_recent) AS u(t) WHERE t > v_now_s - v_rate_seconds)));
    END IF;
    v_room := GREATEST(v_room, 0);
    IF v_room > 0 THEN
        v_setting := set_config('{written}', 'on', true);
        RETURN QUERY WITH claimed AS (UPDATE "{job}" AS j SET state = 'running',
            attempt = j.attempt + 1, claim_token = j.claim_token + 1, attempted_at = p_now,
            lease_until = p_lease_until, claimed_by = p_worker
            WHERE j.id = ANY(ARRAY(SELECT id FROM "{job}"
                WHERE state = 'available' AND queue = p_queue
                AND (p_kinds IS NULL OR kind = ANY(p_kinds))
                AND NOT EXISTS (SELECT 1 FROM "{queue}"
                    WHERE name = p_queue AND paused_at IS NOT NULL)
                ORDER BY priority DESC, scheduled_at, id LIMIT v_room FOR UPDATE SKIP LOCKED))
            RETURNING {columns})
        SELECT *, NULL::boolean, NULL::double precision FROM claimed;
        GET DIAGNOSTICS v_taken = ROW_COUNT;
        v_setting := set_config('{written}', '', true);
        IF v_taken > 0 THEN
            INSERT INTO "{stat}" (queue, minute, {stat_columns})
            VALUES (p_queue, div(extract(epoch FROM p_now), 60)::bigint, v_taken, {zeros});
        END IF;
    END IF;
    IF v_rate_count IS NOT NULL AND v_taken > 0 THEN
        SELECT array_agg(t ORDER BY t) INTO v_recent FROM (SELECT unnest(v_recent) AS t
            UNION ALL SELECT v_now_s FROM generate_series(1, v_taken)) AS w;
    END IF;
    -- Every job the room allowed was taken and the room was below what was asked: the next
    -- one is held (Planner.offer of one more candidate).
    IF (v_concurrency IS NOT NULL OR v_rate_count IS NOT NULL) AND v_taken = v_room
        AND v_room < p_limit THEN
        v_is_held := true;
        IF v_rate_count IS NOT NULL THEN
            v_counted := ARRAY(SELECT t FROM unnest(v_recent) AS u(t)
                WHERE t > v_now_s - v_rate_seconds ORDER BY t);
            IF cardinality(v_counted) >= v_rate_count
                AND (v_concurrency IS NULL OR v_running + v_taken < v_concurrency) THEN
                -- Held by the rate alone: room comes back when the oldest claim leaves.
                v_reopens := v_counted[cardinality(v_counted) - v_rate_count + 1]
                    + v_rate_seconds;
            END IF;
        END IF;
    END IF;
    IF v_rate_count IS NOT NULL THEN
        -- The window written back: every partition's claims of the last two periods.
        UPDATE "{limit}" SET claims = COALESCE((
            SELECT jsonb_object_agg(k, ts)::text FROM (
                SELECT k, jsonb_agg(to_jsonb(t) ORDER BY t) AS ts FROM (
                    SELECT e.key AS k, v::double precision AS t
                    FROM jsonb_each(v_stored::jsonb) AS e,
                        jsonb_array_elements_text(e.value) AS a(v)
                    WHERE e.key <> ''
                    UNION ALL SELECT '', t FROM unnest(v_recent) AS u(t)
                ) AS w WHERE t > v_now_s - 2 * v_rate_seconds GROUP BY k) AS g), '{{}}')
        WHERE queue = p_queue;
    END IF;
    RETURN QUERY SELECT {nulls}, v_is_held, v_reopens;
END
$body$"""


def claim_limited_function_name(prefix: str) -> str:
    """The PostgreSQL function that claims within a queue's limits (migration 0010)."""
    return schema_name(prefix, "claim_limited")


def limited_claim_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Migration 0010 (PostgreSQL; nothing on SQLite): the function that claims within a
    queue's limits in one call. Its rows are the claimed jobs (as the claim function's), then
    one row whose `id` is NULL with `held` and `reopens_at` (epoch seconds, or NULL)."""
    _check(vendor, prefix)
    if vendor == "sqlite":
        return []
    names = tables(prefix)
    return [
        _PG_CLAIM_LIMITED_FUNCTION.format(
            function=claim_limited_function_name(prefix),
            generic=PLAN_EACH_CALL,
            result=", ".join(f"{name} {kind}" for name, kind, _ in CLAIMED_RESULT),
            written=STATS_WRITTEN,
            limit=names.limit,
            job=names.job,
            queue=names.queue,
            stat=stat_table(prefix),
            stat_columns=", ".join(STAT_COLUMNS),
            zeros=", ".join(["0"] * (len(STAT_COLUMNS) - 1)),
            columns=CLAIMED_COLUMNS,
            nulls=", ".join(f"NULL::{kind}" for _, kind, _ in CLAIMED_RESULT),
        )
    ]


def drop_limited_claim_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Undo `limited_claim_statements` (migration 0010 backwards)."""
    _check(vendor, prefix)
    if vendor == "sqlite":
        return []
    return [
        f'DROP FUNCTION IF EXISTS "{claim_limited_function_name(prefix)}"(text, text[], integer,'
        " timestamptz, timestamptz, text, integer, integer, double precision)"
    ]


_WORKER_TABLE = {
    "postgresql": """\
CREATE TABLE "{worker}" (
    "id" text NOT NULL PRIMARY KEY,
    "host" text NOT NULL,
    "pid" bigint NOT NULL,
    "started_at" timestamp with time zone NOT NULL,
    "last_seen" timestamp with time zone NOT NULL,
    "expires_at" timestamp with time zone NOT NULL,
    "info" jsonb NOT NULL
)""",
    "sqlite": """\
CREATE TABLE "{worker}" (
    "id" text NOT NULL PRIMARY KEY,
    "host" text NOT NULL,
    "pid" bigint NOT NULL,
    "started_at" datetime NOT NULL,
    "last_seen" datetime NOT NULL,
    "expires_at" datetime NOT NULL,
    "info" text NOT NULL CHECK ((JSON_VALID("info") OR "info" IS NULL))
)""",
}


def worker_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Migration 0008: the worker table, one row per running worker process (a model, so
    Django's ``flush`` empties it like the job table)."""
    _check(vendor, prefix)
    table = tables(prefix).worker
    created = [_WORKER_TABLE[vendor].format(worker=table)]
    if vendor == "postgresql":
        like = pg_like_index_name(table, "id")
        created.append(f'CREATE INDEX "{like}" ON "{table}" ("id" text_pattern_ops)')
    return created


def enqueue_index_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Migration 0011: fewer index entries per enqueued or claimed job. The admin indexes
    leave out jobs the claim and rescue indexes hold (`ADMIN_INDEXES`), and on PostgreSQL the
    unique constraint on ``unique_lock`` becomes a partial unique index of the jobs that hold
    a key (a job without one no longer writes a NULL entry there). SQLite keeps its
    constraint: it cannot drop one without rebuilding the table (which would drop the count
    triggers with it), and the inserts' ``ON CONFLICT … WHERE unique_lock IS NOT NULL``
    matches either."""
    _check(vendor, prefix)
    job = tables(prefix).job
    created: list[str] = []
    if vendor == "postgresql":
        name = unique_lock_name(prefix)
        created += [
            f'ALTER TABLE "{job}" DROP CONSTRAINT "{name}"',
            f'CREATE UNIQUE INDEX "{name}" ON "{job}" ("unique_lock")'
            ' WHERE "unique_lock" IS NOT NULL',
        ]
    for spec in ADMIN_INDEXES:
        created.append(f'DROP INDEX "{index_name(prefix, spec.suffix)}"')
        created.append(_index_sql(prefix, job, spec))
    return created


#: The schema in the migrations' order: what the first migrations create, then one part per
#: later migration, with the label `sql()` writes before that part's statements.
PARTS: tuple[tuple[str | None, Callable[[str, str], list[str]]], ...] = (
    (None, _table_statements),
    ("job counts (migration 0003)", count_statements),
    ("job results (migration 0004)", result_statements),
    ("workflows (migration 0005)", workflow_statements),
    ("queue limits (migration 0006)", limit_statements),
    ("job statistics (migration 0007)", stat_statements),
    ("workers (migration 0008)", worker_statements),
    ("claims and finishes in server functions (migration 0009)", run_function_statements),
    ("a claim within a queue's limits in one call (migration 0010)", limited_claim_statements),
    ("enqueue indexes (migration 0011)", enqueue_index_statements),
)


def statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """`sql()` as a list of statements, without their ``;`` (a function body holds some)."""
    _check(vendor, prefix)
    return [statement for _, part in PARTS for statement in part(vendor, prefix)]


def sql(vendor: str, prefix: str = DEFAULT_PREFIX) -> str:
    """The DDL that creates the database store's tables, indexes and triggers for `vendor`
    ("postgresql" or "sqlite") and table `prefix`: what the migrations do, for
    ``MIGRATE=False`` users who manage their schema themselves. Statements end with ``;`` and
    a newline; the part of each migration after the first ones starts at a line naming it
    (`PARTS`), such as ``-- job counts (migration 0003)``."""
    _check(vendor, prefix)
    text = []
    for label, part in PARTS:
        if label is not None:
            text.append(f"-- {label}\n")
        text.extend(statement + ";\n" for statement in part(vendor, prefix))
    return "".join(text)
