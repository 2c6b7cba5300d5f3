"""Migration 0018_history: the statistics' hourly history (a ``stat_hour`` table: the same
counters as the stat table, per queue and hour, rolled up by the leader from the minutes and
kept for ``ANOLE_JOBS['STATS']['HOURS']``). Its SQL is frozen in
``sql/0018_history.<vendor>.<up|down>.sql``. Like 0007, the names follow ``TABLE_PREFIX``,
``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor, prefix)`` has its DDL after
the line ``-- the statistics' hourly history (migration 0018)``), and the table is not a model,
so Django's model state stays as it is. The first roll-up after it fills the hours whose
minutes are still kept."""

from django.db import migrations

from anole_jobs.stores.database.frozen import RunFrozenSQL


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0017_operator")]

    operations = [RunFrozenSQL("0018_history")]
