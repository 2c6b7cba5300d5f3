"""Migration 0013_durable: durable steps, sleeps and signals (docs/durable.md). Four nullable
columns, so adding them rewrites no row, and a job that uses none of this keeps them NULL.
Its SQL is frozen in ``sql/0013_durable.<vendor>.up.sql``."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0012_unique_lock")]

    operations = [
        migrations.AddField(model_name="job", name="steps", field=models.JSONField(null=True)),
        migrations.AddField(model_name="job", name="signals", field=models.JSONField(null=True)),
        migrations.AddField(
            model_name="job", name="signal_deadlines", field=models.JSONField(null=True)
        ),
        migrations.AddField(model_name="job", name="awaiting", field=models.TextField(null=True)),
    ]
