"""What the job-count triggers cost the hot paths: the same store calls with the triggers and
without them, interleaved in one process.

    .venv/bin/python bench/counts_cost.py [--store sqlite,postgres] [--rounds 5] [--jobs 5000]
                                          [--no-sync]
    .venv/bin/python bench/counts_cost.py --statements [--rounds 12]

Each round, for each configuration (triggers on, triggers off), times `store.insert` of
`--jobs` jobs in batches of 1,000 (what `enqueue_many` does after building the jobs), single
`store.insert` calls (one `enqueue` each), and claim 10 + complete rounds over the same jobs (a
worker's two statements), then deletes them. It prints the median µs per job of each and the
ratio on ÷ off per round (min–max). "Off" drops the triggers and keeps the count table, so
`counts()` is wrong during it; the script recreates them at the end. PostgreSQL needs a server
at 127.0.0.1:5432 (user postgres); the script creates and drops its own database.

A commit waits for the disk, which on a shared machine varies more than the triggers cost.
`--no-sync` takes it out (PostgreSQL `synchronous_commit=off`, SQLite `synchronous=OFF`), so
the ratio shows the statements' own cost: the harshest view of what the triggers add.

`--statements` times the statements alone, without round trips or commits, interleaved in one
session: PostgreSQL's execution time from EXPLAIN ANALYZE (in a scratch schema), SQLite's in
process; each configuration's first call after the DDL is a warm-up (it plans the trigger's
statement, which a real session does once).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

_TMP = tempfile.mkdtemp(prefix="anole_counts_cost_")
NO_SYNC = "--no-sync" in sys.argv
PG_DATABASE = f"anole_counts_cost_{os.getpid()}"
settings.configure(
    SECRET_KEY="bench",
    USE_TZ=True,
    INSTALLED_APPS=["anole_jobs"],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.path.join(_TMP, "jobs.sqlite3"),
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL;"
                + (" PRAGMA synchronous=OFF;" if NO_SYNC else ""),
            },
        },
        "pg": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": PG_DATABASE,
            "USER": os.environ.get("ANOLE_BENCH_PG_USER", "postgres"),
            "HOST": os.environ.get("ANOLE_BENCH_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("ANOLE_BENCH_PG_PORT", "5432"),
            "OPTIONS": {"options": "-c synchronous_commit=off"} if NO_SYNC else {},
        },
    },
    ANOLE_JOBS={"STORE": "memory"},
    LOGGING_CONFIG=None,
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from anole_jobs.conf import parse  # noqa: E402
from anole_jobs.stores.base import Finish, NewJob  # noqa: E402
from anole_jobs.stores.database import open_database_store  # noqa: E402
from bench.common import scratch_postgres  # noqa: E402
from bench.schema_switches import count_triggers  # noqa: E402

NOW = datetime(2030, 1, 1, tzinfo=UTC)
ALIASES = {"sqlite": "default", "postgres": "pg"}


def new_job(i: int) -> NewJob:
    return NewJob(
        kind="bench.noop",
        queue="default",
        args={"n": i},
        meta={},
        priority=0,
        max_attempts=3,
        state="available",
        scheduled_at=NOW,
        created_at=NOW,
    )


def set_triggers(alias: str, on: bool) -> None:
    connection = connections[alias]
    prefix = "anole_jobs_"
    statements = count_triggers(connection.vendor, on=on, prefix=prefix)
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def one_round(store: Any, alias: str, n: int) -> dict[str, float]:
    jobs = [new_job(i) for i in range(n)]
    began = time.perf_counter()
    for start in range(0, n, 1000):
        store.insert(jobs[start : start + 1000])
    batch = (time.perf_counter() - began) / n
    began = time.perf_counter()
    ones = min(n, 500)
    for job in jobs[:ones]:
        store.insert([job])
    single = (time.perf_counter() - began) / ones
    began, done = time.perf_counter(), 0
    while True:
        claimed = store.claim(
            "default",
            kinds=None,
            limit=10,
            now=NOW,
            lease_until=NOW + timedelta(minutes=5),
            worker="cost",
        )
        if not claimed:
            break
        store.finish([Finish(run=c.run, state="completed", at=NOW) for c in claimed])
        done += len(claimed)
    work = (time.perf_counter() - began) / done
    with connections[alias].cursor() as cursor:
        cursor.execute('DELETE FROM "anole_jobs_job"')
        if connections[alias].vendor == "postgresql":
            cursor.execute('VACUUM ANALYZE "anole_jobs_job"')
            cursor.execute('VACUUM "anole_jobs_count"')
    store.fold_counts()
    return {"enqueue_many": batch * 1e6, "enqueue": single * 1e6, "claim+complete": work * 1e6}


def measure(name: str, rounds: int, n: int) -> None:
    alias = ALIASES[name]
    call_command("migrate", database=alias, verbosity=0)
    store = open_database_store(alias, parse({"STORE": {"database": alias}, "RUN": "manual"}))
    one_round(store, alias, min(n, 1000))  # warm up
    results: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for index in range(rounds):
        for on in (True, False) if index % 2 == 0 else (False, True):
            set_triggers(alias, on)
            results[on].append(one_round(store, alias, n))
    set_triggers(alias, True)
    sync = ", commits not waiting for the disk" if NO_SYNC else ""
    print(f"\n{name}: {rounds} rounds of {n:,} jobs, triggers on and off interleaved{sync}")
    print(f"{'µs per job':<16}{'on (median)':>12}{'off (median)':>14}   on ÷ off (per round)")
    for key in ("enqueue_many", "enqueue", "claim+complete"):
        on = [r[key] for r in results[True]]
        off = [r[key] for r in results[False]]
        ratios = [a / b for a, b in zip(on, off, strict=True)]
        print(
            f"{key:<16}{statistics.median(on):>12.1f}{statistics.median(off):>14.1f}"
            f"   {min(ratios):.2f}–{max(ratios):.2f}x (median {statistics.median(ratios):.2f}x)"
        )
    store.close()


STATEMENTS = {
    "insert 1,000": (
        "INSERT INTO anole_jobs_job (kind, queue, state, args, meta, errors, priority, attempt,"
        " max_attempts, claim_token, created_at, scheduled_at, unique_scope)"
        " SELECT 'k', 'default', 'available', {args}, '{{}}', '[]', 0, 0, 3, 0, {now}, {now},"
        " 'live' FROM {rows}"
    ),
    "claim 10": (
        "UPDATE anole_jobs_job SET state = 'running', attempt = attempt + 1,"
        " claim_token = claim_token + 1 WHERE id IN (SELECT id FROM anole_jobs_job"
        " WHERE state = 'available' AND queue = 'default'"
        " ORDER BY priority DESC, scheduled_at, id LIMIT 10)"
    ),
    "complete 10": (
        "UPDATE anole_jobs_job SET state = 'completed', finished_at = {now}"
        " WHERE id IN (SELECT id FROM anole_jobs_job WHERE state = 'running' ORDER BY id LIMIT 10)"
    ),
}


def statement_costs(rounds: int) -> None:
    import re
    import sqlite3

    import psycopg

    from anole_jobs.stores.database.frozen import schema_statements as statements

    def toggle(vendor: str, on: bool) -> list[str]:
        return count_triggers(vendor, on=on)

    def report(name: str, times: dict[tuple[str, bool], list[float]]) -> None:
        print(f"\n{name}: statement time, median of {rounds} rounds x 5 calls (ms)")
        for key in STATEMENTS:
            on, off = statistics.median(times[key, True]), statistics.median(times[key, False])
            print(f"  {key:<14}on {on:8.3f}   off {off:8.3f}   {on / off:.2f}x")

    pg = psycopg.connect(host="127.0.0.1", user="postgres", dbname="postgres", autocommit=True)
    schema = f"anole_counts_cost_{os.getpid()}"
    pg.execute(f'CREATE SCHEMA "{schema}"')
    try:
        pg.execute(f'SET search_path TO "{schema}"')
        for statement in statements("postgresql"):
            pg.execute(statement)
        sql = {
            key: text.format(
                args="jsonb_build_object('n', i)",
                now="now()",
                rows="generate_series(1, 1000) AS i",
            )
            for key, text in STATEMENTS.items()
        }

        def pg_ms(text: str) -> float:
            plan = "\n".join(row[0] for row in pg.execute("EXPLAIN ANALYZE " + text))
            return float(re.search(r"Execution Time: ([\d.]+)", plan).group(1))  # type: ignore[union-attr]

        times: dict[tuple[str, bool], list[float]] = {
            (k, on): [] for k in sql for on in (True, False)
        }
        for index in range(rounds):
            for on in (True, False) if index % 2 == 0 else (False, True):
                for statement in toggle("postgresql", on):
                    pg.execute(statement)
                for key, text in sql.items():
                    pg_ms(text)
                    times[key, on] += [pg_ms(text) for _ in range(5)]
        report("postgres", times)
    finally:
        pg.execute(f'DROP SCHEMA "{schema}" CASCADE')
        pg.close()

    db = sqlite3.connect(os.path.join(_TMP, "statements.sqlite3"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    for statement in statements("sqlite"):
        db.execute(statement)
    numbers = "(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1000)"
    sql = {
        key: text.format(
            args="json_object('n', i)", now="'2030-01-01'", rows=numbers + " SELECT i FROM s)"
        )
        for key, text in STATEMENTS.items()
    }

    def sqlite_ms(text: str) -> float:
        began = time.perf_counter()
        db.execute(text)
        return 1000 * (time.perf_counter() - began)

    times = {(k, on): [] for k in sql for on in (True, False)}
    for index in range(rounds):
        for on in (True, False) if index % 2 == 0 else (False, True):
            for statement in toggle("sqlite", on):
                db.execute(statement)
            for key, text in sql.items():
                sqlite_ms(text)
                times[key, on] += [sqlite_ms(text) for _ in range(5)]
    report("sqlite", times)
    db.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--no-sync", action="store_true", help="commits do not wait for disk")
    parser.add_argument("--statements", action="store_true", help="the statements alone")
    options = parser.parse_args()
    if options.statements:
        statement_costs(options.rounds)
        return 0
    stores = [s.strip() for s in options.store.split(",") if s.strip()]
    with scratch_postgres("postgres" in stores, PG_DATABASE):
        for name in stores:
            measure(name, options.rounds, options.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
