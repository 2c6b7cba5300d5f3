"""Test helpers for the run statistics."""

from __future__ import annotations

from typing import Any

from django.db import connections

from anole_jobs.stores.database.ddl import stat_hour_table, stat_table


def clear_stats(env: Any) -> None:
    """Empty the SQL stores' stat tables (minutes and hours): they are no models, so the test
    database's flush between tests leaves other tests' counters in them (the memory and Redis
    stores start empty)."""
    if env.alias is not None:
        store = env.store
        with connections[env.alias].cursor() as cursor:
            cursor.execute(f'DELETE FROM "{stat_table(store.prefix)}"')
            cursor.execute(f'DELETE FROM "{stat_hour_table(store.prefix)}"')
