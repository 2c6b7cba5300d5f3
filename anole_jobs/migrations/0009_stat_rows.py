"""Claims and finishes as PostgreSQL functions that write their own run statistics: the
statistics trigger of 0007 cost a third or more of a worker's throughput on short jobs, since
its statement was set up again for every claim and finish; the functions write those rows in
their own statement (and PL/pgSQL saves the parsing of it). The trigger stays for
every other statement that moves a job (see ``anole_jobs.stores.database.ddl``,
`run_function_statements`). Nothing on SQLite. Like 0003, the names follow ``TABLE_PREFIX``,
``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor, prefix)`` has its DDL after
the line ``-- claims and finishes in server functions (migration 0009)``), and Django's model
state stays as it is.
"""

from django.db import migrations

from anole_jobs.stores.database.ddl import (
    VENDORS,
    configured,
    drop_run_function_statements,
    run_function_statements,
)

PREFIX, MIGRATE = configured()


def _run(schema_editor, statements) -> None:
    vendor = schema_editor.connection.vendor
    if not MIGRATE or vendor not in VENDORS:
        return  # MIGRATE=False, or a database the store refuses anyway
    for statement in statements(vendor, PREFIX):
        schema_editor.execute(statement, params=None)


def create_functions(apps, schema_editor) -> None:
    _run(schema_editor, run_function_statements)


def drop_functions(apps, schema_editor) -> None:
    _run(schema_editor, drop_run_function_statements)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0008_workers")]

    operations = [migrations.RunPython(create_functions, drop_functions, elidable=False)]
