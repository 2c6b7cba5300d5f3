"""Are the server functions and triggers in the database the ones this code expects?

A migration is frozen, but a database can still differ from what this release's migrations
leave: a migration not yet applied (or, with ``MIGRATE=False``, DDL not yet applied by hand), a
function edited by hand, a restore of an older dump. The store then runs bodies this code was
not written against. `differences` compares, cheaply (one query), what the database holds with
what the frozen files define last:

- PostgreSQL: each function's body (``pg_proc.prosrc``, compared by its MD5 in the query, so
  the bodies do not travel) and each trigger's presence on its table;
- SQLite: each trigger's text (SQLite keeps a trigger's ``CREATE TRIGGER`` statement as it was
  run).

It connects, so the system check that calls it runs only when databases are requested
(``manage.py check --database ALIAS``, and ``migrate`` before it migrates).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from anole_jobs.stores.database.frozen import MIGRATIONS, statements

_FUNCTION = re.compile(r'CREATE (?:OR REPLACE )?FUNCTION "([^"]+)"')
_TRIGGER = re.compile(r'CREATE TRIGGER "([^"]+)"')
_DROP_FUNCTION = re.compile(r'DROP FUNCTION (?:IF EXISTS )?"([^"]+)"')
_DROP_TRIGGER = re.compile(r'DROP TRIGGER (?:IF EXISTS )?"([^"]+)"')


@dataclass(frozen=True)
class Expected:
    """What the migrations leave: function name → MD5 of its body (PostgreSQL), trigger name →
    MD5 of its statement (SQLite) or "" (PostgreSQL: its presence only)."""

    functions: dict[str, str]
    triggers: dict[str, str]


def _md5(text: str) -> str:
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def _body(statement: str) -> str:
    """A function's body: the text between its dollar quotes, as ``pg_proc.prosrc`` holds it."""
    tag = re.search(r"\$[A-Za-z_]*\$", statement)
    if tag is None:
        raise ValueError(f"a function without a dollar-quoted body: {statement[:60]}")
    start = tag.end()
    return statement[start : statement.rindex(tag.group(0))]


@cache
def expected(vendor: str, prefix: str) -> Expected:
    functions: dict[str, str] = {}
    triggers: dict[str, str] = {}
    for migration, _ in MIGRATIONS:
        for statement in statements(migration, vendor, "up", prefix):
            if found := _FUNCTION.match(statement):
                functions[found.group(1)] = _md5(_body(statement))
            elif found := _TRIGGER.match(statement):
                triggers[found.group(1)] = "" if vendor == "postgresql" else _md5(statement)
            elif found := _DROP_FUNCTION.match(statement):
                functions.pop(found.group(1), None)
            elif found := _DROP_TRIGGER.match(statement):
                triggers.pop(found.group(1), None)
    return Expected(functions=functions, triggers=triggers)


def differences(connection: Any, prefix: str) -> list[str]:
    """What differs between the database behind `connection` and what this code expects, in
    words ("function anole_jobs_claim: missing"); empty when they agree."""
    vendor = connection.vendor
    want = expected(vendor, prefix)
    with connection.cursor() as cursor:
        if vendor == "postgresql":
            cursor.execute(
                "SELECT p.proname, md5(p.prosrc) FROM pg_proc p"
                " WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = ANY(%s)",
                [list(want.functions)],
            )
            functions = dict(cursor.fetchall())
            cursor.execute(
                "SELECT t.tgname, '' FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
                " WHERE c.relnamespace = current_schema()::regnamespace AND t.tgname = ANY(%s)",
                [list(want.triggers)],
            )
            triggers = dict(cursor.fetchall())
        else:
            functions = {}
            cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
            triggers = {
                name: _md5(text) for name, text in cursor.fetchall() if name in want.triggers
            }
    found = []
    for what, wanted, held in (
        ("function", want.functions, functions),
        ("trigger", want.triggers, triggers),
    ):
        for name, digest in sorted(wanted.items()):
            if name not in held:
                found.append(f"{what} {name}: missing")
            elif held[name] != digest:
                found.append(f"{what} {name}: not the body this release's migrations define")
    return found


def unapplied(connection: Any) -> list[str]:
    """The store's migrations not recorded as applied in the database behind `connection`."""
    from django.db.migrations.recorder import MigrationRecorder

    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return [name for name, _ in MIGRATIONS]
    if connection.vendor == "postgresql" and not _may_read(connection, recorder):
        # A worker's role needs no access to Django's own table (docs/database.md lists
        # what it needs): nothing to check then, and nothing to complain about.
        return []
    applied = {name for app, name in recorder.applied_migrations() if app == "anole_jobs"}
    return [name for name, _ in MIGRATIONS if name not in applied]


def _may_read(connection: Any, recorder: Any) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT has_table_privilege(%s, 'SELECT')", [recorder.Migration._meta.db_table]
        )
        return bool(cursor.fetchone()[0])


def pending_migrations(settings: Any) -> list[str]:
    """`unapplied` for the configured database store; nothing for another store, or with
    ``MIGRATE=False`` (the user applies the DDL and Django records nothing that says which)."""
    store = settings.store
    if store.kind != "database" or store.alias is None or not settings.migrate:
        return []
    from django.db import connections

    return unapplied(connections[store.alias])


def schema_drift(settings: Any) -> list[str]:
    """`differences` for the configured database store (nothing for another store)."""
    store = settings.store
    if store.kind != "database" or store.alias is None:
        return []
    from django.db import connections

    connection = connections[store.alias]
    if connection.vendor not in ("postgresql", "sqlite"):
        return []
    return differences(connection, settings.table_prefix)
