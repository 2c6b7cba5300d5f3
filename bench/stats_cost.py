"""What the statistics trigger costs the hot paths of the SQL stores: the same store calls with
the trigger and without it, interleaved in one process (the job-count triggers stay on in
both, as in production).

    .venv/bin/python bench/stats_cost.py [--store sqlite,postgres] [--rounds 5] [--jobs 5000]
                                         [--no-sync]

Each round, for each configuration, times `store.insert` of `--jobs` jobs in batches of 1,000,
single inserts, and claim 10 + complete rounds over the same jobs (`counts_cost.one_round`),
then deletes them and the counters. It prints the median µs per job of each and the ratio
on ÷ off per round. ``--no-sync`` takes the commits' disk waits out (see counts_cost.py).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Importing counts_cost configures Django (its settings, databases and setup) for this script.
counts_cost = importlib.import_module("bench.counts_cost")

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from anole_jobs.conf import parse  # noqa: E402
from anole_jobs.stores.database import open_database_store  # noqa: E402
from anole_jobs.stores.database.ddl import stat_table  # noqa: E402
from bench.common import scratch_postgres  # noqa: E402
from bench.schema_switches import stat_trigger  # noqa: E402


def set_trigger(alias: str, on: bool) -> None:
    """The statistics on or off: the trigger, and PostgreSQL's claim and finish functions with
    or without their own statistics."""
    vendor = connections[alias].vendor
    with connections[alias].cursor() as cursor:
        for statement in stat_trigger(vendor, on=on):
            cursor.execute(statement)


def measure(name: str, rounds: int, n: int) -> None:
    alias = counts_cost.ALIASES[name]
    call_command("migrate", database=alias, verbosity=0)
    store = open_database_store(alias, parse({"STORE": {"database": alias}, "RUN": "manual"}))
    counts_cost.one_round(store, alias, min(n, 1000))  # warm up
    results: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for index in range(rounds):
        for on in (True, False) if index % 2 == 0 else (False, True):
            set_trigger(alias, on)
            results[on].append(counts_cost.one_round(store, alias, n))
            with connections[alias].cursor() as cursor:
                cursor.execute(f'DELETE FROM "{stat_table("anole_jobs_")}"')
    set_trigger(alias, True)
    sync = ", commits not waiting for the disk" if counts_cost.NO_SYNC else ""
    print(f"\n{name}: {rounds} rounds of {n:,} jobs, statistics trigger on and off{sync}")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--no-sync", action="store_true", help="commits do not wait for disk")
    options = parser.parse_args()
    stores = [s.strip() for s in options.store.split(",") if s.strip()]
    with scratch_postgres("postgres" in stores, counts_cost.PG_DATABASE):
        for name in stores:
            measure(name, options.rounds, options.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
