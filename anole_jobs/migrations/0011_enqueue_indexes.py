"""Fewer index entries per enqueued and claimed job (docs/database.md, "Schema"): the admin
indexes by queue and by kind leave out the jobs waiting to be claimed and the running ones,
which the claim and rescue indexes already hold, and the one by state leaves out the running
ones. Its SQL is frozen in ``sql/0011_enqueue_indexes.<vendor>.<up|down>.sql``.

The unique constraint on ``unique_lock`` stays: code of the release before this migration
inserts with ``ON CONFLICT (unique_lock)``, which only a unique index without a predicate
satisfies, and it keeps running during a rolling deploy (docs/upgrading.md). This migration's
first form swapped the constraint for a partial unique index on PostgreSQL, which broke that
code the moment it committed; 0012 puts the constraint back where that form ran.

Like 0001, the names follow ``TABLE_PREFIX`` and ``MIGRATE=False`` makes it change nothing
(``anole_jobs.sql(vendor, prefix)`` has its DDL after the line
``-- enqueue indexes (migration 0011)``). The indexes are rebuilt without ``CONCURRENTLY``:
on a large job table, writes to it wait while they build."""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import configured, index_name
from anole_jobs.stores.database.frozen import RunFrozenSQL

PREFIX, _ = configured()
#: The states the narrowed admin indexes leave out, as they were when this migration was made.
HOT_STATES = ["available", "running"]


def _admin(suffix: str, fields: list[str]) -> models.Index:
    # The (state, id) index keeps the available jobs: a list of them reads it newest first.
    condition = ~models.Q(state="running") if suffix == "job_state" else ~models.Q(state__in=HOT_STATES)
    return models.Index(fields=fields, name=index_name(PREFIX, suffix), condition=condition)


ADMIN = (
    ("job_state", ["state", "id"]),
    ("job_queue", ["queue", "state", "id"]),
    ("job_kind", ["kind", "id"]),
)


class Migration(migrations.Migration):
    dependencies = [("anole_jobs", "0010_limited_claim")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                operation
                for suffix, fields in ADMIN
                for operation in (
                    migrations.RemoveIndex(model_name="job", name=index_name(PREFIX, suffix)),
                    migrations.AddIndex(model_name="job", index=_admin(suffix, fields)),
                )
            ],
            database_operations=[RunFrozenSQL("0011_enqueue_indexes")],
        ),
    ]
