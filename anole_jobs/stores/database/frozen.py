"""The schema's history, frozen: each migration's SQL in ``anole_jobs/migrations/sql/``.

Every migration has one file per vendor and direction, ``<migration>.<vendor>.<up|down>.sql``
(``0003_counts.postgresql.up.sql``), written once when the migration was made and never edited
again: a later change to the schema is a new migration with new files, as River and Oban keep
theirs. So a fresh install builds exactly what an old database was built with, whatever this
release's code says. ``MANIFEST.sha256`` beside them holds each file's checksum, and a test
fails when one changes.

The files are plain SQL for the default table prefix (``anole_jobs_``): ``psql -f`` runs them
as they are. For another ``TABLE_PREFIX``, `statements` renames every quoted name the schema
owns (tables, indexes, constraints, triggers, functions) to that prefix's name, the way
`ddl.py` derives it; a quoted ``"anole_jobs_…"`` it does not know is an error, so a new file
cannot slip a name past the renaming.

A file is a list of statements, each ending with ``;`` at the end of a line that is not
indented and not inside a dollar-quoted body (``$body$ … $body$``); ``--`` lines between
statements are comments and are left out.

It needs no configured database and imports no model: `ddl.sql()` is built from it too.
"""

from __future__ import annotations

import re
from dataclasses import fields
from functools import cache
from importlib import resources
from typing import Any, Literal

from django.db import router
from django.db.migrations.operations.base import Operation

from anole_jobs.stores.database.ddl import (
    DEFAULT_PREFIX,
    VENDORS,
    configured,
    index_name,
    pg_like_index_name,
    schema_name,
    stat_hour_table,
    stat_table,
    tables,
)

Direction = Literal["up", "down"]

#: The package directory of the frozen files.
SQL_PACKAGE = "anole_jobs.migrations"
SQL_DIRECTORY = "sql"

#: Index names (`ddl.index_name`: at most 30 characters, else a digest of the prefix).
INDEX_SUFFIXES = (
    "job_claim",
    "job_stage",
    "job_rescue",
    "job_prune",
    "job_state",
    "job_queue",
    "job_kind",
    "job_workflow",
    "dep_dependency",
    "dep_job",
    "stat_minute",
    "job_fair",
    "job_fair_key",
    "job_sequence",
    "stat_hour_hour",
)
#: Schema-wide names with PostgreSQL's 63-character cap (`ddl.schema_name`): the unique
#: constraint, the triggers and the functions.
SCHEMA_SUFFIXES = (
    "job_unique_lock",
    "count_jobs",
    "count_insert",
    "count_update",
    "count_delete",
    "count_truncate",
    "stat_runs",
    "claim",
    "finish",
    "claim_limited",
    "job_unique_lock_full",  # migration 0012 builds the constraint's index under this name
)
#: The ``text_pattern_ops`` indexes Django's PostgreSQL schema editor adds to a text primary
#: key, by (table field of `ddl.Tables`, column).
LIKE_INDEXES = (
    ("leader", "name"),
    ("cron", "name"),
    ("queue", "name"),
    ("workflow", "id"),
    ("limit", "queue"),
    ("worker", "id"),
)

_QUOTED = re.compile(r'"(anole_jobs_[A-Za-z0-9_]*)"')
_DOLLAR_QUOTE = re.compile(r"\$[A-Za-z_]*\$")


def schema_names(prefix: str) -> dict[str, str]:
    """Every name the schema owns, by a key that does not depend on the prefix."""
    names = tables(prefix)
    found = {f"table:{field.name}": getattr(names, field.name) for field in fields(names)}
    found["table:stat"] = stat_table(prefix)
    found["table:stat_hour"] = stat_hour_table(prefix)
    found.update({f"index:{suffix}": index_name(prefix, suffix) for suffix in INDEX_SUFFIXES})
    found.update({f"schema:{suffix}": schema_name(prefix, suffix) for suffix in SCHEMA_SUFFIXES})
    for table, column in LIKE_INDEXES:
        found[f"like:{table}.{column}"] = pg_like_index_name(getattr(names, table), column)
    return found


@cache
def _renames(prefix: str) -> dict[str, str]:
    ours = schema_names(prefix)
    return {name: ours[key] for key, name in schema_names(DEFAULT_PREFIX).items()}


def file_name(migration: str, vendor: str, direction: Direction) -> str:
    return f"{migration}.{vendor}.{direction}.sql"


def read(migration: str, vendor: str, direction: Direction) -> str:
    """The frozen file's text, as written (the default prefix's names)."""
    if vendor not in VENDORS:
        raise ValueError(f"vendor must be one of {', '.join(map(repr, VENDORS))}, got {vendor!r}")
    path = resources.files(SQL_PACKAGE).joinpath(
        SQL_DIRECTORY, file_name(migration, vendor, direction)
    )
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LookupError(
            f"no frozen SQL {file_name(migration, vendor, direction)} in anole_jobs/migrations/sql"
        ) from None


def split(text: str) -> list[str]:
    """The statements of a frozen file, without their final ``;``."""
    found: list[str] = []
    current: list[str] = []
    quote: str | None = None  # the dollar quote a body opened, while inside it
    for line in text.splitlines():
        if not current and quote is None and (not line.strip() or line.startswith("--")):
            continue  # a comment or blank line between statements
        current.append(line)
        for tag in _DOLLAR_QUOTE.findall(line):
            if quote is None:
                quote = tag
            elif tag == quote:
                quote = None
        if quote is None and line.endswith(";") and not line[:1].isspace():
            found.append("\n".join(current)[:-1])
            current = []
    if current or quote is not None:
        raise ValueError(f"a frozen file ends inside a statement: {current[:1]}")
    return found


def rename(statement: str, prefix: str) -> str:
    """`statement` with the default prefix's names replaced by `prefix`'s."""
    renames = _renames(prefix)

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in renames:
            raise ValueError(
                f'the frozen SQL names "{name}", which anole_jobs.stores.database.frozen does'
                " not know: add it to its names so that another TABLE_PREFIX renames it"
            )
        return f'"{renames[name]}"'

    return _QUOTED.sub(replace, statement)


def statements(
    migration: str, vendor: str, direction: Direction = "up", prefix: str = DEFAULT_PREFIX
) -> list[str]:
    """What `migration` runs on `vendor` in `direction`, for table `prefix`."""
    return [rename(statement, prefix) for statement in split(read(migration, vendor, direction))]


#: The migrations in order, each with the label `sql()` writes before its statements (the
#: first two make the tables every later one changes, and go unlabelled).
MIGRATIONS: tuple[tuple[str, str | None], ...] = (
    ("0001_initial", None),
    ("0002_queue", None),
    ("0003_counts", "job counts (migration 0003)"),
    ("0004_result", "job results (migration 0004)"),
    ("0005_workflows", "workflows (migration 0005)"),
    ("0006_limits", "queue limits (migration 0006)"),
    ("0007_stats", "job statistics (migration 0007)"),
    ("0008_workers", "workers (migration 0008)"),
    ("0009_stat_rows", "claims and finishes in server functions (migration 0009)"),
    ("0010_limited_claim", "a claim within a queue's limits in one call (migration 0010)"),
    ("0011_enqueue_indexes", "enqueue indexes (migration 0011)"),
    ("0012_unique_lock", "the unique key's constraint, as older code needs it (migration 0012)"),
    ("0013_durable", "durable steps, sleeps and signals (migration 0013)"),
    ("0014_timeline", "the job's progress, log and attempts (migration 0014)"),
    ("0015_flow", "fair flow, sequences and debounce (migration 0015)"),
    ("0016_deploys", "kind versions and payload references (migration 0016)"),
    ("0017_operator", "worker controls and the operators' audit log (migration 0017)"),
    ("0018_history", "the statistics' hourly history (migration 0018)"),
)


def _check(vendor: str, prefix: object) -> None:
    if vendor not in VENDORS:
        raise ValueError(f"vendor must be one of {', '.join(map(repr, VENDORS))}, got {vendor!r}")
    if not isinstance(prefix, str):
        raise ValueError(f"prefix must be a string, got {prefix!r}")


def schema_statements(vendor: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """`sql()` as a list of statements, without their ``;`` (a function body holds some)."""
    _check(vendor, prefix)
    return [s for migration, _ in MIGRATIONS for s in statements(migration, vendor, "up", prefix)]


def sql(vendor: str, prefix: str = DEFAULT_PREFIX) -> str:
    """The DDL that creates the database store's tables, indexes, triggers and functions for
    `vendor` ("postgresql" or "sqlite") and table `prefix`: the migrations' frozen SQL, in
    order, for ``MIGRATE=False`` users who manage their schema themselves. Statements end with
    ``;`` and a newline; each migration's part after the first two starts at a line naming it,
    such as ``-- job counts (migration 0003)``."""
    _check(vendor, prefix)
    text = []
    for migration, label in MIGRATIONS:
        if label is not None:
            text.append(f"-- {label}\n")
        text.extend(s + ";\n" for s in statements(migration, vendor, "up", prefix))
    return "".join(text)


class RunFrozenSQL(Operation):
    """A migration operation that runs the migration's own frozen files: ``up`` forwards,
    ``down`` backwards, for the connection's vendor and the configured ``TABLE_PREFIX``.
    With ``MIGRATE=False`` it runs nothing (the user applies `sql()` themselves), and on a
    database the store does not support either."""

    reversible = True
    reduces_to_sql = True
    elidable = False

    def __init__(self, migration: str) -> None:
        self.migration = migration

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (self.__class__.__qualname__, [self.migration], {})

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass  # the schema objects here are not models (or their state is set beside this)

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        self._run(app_label, schema_editor, "up")

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        self._run(app_label, schema_editor, "down")

    def describe(self) -> str:
        return f"Run the frozen SQL of migration {self.migration}"

    def _run(self, app_label: str, schema_editor: Any, direction: Direction) -> None:
        prefix, migrate = configured()
        vendor = schema_editor.connection.vendor
        if not migrate or vendor not in VENDORS:
            return  # MIGRATE=False, or a database the store refuses anyway
        if not router.allow_migrate(schema_editor.connection.alias, app_label):
            return
        for statement in statements(self.migration, vendor, direction, prefix):
            schema_editor.execute(statement, params=None)
