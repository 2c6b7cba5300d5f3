"""The job counts (``counts()`` without reading the job table): the count table and the
triggers on the job table that keep it, then one statement that counts the jobs already there.
Its SQL is frozen in ``sql/0003_counts.<vendor>.<up|down>.sql``; ``anole_jobs.stores.database.ddl``
says why triggers and why PostgreSQL keeps insert-only deltas. Like 0001, the names follow
``TABLE_PREFIX`` and ``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor,
prefix)`` has its DDL).

The count table is not a model (see ddl.py), so this migration leaves Django's model state as
it is. Django runs it in one transaction on both databases: on PostgreSQL, creating the
triggers locks out writers to the job table until it commits, so the existing jobs are counted
exactly once however busy the queue is.
"""

from django.db import migrations

from anole_jobs.stores.database.frozen import RunFrozenSQL


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0002_queue")]

    operations = [RunFrozenSQL("0003_counts")]
