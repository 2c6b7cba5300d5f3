"""Job statistics: per-queue, per-minute counters of started, completed, retried and dead runs
and a histogram of run times, kept by a trigger on the job table (the charts, ``GET /stats``
and ``manage.py jobs stats`` read them). All of it is in
``anole_jobs.stores.database.ddl`` (`stat_statements`). Like 0003, the names follow
``TABLE_PREFIX``, ``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor,
prefix)`` has its DDL after the line ``-- job statistics (migration 0007)``), and the table is
not a model, so Django's model state stays as it is. Runs that ended before it was applied are
not counted.
"""

from django.db import migrations

from anole_jobs.stores.database.ddl import (
    VENDORS,
    configured,
    drop_stat_statements,
    stat_statements,
)

PREFIX, MIGRATE = configured()


def _run(schema_editor, statements) -> None:
    vendor = schema_editor.connection.vendor
    if not MIGRATE or vendor not in VENDORS:
        return  # MIGRATE=False, or a database the store refuses anyway
    for statement in statements(vendor, PREFIX):
        schema_editor.execute(statement, params=None)


def create_stats(apps, schema_editor) -> None:
    _run(schema_editor, stat_statements)


def drop_stats(apps, schema_editor) -> None:
    _run(schema_editor, drop_stat_statements)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0006_limits")]

    operations = [migrations.RunPython(create_stats, drop_stats, elidable=False)]
