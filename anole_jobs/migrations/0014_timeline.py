"""Migration 0014_timeline: the job's timeline (docs/timeline.md) — its last progress report,
its log (the newest ``JOB_LOG_LINES`` records of its handlers) and its attempts (worker, start,
end and outcome of each). Three nullable JSON columns, so adding them rewrites no row, and a
job that never ran keeps them NULL. On PostgreSQL the finish function of 0009 is replaced by
one that also writes them, in the same statement (its behaviour otherwise the same).

Like 0001, the names follow ``TABLE_PREFIX`` and ``MIGRATE=False`` makes it change nothing
(``anole_jobs.sql(vendor, prefix)`` has its DDL after the line
``-- the job's progress, log and attempts (migration 0014)``). Its SQL is frozen in
``sql/0014_timeline.<vendor>.<up|down>.sql``.
"""

from django.db import migrations, models

from anole_jobs.stores.database.frozen import RunFrozenSQL


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0013_durable")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="job", name="progress", field=models.JSONField(null=True)
                ),
                migrations.AddField(
                    model_name="job", name="logs", field=models.JSONField(null=True)
                ),
                migrations.AddField(
                    model_name="job", name="attempts", field=models.JSONField(null=True)
                ),
            ],
            database_operations=[RunFrozenSQL("0014_timeline")],
        ),
    ]
