"""Procrastinate (PostgreSQL) through the comparison harness: `Task.defer`, `batch_defer`,
and ONE `procrastinate worker --concurrency 10`. Its own database, created and dropped here."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import procrastinate

from bench.peers import harness

DB = os.environ.get("ANOLE_PEER_PG_DB", "anole_peers_procrastinate")
app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=f"{harness.PG_DSN} dbname={DB}"),
)


@app.task(name="noop")
def noop(n: int) -> None:
    return None


def build(args: argparse.Namespace) -> harness.Peer:
    import psycopg

    db = f"anole_peers_{args.tag}_procrastinate"
    os.environ["ANOLE_PEER_PG_DB"] = db
    with psycopg.connect(f"{harness.PG_DSN} dbname=postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
        conn.execute(f'CREATE DATABASE "{db}"')
    import importlib

    module = importlib.import_module("bench.peers.procrastinate_peer")  # as the worker does
    local, task = module.app, module.noop
    local.open()
    local.schema_manager.apply_schema()
    counter = psycopg.connect(f"{harness.PG_DSN} dbname={db}", autocommit=True)

    def unfinished() -> int:
        row = counter.execute(
            "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')"
        ).fetchone()
        return int(row[0]) if row else 0

    def enqueue_many(n: int) -> None:
        for start in range(0, n, 1_000):
            task.batch_defer(*({"n": i} for i in range(start, min(n, start + 1_000))))

    def teardown() -> None:
        counter.close()
        local.close()
        with psycopg.connect(f"{harness.PG_DSN} dbname=postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')

    from importlib.metadata import version

    return harness.Peer(
        name="Procrastinate",
        store="postgres",
        version=version("procrastinate"),
        enqueue_one=lambda i: task.defer(n=i),
        enqueue_many=enqueue_many,
        bulk_api="Task.batch_defer",
        unfinished=unfinished,
        clear=lambda: counter.execute("TRUNCATE procrastinate_jobs CASCADE") and None,
        worker_argv=[
            str(Path(sys.executable).parent / "procrastinate"),
            "--app=bench.peers.procrastinate_peer.app",
            "worker",
            "--concurrency=10",
        ],
        worker_env={"ANOLE_PEER_PG_DB": db},
        concurrency="10 (asyncio)",
        teardown=teardown,
    )


if __name__ == "__main__":
    harness.main(build)
