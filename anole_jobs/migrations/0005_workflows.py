"""Workflows (docs/workflows.md): a step's bookkeeping on the job table (six nullable columns,
so adding them rewrites no row; NULL for every plain job), the workflow table, and the table
of dependency edges. Like 0001, the names follow ``TABLE_PREFIX`` and ``MIGRATE=False`` makes
it create nothing (``anole_jobs.sql(vendor, prefix)`` has its DDL after the line
``-- workflows (migration 0005)``)."""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import configured, index_name, tables

PREFIX, MIGRATE = configured()
TABLES = tables(PREFIX)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0004_result")]

    operations = [
        migrations.AddField(
            model_name="job", name="workflow_id", field=models.TextField(null=True)
        ),
        migrations.AddField(model_name="job", name="step_name", field=models.TextField(null=True)),
        migrations.AddField(
            model_name="job", name="waiting_on", field=models.IntegerField(null=True)
        ),
        migrations.AddField(
            model_name="job", name="ignore_failed", field=models.BooleanField(null=True)
        ),
        migrations.AddField(
            model_name="job", name="ready_delay", field=models.BigIntegerField(null=True)
        ),
        migrations.AddField(
            model_name="job", name="cancelled_by", field=models.BigIntegerField(null=True)
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("workflow_id__isnull", False)),
                fields=["workflow_id", "id"],
                name=index_name(PREFIX, "job_workflow"),
            ),
        ),
        migrations.CreateModel(
            name="Workflow",
            fields=[
                ("id", models.TextField(primary_key=True, serialize=False)),
                ("name", models.TextField()),
                ("created_at", models.DateTimeField()),
                ("cancelled", models.BooleanField()),
            ],
            options={"db_table": TABLES.workflow, "managed": MIGRATE},
        ),
        migrations.CreateModel(
            name="JobDependency",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("job_id", models.BigIntegerField()),
                ("dependency_id", models.BigIntegerField()),
            ],
            options={
                "db_table": TABLES.dependency,
                "managed": MIGRATE,
                "indexes": [
                    models.Index(
                        fields=["dependency_id"], name=index_name(PREFIX, "dep_dependency")
                    ),
                    models.Index(fields=["job_id"], name=index_name(PREFIX, "dep_job")),
                ],
            },
        ),
    ]
