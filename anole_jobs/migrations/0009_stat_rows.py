"""Claims and finishes as PostgreSQL functions that write their own run statistics: the
statistics trigger of 0007 cost a third or more of a worker's throughput on short jobs, since
its statement was set up again for every claim and finish; the functions write those rows in
their own statement (and PL/pgSQL saves the parsing of it). The trigger stays for
every other statement that moves a job (its SQL is frozen in ``sql/0009_stat_rows.<vendor>.<up|down>.sql``). Nothing on SQLite. Like 0003, the names follow ``TABLE_PREFIX``,
``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor, prefix)`` has its DDL after
the line ``-- claims and finishes in server functions (migration 0009)``), and Django's model
state stays as it is.
"""

from django.db import migrations

from anole_jobs.stores.database.frozen import RunFrozenSQL


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0008_workers")]

    operations = [RunFrozenSQL("0009_stat_rows")]
