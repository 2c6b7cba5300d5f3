"""What it costs a plain job's finish that the SQL store finds workflow steps itself: the
store's `finish` of runs it claimed ("mine": it knows they are plain jobs) and of runs another
instance claimed ("elsewhere": its statement leaves the steps' results out, one primary-key
read per row), beside the bare statement it replaced ("old": the finish function given the
whole batch, as when the caller said which results were steps), interleaved in one process.

    .venv/bin/python bench/finish_cost.py [--store postgres,sqlite] [--rounds 8] [--jobs 5000]
                                          [--batch 10] [--no-sync]

Each round, for each way (their order turns), inserts `--jobs` plain jobs, claims them
`--batch` at a time and finishes each claim's batch, timing the finishes alone; then deletes
the jobs. It prints the median µs per finished job of each way and its ratio to "old" per
round (min–max, median). PostgreSQL needs a server at 127.0.0.1:5432 (user
postgres); the script creates and drops its own database. `--no-sync` takes the commits' disk
waits out (PostgreSQL `synchronous_commit=off`, SQLite `synchronous=OFF`): the harshest view
of what the statement adds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

_TMP = tempfile.mkdtemp(prefix="anole_finish_cost_")
NO_SYNC = "--no-sync" in sys.argv
PG_DATABASE = f"anole_finish_cost_{os.getpid()}"
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


def old_finish(store: Any) -> Callable[[Sequence[Finish]], Any]:
    """The plain finish as it was: the whole batch to the finish statement, in autocommit."""

    def finish(results: Sequence[Finish]) -> None:
        with store.writing(), store.cursor() as cursor:
            store.finish_rows(cursor, results)

    return finish


def one_round(store: Any, alias: str, finish: Callable[..., Any], n: int, batch: int) -> float:
    jobs = [new_job(i) for i in range(n)]
    for start in range(0, n, 1000):
        store.insert(jobs[start : start + 1000])
    spent, done = 0.0, 0
    while True:
        claimed = store.claim(
            "default",
            kinds=None,
            limit=batch,
            now=NOW,
            lease_until=NOW + timedelta(minutes=5),
            worker="cost",
        )
        if not claimed:
            break
        results = [Finish(run=c.run, state="completed", at=NOW) for c in claimed]
        began = time.perf_counter()
        finish(results)
        spent += time.perf_counter() - began
        done += len(claimed)
    with connections[alias].cursor() as cursor:
        cursor.execute('DELETE FROM "anole_jobs_job"')
        if connections[alias].vendor == "postgresql":
            cursor.execute('VACUUM ANALYZE "anole_jobs_job"')
    store.fold_counts()
    return spent / done * 1e6


def measure(name: str, rounds: int, n: int, batch: int) -> None:
    alias = ALIASES[name]
    call_command("migrate", database=alias, verbosity=0)
    store = open_database_store(alias, parse({"STORE": {"database": alias}, "RUN": "manual"}))
    elsewhere = open_database_store(alias, parse({"STORE": {"database": alias}, "RUN": "manual"}))
    ways = {"mine": store.finish, "elsewhere": elsewhere.finish, "old": old_finish(store)}
    for way in ways.values():
        one_round(store, alias, way, min(n, 1000), batch)  # warm up
    results: dict[str, list[float]] = {way: [] for way in ways}
    order = list(ways)
    for index in range(rounds):
        for way in order[index % 3 :] + order[: index % 3]:
            results[way].append(one_round(store, alias, ways[way], n, batch))
    sync = ", commits not waiting for the disk" if NO_SYNC else ""
    print(
        f"\n{name}: {rounds} rounds of {n:,} plain jobs finished {batch} at a time, "
        f"the ways interleaved{sync}"
    )
    print(f"{'µs per job':<16}{'median':>10}   ÷ old (per round)")
    for way in ways:
        ratios = [a / b for a, b in zip(results[way], results["old"], strict=True)]
        print(
            f"{way:<16}{statistics.median(results[way]):>10.1f}"
            f"   {min(ratios):.2f}–{max(ratios):.2f}x (median {statistics.median(ratios):.2f}x)"
        )
    store.close()
    elsewhere.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--store", default="postgres,sqlite")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--no-sync", action="store_true", help="commits do not wait for disk")
    options = parser.parse_args()
    stores = [s.strip() for s in options.store.split(",") if s.strip()]
    with scratch_postgres("postgres" in stores, PG_DATABASE):
        for name in stores:
            measure(name, options.rounds, options.jobs, options.batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
