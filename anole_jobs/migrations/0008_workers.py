"""The worker table: each running worker process records itself there on its heartbeat (see
docs/dashboard.md, "Workers"). Like 0001, its name follows ``TABLE_PREFIX`` and
``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor, prefix)`` has its DDL
after the line ``-- workers (migration 0008)``)."""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import configured, tables

PREFIX, MIGRATE = configured()
TABLES = tables(PREFIX)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0007_stats")]

    operations = [
        migrations.CreateModel(
            name="Worker",
            fields=[
                ("id", models.TextField(primary_key=True, serialize=False)),
                ("host", models.TextField()),
                ("pid", models.BigIntegerField()),
                ("started_at", models.DateTimeField()),
                ("last_seen", models.DateTimeField()),
                ("expires_at", models.DateTimeField()),
                ("info", models.JSONField()),
            ],
            options={
                "db_table": TABLES.worker,
                "managed": MIGRATE,
            },
        ),
    ]
