"""The database store's tables. Names follow ``ANOLE_JOBS["TABLE_PREFIX"]`` and
``ANOLE_JOBS["MIGRATE"]=False`` makes the models unmanaged, so this migration then creates
nothing (apply ``anole_jobs.sql(vendor, prefix)`` yourself). Both settings are read here the
same way the models read them, so ``makemigrations --check`` stays clean whatever they are.
"""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import configured, index_name, tables, unique_lock_name

PREFIX, MIGRATE = configured()
TABLES = tables(PREFIX)


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Cron",
            fields=[
                ("name", models.TextField(primary_key=True, serialize=False)),
                ("last_tick_at", models.DateTimeField(null=True)),
                ("last_job_id", models.BigIntegerField(null=True)),
            ],
            options={
                "db_table": TABLES.cron,
                "managed": MIGRATE,
            },
        ),
        migrations.CreateModel(
            name="Leader",
            fields=[
                ("name", models.TextField(primary_key=True, serialize=False)),
                ("holder", models.TextField()),
                ("expires_at", models.DateTimeField()),
            ],
            options={
                "db_table": TABLES.leader,
                "managed": MIGRATE,
            },
        ),
        migrations.CreateModel(
            name="Job",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("kind", models.TextField()),
                ("queue", models.TextField()),
                ("state", models.CharField(max_length=16)),
                ("args", models.JSONField(default=dict)),
                ("meta", models.JSONField(default=dict)),
                ("errors", models.JSONField(default=list)),
                ("priority", models.SmallIntegerField(default=0)),
                ("attempt", models.IntegerField(default=0)),
                ("max_attempts", models.IntegerField()),
                ("claim_token", models.BigIntegerField(default=0)),
                ("created_at", models.DateTimeField()),
                ("scheduled_at", models.DateTimeField()),
                ("attempted_at", models.DateTimeField(null=True)),
                ("finished_at", models.DateTimeField(null=True)),
                ("lease_until", models.DateTimeField(null=True)),
                ("claimed_by", models.TextField(null=True)),
                ("unique_key", models.TextField(null=True)),
                ("unique_scope", models.CharField(default="live", max_length=8)),
                ("unique_lock", models.TextField(null=True)),
            ],
            options={
                "db_table": TABLES.job,
                "managed": MIGRATE,
                "indexes": [
                    models.Index(
                        condition=models.Q(("state", "available")),
                        fields=["queue", "-priority", "scheduled_at", "id"],
                        name=index_name(PREFIX, "job_claim"),
                    ),
                    models.Index(
                        condition=models.Q(("state__in", ["scheduled", "retrying"])),
                        fields=["scheduled_at"],
                        name=index_name(PREFIX, "job_stage"),
                    ),
                    models.Index(
                        condition=models.Q(("state", "running")),
                        fields=["lease_until"],
                        name=index_name(PREFIX, "job_rescue"),
                    ),
                    models.Index(
                        condition=models.Q(("finished_at__isnull", False)),
                        fields=["state", "finished_at"],
                        name=index_name(PREFIX, "job_prune"),
                    ),
                    models.Index(fields=["state", "id"], name=index_name(PREFIX, "job_state")),
                    models.Index(
                        fields=["queue", "state", "id"], name=index_name(PREFIX, "job_queue")
                    ),
                    models.Index(fields=["kind", "id"], name=index_name(PREFIX, "job_kind")),
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("unique_lock",), name=unique_lock_name(PREFIX))
                ],
            },
        ),
    ]
