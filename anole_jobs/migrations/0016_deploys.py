"""Migration 0016_deploys: kind versions (docs/deploys.md). Each job keeps the version of its
kind's args it was stored with, in a ``version`` column with a constant default of 1 (rows
stored before are version 1; adding it rewrites no row), and the PostgreSQL claim functions
admit a job only at a version the claiming worker names. Its SQL is frozen in
``sql/0016_deploys.<vendor>.<up|down>.sql``; like 0001, the names follow ``TABLE_PREFIX`` and
``MIGRATE=False`` makes it change nothing."""

from django.db import migrations, models

from anole_jobs.stores.database.frozen import RunFrozenSQL


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0015_flow")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="job",
                    name="version",
                    field=models.SmallIntegerField(db_default=1),
                ),
            ],
            database_operations=[RunFrozenSQL("0016_deploys")],
        ),
    ]
