"""The database store's schema: table and index names, and the DDL to apply by hand.

This module owns every name the schema uses, so the models, the migration, the store's SQL and
`sql()` agree. `sql(vendor, prefix)` (re-exported as ``anole_jobs.sql``) returns the DDL for
``MIGRATE=False`` users; a test checks that it builds exactly what the migration builds.

It imports no model and needs no configured database: `sql()` works for any vendor and prefix.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from django.db.backends.utils import names_digest

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


def tables(prefix: str) -> Tables:
    return Tables(
        job=prefix + "job", leader=prefix + "leader", cron=prefix + "cron", queue=prefix + "queue"
    )


def channel(prefix: str) -> str:
    """The PostgreSQL NOTIFY channel of the stores using `prefix` (payload: a queue name)."""
    return prefix + "wake"


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


def unique_lock_name(prefix: str) -> str:
    """The unique constraint on ``job.unique_lock`` (a constraint: no 30-character cap, but
    PostgreSQL's 63, past which a digest of the prefix stands in as for indexes)."""
    name = prefix + "job_unique_lock"
    if len(name) <= PG_NAME_MAX:
        return name
    return f"aj{hashlib.sha256(prefix.encode()).hexdigest()[:8]}_job_unique_lock"


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
    # admin: list(state=...), list(queue=...) and counts(), list(kind=...), newest first
    IndexSpec("job_state", ("state", "id"), None),
    IndexSpec("job_queue", ("queue", "state", "id"), None),
    IndexSpec("job_kind", ("kind", "id"), None),
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
    return f'CREATE INDEX "{index_name(prefix, spec.suffix)}" ON "{table}" ({columns}){where};\n'


def sql(vendor: str, prefix: str = DEFAULT_PREFIX) -> str:
    """The DDL that creates the database store's tables and indexes for `vendor`
    ("postgresql" or "sqlite") and table `prefix`: what the migration does, for
    ``MIGRATE=False`` users who manage their schema themselves."""
    if vendor not in VENDORS:
        raise ValueError(f"vendor must be one of {', '.join(map(repr, VENDORS))}, got {vendor!r}")
    if not isinstance(prefix, str):
        raise ValueError(f"prefix must be a string, got {prefix!r}")
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
    return text + "".join(_index_sql(prefix, names.job, spec) for spec in JOB_INDEXES)
