"""The durable database store: ``STORE = {"database": ALIAS}``, SQLite or PostgreSQL,
chosen by the alias's vendor. `open_database_store` builds it; the modules here own the
models (`models`), the schema names and DDL (`ddl`), the shared SQL logic (`base`) and each
vendor's statements (`sqlite`, `postgres`).

Importing this package imports no model, so `open_store` may run before or after app loading.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import connections

from anole_jobs.errors import ConfigurationError

if TYPE_CHECKING:
    from anole_jobs.conf import Settings
    from anole_jobs.stores.database.base import SQLStore

__all__ = ["open_database_store"]


def open_database_store(alias: str, settings: Settings) -> SQLStore:
    """The store on database `alias`, by its vendor; `ConfigurationError` when unusable (an
    alias the project's settings do not configure, a vendor other than SQLite or PostgreSQL).

    Connects to nothing: Django opens the alias's connection at the first query.
    """
    if alias not in connections:
        raise ConfigurationError(
            f"ANOLE_JOBS['STORE'] names database {alias!r}, which is not in DATABASES"
        )
    vendor = connections[alias].vendor
    if vendor == "postgresql":
        from anole_jobs.stores.database.postgres import PostgresStore

        return PostgresStore(alias, settings)
    if vendor == "sqlite":
        import sqlite3

        from anole_jobs.stores.database.sqlite import SqliteStore, check_version

        problem = check_version(sqlite3.sqlite_version_info)
        if problem is not None:
            raise ConfigurationError(f"database {alias!r}: {problem}")
        return SqliteStore(alias, settings)
    raise ConfigurationError(
        f"database {alias!r} is {vendor}; the database store supports only SQLite and "
        'PostgreSQL (use {"database": ALIAS} with one of those, or {"redis": ALIAS})'
    )
