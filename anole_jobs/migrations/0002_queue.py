"""The queue table (queue pause/resume). Like 0001, its name follows ``TABLE_PREFIX`` and
``MIGRATE=False`` makes it create nothing (``anole_jobs.sql(vendor, prefix)`` has its DDL)."""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import configured, tables

PREFIX, MIGRATE = configured()
TABLES = tables(PREFIX)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0001_initial")]

    operations = [
        migrations.CreateModel(
            name="Queue",
            fields=[
                ("name", models.TextField(primary_key=True, serialize=False)),
                ("paused_at", models.DateTimeField(null=True)),
            ],
            options={
                "db_table": TABLES.queue,
                "managed": MIGRATE,
            },
        ),
    ]
