"""What a fair claim and a sequenced kind's claim cost against a plain claim: the same store
calls, interleaved in one process (docs/flow-control.md, docs/performance.md).

    .venv/bin/python bench/flow_cost.py [--store memory,sqlite,postgres,redis] [--rounds 5]
                                        [--jobs 2000] [--values 1000] [--no-sync] [--cpu]

Each round, for each configuration, inserts `--jobs` jobs (batches of 1,000) and claims them
10 at a time straight through the store, finishing each batch before the next claim, and
times the claims only (and the inserts, separately):

- ``fair``: a queue with fairness, the jobs spread over `--values` values (all waiting);
- ``sequenced``: a kind with a sequence, the jobs spread over `--values` sequences (each
  sequence's later jobs wait for its first), claimed with sequences kept;

each against as many plain jobs (no fairness, no sequence) in another queue, claimed by the
plain claim, one claim of each in turn (so a busy machine slows both alike). It prints the
median µs per claim of each and the ratio to the plain claims of the same round (min–max over
the rounds), and the ratio of the inserts' times. ``--no-sync`` takes the commits'
disk waits out (see counts_cost.py). PostgreSQL needs a server at 127.0.0.1:5432 (user
postgres), Redis one at 127.0.0.1:6379 (its keys under a prefix of this run, deleted after).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Importing counts_cost configures Django (its settings, databases and setup) for this script.
counts_cost = importlib.import_module("bench.counts_cost")

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from anole_jobs.conf import parse  # noqa: E402
from anole_jobs.limits import Fairness, Limits  # noqa: E402
from anole_jobs.stores.base import Finish, NewJob  # noqa: E402
from anole_jobs.stores.database import open_database_store  # noqa: E402
from bench.common import scratch_postgres  # noqa: E402

NOW = counts_cost.NOW
#: What times a call: the wall clock, or with ``--cpu`` this process's CPU time (the memory
#: store's whole cost, and what a loaded machine's other work does not inflate).
CLOCK = time.process_time if "--cpu" in sys.argv else time.perf_counter
REDIS_URL = os.environ.get("ANOLE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
CONFIGURATIONS = ("plain", "fair", "sequenced")
LIMITS = {
    "plain": None,
    "fair": Limits(fairness=Fairness(("c",))),
    "sequenced": Limits(sequenced=True),
}


def new_job(configuration: str, i: int, values: int) -> NewJob:
    job = counts_cost.new_job(i)
    value = i % values
    if configuration == "fair":
        return replace(job, queue="flow", args={"n": i, "c": value}, fair_key=json.dumps(value))
    if configuration == "sequenced":
        return replace(
            job, queue="flow", args={"n": i, "c": value}, sequence_key=f"bench.seq:{value}"
        )
    return job


def one_round(env: Any, configuration: str, n: int, values: int) -> tuple[float, float, float]:
    """(µs per plain claim of 10, µs per claim of 10 of `configuration`, the ratio of its
    inserts' time per job to the plain ones'): the plain jobs wait in queue "default", the
    others in queue "flow", and the two kinds of claim alternate, one claim each in turn, so
    that both meet the machine in the same state."""
    store = env.store
    spent = {"plain": 0.0, "flow": 0.0}
    for kind, which in (("plain", "plain"), ("flow", configuration)):
        jobs = [new_job(which, i, values) for i in range(n)]
        began = CLOCK()
        for start in range(0, n, 1000):
            store.insert(jobs[start : start + 1000])
        spent[kind + " in"] = CLOCK() - began
    limits = LIMITS[configuration]
    claims = {"plain": 0, "flow": 0}
    done: set[str] = set()
    while len(done) < 2:
        for kind in ("plain", "flow"):
            if kind in done:
                continue
            now = NOW + timedelta(seconds=claims[kind])
            lease_until = now + timedelta(minutes=5)
            began = CLOCK()
            if kind == "plain":
                claimed = store.claim(
                    "default", kinds=None, limit=10, now=now, lease_until=lease_until, worker="c"
                )
            else:
                claimed = store.claim_limited(
                    "flow",
                    limits=limits,
                    kinds=None,
                    limit=10,
                    now=now,
                    lease_until=lease_until,
                    worker="c",
                ).jobs
            spent[kind] += CLOCK() - began
            if not claimed:
                done.add(kind)
                continue
            claims[kind] += 1
            store.finish([Finish(run=c.run, state="completed", at=now) for c in claimed])
    env.clean()
    return (
        spent["plain"] / max(claims["plain"], 1) * 1e6,
        spent["flow"] / max(claims["flow"], 1) * 1e6,
        spent["flow in"] / spent["plain in"],
    )


class DatabaseEnv:
    def __init__(self, name: str) -> None:
        self.alias = counts_cost.ALIASES[name]
        call_command("migrate", database=self.alias, verbosity=0)
        settings = parse({"STORE": {"database": self.alias}, "RUN": "manual"})
        self.store = open_database_store(self.alias, settings)

    def clean(self) -> None:
        with connections[self.alias].cursor() as cursor:
            cursor.execute('DELETE FROM "anole_jobs_job"')
            if connections[self.alias].vendor == "postgresql":
                cursor.execute('VACUUM ANALYZE "anole_jobs_job"')
        self.store.fold_counts()

    def close(self) -> None:
        self.store.close()


class MemoryEnv:
    def __init__(self) -> None:
        from anole_jobs.stores.memory import MemoryStore

        self.store = MemoryStore()

    def clean(self) -> None:
        from anole_jobs.stores.memory import MemoryStore

        self.store = MemoryStore()

    def close(self) -> None:
        pass


class RedisEnv:
    def __init__(self) -> None:
        import redis

        from anole_jobs.stores.redis.store import RedisStore

        self.client = redis.Redis.from_url(REDIS_URL)
        self.prefix = f"anole_flow_cost_{os.getpid()}:"
        self.store = RedisStore(self.client, key_prefix=self.prefix)

    def clean(self) -> None:
        keys = list(self.client.scan_iter(match=self.store.keys.pattern(), count=1000))
        for start in range(0, len(keys), 500):
            self.client.delete(*keys[start : start + 500])

    def close(self) -> None:
        self.clean()


def open_env(name: str) -> Any:
    if name == "memory":
        return MemoryEnv()
    if name == "redis":
        return RedisEnv()
    return DatabaseEnv(name)


def measure(name: str, rounds: int, n: int, values: int) -> None:
    env = open_env(name)
    flows = [c for c in CONFIGURATIONS if c != "plain"]
    for configuration in flows:  # warm up every statement
        one_round(env, configuration, 200, values)
    found: dict[str, list[tuple[float, float, float]]] = {key: [] for key in flows}
    for index in range(rounds):
        for key in flows if index % 2 == 0 else reversed(flows):
            found[key].append(one_round(env, key, n, values))
    env.close()
    sync = ", commits not waiting for the disk" if counts_cost.NO_SYNC else ""
    print(
        f"\n{name}: {rounds} rounds of {n:,} jobs over {values:,} values,"
        f" claimed 10 at a time, claims alternating with plain ones{sync}"
    )
    print(f"{'':<12}{'µs/claim':>10}{'plain':>10}  ÷ plain (per round)           insert ÷ plain")
    for key in flows:
        rows = found[key]
        ratios = [flow / plain for plain, flow, _ in rows]
        inserts = [ratio for _, _, ratio in rows]
        print(
            f"{key:<12}{statistics.median(r[1] for r in rows):>10.1f}"
            f"{statistics.median(r[0] for r in rows):>10.1f}"
            f"  {min(ratios):.2f}–{max(ratios):.2f}x (median {statistics.median(ratios):.2f}x)"
            f"      {statistics.median(inserts):.2f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="memory,sqlite,postgres,redis")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--values", type=int, default=1000)
    parser.add_argument("--no-sync", action="store_true", help="commits do not wait for disk")
    parser.add_argument("--cpu", action="store_true", help="time this process's CPU only")
    options = parser.parse_args()
    stores = [s.strip() for s in options.store.split(",") if s.strip()]
    with scratch_postgres("postgres" in stores, counts_cost.PG_DATABASE):
        for name in stores:
            measure(name, options.rounds, options.jobs, options.values)
    return 0


if __name__ == "__main__":
    sys.exit(main())
