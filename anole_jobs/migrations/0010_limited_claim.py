"""A claim within a queue's limits in one call on PostgreSQL: a function that locks the queue's
limit row, counts what runs and the recent claims, claims within the room left and writes the
window back, where the store made three round trips or more (its SQL is frozen in
``sql/0010_limited_claim.<vendor>.<up|down>.sql``). Nothing on SQLite. Like 0003,
its names follow ``TABLE_PREFIX``, ``MIGRATE=False`` makes it create nothing
(``anole_jobs.sql(vendor, prefix)`` has its DDL after the line ``-- a claim within a queue's
limits in one call (migration 0010)``), and Django's model state stays as it is.
"""

from django.db import migrations

from anole_jobs.stores.database.frozen import RunFrozenSQL


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0009_stat_rows")]

    operations = [RunFrozenSQL("0010_limited_claim")]
