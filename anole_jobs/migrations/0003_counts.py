"""The job counts (``counts()`` without reading the job table): the count table and the
triggers on the job table that keep it, then one statement that counts the jobs already there.
All of it is in ``anole_jobs.stores.database.ddl`` (`count_statements`), whose docstring says
why triggers and why PostgreSQL keeps insert-only deltas. Like 0001, the names follow
``TABLE_PREFIX`` and ``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor,
prefix)`` has its DDL).

The count table is not a model (see ddl.py), so this migration leaves Django's model state as
it is. Django runs it in one transaction on both databases: on PostgreSQL, creating the
triggers locks out writers to the job table until it commits, so the existing jobs are counted
exactly once however busy the queue is.
"""

from django.db import migrations

from anole_jobs.stores.database.ddl import (
    VENDORS,
    configured,
    count_statements,
    drop_count_statements,
)

PREFIX, MIGRATE = configured()


def _run(schema_editor, statements) -> None:
    vendor = schema_editor.connection.vendor
    if not MIGRATE or vendor not in VENDORS:
        return  # MIGRATE=False, or a database the store refuses anyway
    for statement in statements(vendor, PREFIX):
        schema_editor.execute(statement, params=None)


def create_counts(apps, schema_editor) -> None:
    _run(schema_editor, count_statements)


def drop_counts(apps, schema_editor) -> None:
    _run(schema_editor, drop_count_statements)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0002_queue")]

    operations = [migrations.RunPython(create_counts, drop_counts, elidable=False)]
