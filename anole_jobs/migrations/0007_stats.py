"""Job statistics: per-queue, per-minute counters of started, completed, retried and dead runs
and a histogram of run times, kept by a trigger on the job table (the charts, ``GET /stats``
and ``manage.py jobs stats`` read them). Its SQL is frozen in ``sql/0007_stats.<vendor>.<up|down>.sql``. Like 0003, the names follow
``TABLE_PREFIX``, ``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor,
prefix)`` has its DDL after the line ``-- job statistics (migration 0007)``), and the table is
not a model, so Django's model state stays as it is. Runs that ended before it was applied are
not counted.
"""

from django.db import migrations

from anole_jobs.stores.database.frozen import RunFrozenSQL


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0006_limits")]

    operations = [RunFrozenSQL("0007_stats")]
