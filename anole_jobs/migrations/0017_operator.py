"""Migration 0017_operator: worker controls (an operator's quiet or stop request, as JSON in a
``control`` column of the worker table) and the operators' audit log (an ``audit`` table).
Its SQL is frozen in ``sql/0017_operator.<vendor>.<up|down>.sql``; like 0001, the names follow
``TABLE_PREFIX`` and ``MIGRATE=False`` makes it change nothing."""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import configured, tables
from anole_jobs.stores.database.frozen import RunFrozenSQL

PREFIX, MIGRATE = configured()
TABLES = tables(PREFIX)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0016_deploys")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="worker",
                    name="control",
                    field=models.TextField(null=True),
                ),
                migrations.CreateModel(
                    name="AuditEntry",
                    fields=[
                        ("id", models.BigAutoField(primary_key=True, serialize=False)),
                        ("at", models.DateTimeField()),
                        ("actor", models.TextField()),
                        ("action", models.TextField()),
                        ("target", models.TextField()),
                        ("surface", models.TextField()),
                        ("detail", models.TextField()),
                    ],
                    options={"db_table": TABLES.audit, "managed": MIGRATE},
                ),
            ],
            database_operations=[RunFrozenSQL("0017_operator")],
        ),
    ]
