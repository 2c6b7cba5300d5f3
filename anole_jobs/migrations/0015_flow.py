"""Fair flow and sequences (docs/flow-control.md): each job's fairness value and turn, in a
queue with fairness, and its sequence, for a kind with one; three nullable columns (adding
them rewrites no row) and three partial indexes that hold only the jobs that have them, so a
plain job's enqueue and claim never touch them. Its SQL is frozen in
``sql/0015_flow.<vendor>.<up|down>.sql``. Like 0001, the names follow ``TABLE_PREFIX`` and
``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor, prefix)`` has its DDL
after the line ``-- fair flow, sequences and debounce (migration 0015)``). The indexes are
built without ``CONCURRENTLY``: on a large job table, writes to it wait while they build."""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import configured, index_name
from anole_jobs.stores.database.frozen import RunFrozenSQL

PREFIX, _ = configured()
#: The states a job has not ended in, as they were when this migration was made.
LIVE = ["pending", "scheduled", "available", "running", "retrying"]

INDEXES = (
    models.Index(
        fields=["queue", "-priority", "fair_order", "id"],
        name=index_name(PREFIX, "job_fair"),
        condition=models.Q(fair_order__isnull=False, state="available"),
    ),
    models.Index(
        fields=["queue", "fair_key", "fair_order"],
        name=index_name(PREFIX, "job_fair_key"),
        condition=models.Q(fair_order__isnull=False, state__in=LIVE),
    ),
    models.Index(
        fields=["sequence_key", "id"],
        name=index_name(PREFIX, "job_sequence"),
        condition=models.Q(sequence_key__isnull=False, state__in=LIVE),
    ),
)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0014_timeline")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="job", name="fair_key", field=models.TextField(null=True)
                ),
                migrations.AddField(
                    model_name="job", name="fair_order", field=models.FloatField(null=True)
                ),
                migrations.AddField(
                    model_name="job", name="sequence_key", field=models.TextField(null=True)
                ),
                *(migrations.AddIndex(model_name="job", index=index) for index in INDEXES),
            ],
            database_operations=[RunFrozenSQL("0015_flow")],
        ),
    ]
