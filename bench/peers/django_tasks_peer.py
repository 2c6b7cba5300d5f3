"""django-tasks-db (the database backend of the django.tasks backport) through the
comparison harness, on PostgreSQL or SQLite (``--store``): `Task.enqueue`, no bulk API; ONE
`manage.py db_worker`, which runs one task at a time (concurrency 1)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from bench.peers import harness


def build(args: argparse.Namespace) -> harness.Peer:
    import importlib
    from importlib.metadata import version

    store = args.store or "postgres"
    env = {"ANOLE_PEER_STORE": store, "DJANGO_SETTINGS_MODULE": "bench.peers.django_tasks_settings"}
    db = f"anole_peers_{args.tag}_django_tasks"
    tmp = tempfile.mkdtemp(prefix="anole_peers_")
    if store == "postgres":
        import psycopg

        env["ANOLE_PEER_PG_DB"] = db
        with psycopg.connect(f"{harness.PG_DSN} dbname=postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
            conn.execute(f'CREATE DATABASE "{db}"')
    else:
        env["ANOLE_PEER_SQLITE"] = os.path.join(tmp, "tasks.sqlite3")
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    module = importlib.import_module("bench.peers.django_tasks_jobs")
    from django_tasks_db.models import DBTaskResult

    def enqueue_many(n: int) -> None:
        for i in range(n):
            module.noop.enqueue(i)

    def unfinished() -> int:
        return DBTaskResult.objects.filter(status__in=["READY", "RUNNING"]).count()

    def teardown() -> None:
        from django.db import connections

        connections.close_all()
        if store == "postgres":
            import psycopg

            with psycopg.connect(f"{harness.PG_DSN} dbname=postgres", autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')

    return harness.Peer(
        name="django-tasks-db",
        store=store,
        version=version("django-tasks-db"),
        enqueue_one=module.noop.enqueue,
        enqueue_many=enqueue_many,
        bulk_api="",
        unfinished=unfinished,
        clear=lambda: DBTaskResult.objects.all().delete() and None,
        worker_argv=[
            sys.executable,
            "-m",
            "django",
            "db_worker",
            "--queue-name",
            "*",
            "--interval",
            "0.05",
            "--no-startup-delay",
        ],
        worker_env=env,
        concurrency="1",
        teardown=teardown,
    )


if __name__ == "__main__":
    harness.main(build)
