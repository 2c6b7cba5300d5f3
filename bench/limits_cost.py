"""What a claim within a queue's limits costs against a plain claim: the same store calls,
interleaved in one process.

    .venv/bin/python bench/limits_cost.py [--store sqlite,postgres] [--rounds 5] [--jobs 2000]
                                          [--no-sync]

Each round, for each configuration (no limits, `global_concurrency`, `global_concurrency` with
a `rate_limit`, `global_concurrency` with a `partition`), inserts `--jobs` jobs and claims them
10 at a time straight through the store, one claim a second by the clock passed in, finishing
each batch before the next claim (so few jobs run, as under a limit; the limits are wide enough
never to hold a job back), and times the claims only. It prints the median µs per claim of
each configuration and the ratio to the plain claim of the same round (min–max over the
rounds). ``--no-sync`` takes the commits' disk
waits out (see counts_cost.py). PostgreSQL needs a server at 127.0.0.1:5432 (user postgres);
the script creates and drops its own database.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Importing counts_cost configures Django (its settings, databases and setup) for this script.
counts_cost = importlib.import_module("bench.counts_cost")

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from anole_jobs.conf import parse  # noqa: E402
from anole_jobs.limits import Limits, RateLimit  # noqa: E402
from anole_jobs.stores.base import Finish  # noqa: E402
from anole_jobs.stores.database import open_database_store  # noqa: E402
from bench.common import scratch_postgres  # noqa: E402

NOW = counts_cost.NOW
#: Wide limits: they are checked at every claim and never hold a job back.
CONFIGURATIONS: dict[str, Limits | None] = {
    "none": None,
    "global_concurrency": Limits(global_concurrency=1000),
    "+ rate_limit": Limits(
        global_concurrency=1000, rate_limit=RateLimit(100, timedelta(seconds=1))
    ),
    "+ partition": Limits(global_concurrency=1000, partition=("n",)),
}


def claim_round(store: Any, alias: str, limits: Limits | None, n: int) -> float:
    """µs per claim of 10 (mean over the round)."""
    for start in range(0, n, 1000):
        store.insert([counts_cost.new_job(i) for i in range(start, min(n, start + 1000))])
    spent, claims = 0.0, 0
    while True:
        # A claim a second: a rate window holds the claims of its last two periods, as live.
        now = NOW + timedelta(seconds=claims)
        lease_until = now + timedelta(minutes=5)
        began = time.perf_counter()
        if limits is None:
            jobs = store.claim(
                "default", kinds=None, limit=10, now=now, lease_until=lease_until, worker="c"
            )
        else:
            jobs = store.claim_limited(
                "default",
                limits=limits,
                kinds=None,
                limit=10,
                now=now,
                lease_until=lease_until,
                worker="c",
            ).jobs
        spent += time.perf_counter() - began
        if not jobs:
            break
        claims += 1
        store.finish([Finish(run=c.run, state="completed", at=now) for c in jobs])
    with connections[alias].cursor() as cursor:
        cursor.execute('DELETE FROM "anole_jobs_job"')
        cursor.execute('DELETE FROM "anole_jobs_limit"')
        if connections[alias].vendor == "postgresql":
            cursor.execute('VACUUM ANALYZE "anole_jobs_job"')
    store.fold_counts()
    return spent / max(claims, 1) * 1e6


def measure(name: str, rounds: int, n: int) -> None:
    alias = counts_cost.ALIASES[name]
    call_command("migrate", database=alias, verbosity=0)
    store = open_database_store(alias, parse({"STORE": {"database": alias}, "RUN": "manual"}))
    for limits in CONFIGURATIONS.values():  # warm up every statement
        claim_round(store, alias, limits, 200)
    times: dict[str, list[float]] = {key: [] for key in CONFIGURATIONS}
    keys = list(CONFIGURATIONS)
    for index in range(rounds):
        for key in keys if index % 2 == 0 else reversed(keys):
            times[key].append(claim_round(store, alias, CONFIGURATIONS[key], n))
    sync = ", commits not waiting for the disk" if counts_cost.NO_SYNC else ""
    print(f"\n{name}: {rounds} rounds of {n:,} jobs claimed 10 at a time{sync}")
    print(f"{'µs per claim':<22}{'median':>10}   ÷ no limits (per round)")
    for key in keys:
        ratios = [a / b for a, b in zip(times[key], times["none"], strict=True)]
        print(
            f"{key:<22}{statistics.median(times[key]):>10.1f}"
            f"   {min(ratios):.2f}–{max(ratios):.2f}x (median {statistics.median(ratios):.2f}x)"
        )
    store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--no-sync", action="store_true", help="commits do not wait for disk")
    options = parser.parse_args()
    stores = [s.strip() for s in options.store.split(",") if s.strip()]
    with scratch_postgres("postgres" in stores, counts_cost.PG_DATABASE):
        for name in stores:
            measure(name, options.rounds, options.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
