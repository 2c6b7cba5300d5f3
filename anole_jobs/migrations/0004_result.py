"""The job's result: a completed job keeps its handler's JSON return value (docs/results.md).
One nullable column, so adding it rewrites no row. Like 0001, the table name follows
``TABLE_PREFIX`` and ``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor,
prefix)`` has its DDL after the line ``-- job results (migration 0004)``)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0003_counts")]

    operations = [
        migrations.AddField(
            model_name="job",
            name="result",
            field=models.JSONField(null=True),
        ),
    ]
