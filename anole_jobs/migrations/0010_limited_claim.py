"""A claim within a queue's limits in one call on PostgreSQL: a function that locks the queue's
limit row, counts what runs and the recent claims, claims within the room left and writes the
window back, where the store made three round trips or more (see
``anole_jobs.stores.database.ddl``, `limited_claim_statements`). Nothing on SQLite. Like 0003,
its names follow ``TABLE_PREFIX``, ``MIGRATE=False`` makes it create nothing
(``anole_jobs.sql(vendor, prefix)`` has its DDL after the line ``-- a claim within a queue's
limits in one call (migration 0010)``), and Django's model state stays as it is.
"""

from django.db import migrations

from anole_jobs.stores.database.ddl import (
    VENDORS,
    configured,
    drop_limited_claim_statements,
    limited_claim_statements,
)

PREFIX, MIGRATE = configured()


def _run(schema_editor, statements) -> None:
    vendor = schema_editor.connection.vendor
    if not MIGRATE or vendor not in VENDORS:
        return  # MIGRATE=False, or a database the store refuses anyway
    for statement in statements(vendor, PREFIX):
        schema_editor.execute(statement, params=None)


def create_function(apps, schema_editor) -> None:
    _run(schema_editor, limited_claim_statements)


def drop_function(apps, schema_editor) -> None:
    _run(schema_editor, drop_limited_claim_statements)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0009_stat_rows")]

    operations = [migrations.RunPython(create_function, drop_function, elidable=False)]
