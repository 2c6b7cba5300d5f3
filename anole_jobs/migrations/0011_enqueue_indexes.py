"""Fewer index entries per enqueued and claimed job (docs/database.md, "Schema"): the admin
indexes by queue and by kind leave out the jobs waiting to be claimed and the running ones,
which the claim and rescue indexes already hold, and the one by state leaves out the running
ones; on PostgreSQL the unique constraint on ``unique_lock`` becomes a partial unique index of
the jobs holding a key. SQLite keeps its constraint (dropping one rebuilds the table, and
the count triggers would go with it).

Like 0001, the names follow ``TABLE_PREFIX`` and ``MIGRATE=False`` makes it change nothing
(``anole_jobs.sql(vendor, prefix)`` has its DDL after the line
``-- enqueue indexes (migration 0011)``). The indexes are rebuilt without ``CONCURRENTLY``:
on a large job table, writes to it wait while they build."""

from django.db import migrations, models

from anole_jobs.stores.database.ddl import (
    HOT_STATES,
    configured,
    index_name,
    tables,
    unique_lock_name,
)

PREFIX, MIGRATE = configured()
TABLES = tables(PREFIX)
NAME = unique_lock_name(PREFIX)


def partial_unique_lock(apps: object, schema_editor: object) -> None:
    connection = schema_editor.connection  # type: ignore[attr-defined]
    if not MIGRATE or connection.vendor != "postgresql":
        return
    schema_editor.execute(f'ALTER TABLE "{TABLES.job}" DROP CONSTRAINT "{NAME}"')  # type: ignore[attr-defined]
    schema_editor.execute(  # type: ignore[attr-defined]
        f'CREATE UNIQUE INDEX "{NAME}" ON "{TABLES.job}" ("unique_lock")'
        ' WHERE "unique_lock" IS NOT NULL'
    )


def full_unique_lock(apps: object, schema_editor: object) -> None:
    connection = schema_editor.connection  # type: ignore[attr-defined]
    if not MIGRATE or connection.vendor != "postgresql":
        return
    schema_editor.execute(f'DROP INDEX "{NAME}"')  # type: ignore[attr-defined]
    schema_editor.execute(  # type: ignore[attr-defined]
        f'ALTER TABLE "{TABLES.job}" ADD CONSTRAINT "{NAME}" UNIQUE ("unique_lock")'
    )


def _admin(suffix: str, fields: list[str]) -> models.Index:
    # The (state, id) index keeps the available jobs: a list of them reads it newest first.
    condition = (
        ~models.Q(state="running") if suffix == "job_state" else ~models.Q(state__in=list(HOT_STATES))
    )
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
                migrations.RemoveConstraint(model_name="job", name=NAME),
                migrations.AddConstraint(
                    model_name="job",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("unique_lock__isnull", False)),
                        fields=("unique_lock",),
                        name=NAME,
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(partial_unique_lock, full_unique_lock)],
        ),
        *(
            operation
            for suffix, fields in ADMIN
            for operation in (
                migrations.RemoveIndex(model_name="job", name=index_name(PREFIX, suffix)),
                migrations.AddIndex(model_name="job", index=_admin(suffix, fields)),
            )
        ),
    ]
