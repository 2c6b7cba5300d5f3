"""The queue limits table (docs/limits.md): one row per queue with limits, holding those set
at runtime and the times of its recent claims. Like 0001, its name follows ``TABLE_PREFIX``
and ``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor, prefix)`` has its DDL
after the line ``-- queue limits (migration 0006)``)."""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import configured, tables

PREFIX, MIGRATE = configured()
TABLES = tables(PREFIX)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0005_workflows")]

    operations = [
        migrations.CreateModel(
            name="Limit",
            fields=[
                ("queue", models.TextField(primary_key=True, serialize=False)),
                ("global_concurrency", models.IntegerField(null=True)),
                ("rate_count", models.IntegerField(null=True)),
                ("rate_seconds", models.FloatField(null=True)),
                ("claims", models.TextField()),
            ],
            options={
                "db_table": TABLES.limit,
                "managed": MIGRATE,
            },
        ),
    ]
