"""What a debounced `jobs.enqueue` costs against a plain one, on each store, interleaved in one
process.

    .venv/bin/python bench/debounce_cost.py [--store memory,sqlite,postgres,redis]
                                            [--rounds 5] [--jobs 500] [--keys 10]

Each round, for each configuration, times `--jobs` calls of `jobs.enqueue` through the facade
(what an application pays): **plain** (a new job each), **debounced** (a kind declared
with `Debounce(by="key", wait=60)`, over `--keys` key values: after each key's first enqueue
every call folds into its waiting job, the common case of a burst), and **replace**
(`Unique(key=..., on_conflict="replace")` over `--keys` keys: each call cancels the waiting
job of its key and inserts one). The configurations alternate call by call (A/B/C, A/B/C,
...), so a slow moment of the machine hits all of them. It prints the
median µs per enqueue and each configuration's ratio to the plain enqueue of the same round
(min–max over the rounds).
PostgreSQL needs a server at 127.0.0.1:5432 (user postgres) and Redis one at 127.0.0.1:6379;
the script creates and drops its own database and key prefix.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

_TMP = tempfile.mkdtemp(prefix="anole_debounce_cost_")
PG_DATABASE = f"anole_debounce_cost_{os.getpid()}"
REDIS_URL = os.environ.get("ANOLE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
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
                "init_command": "PRAGMA journal_mode=WAL;",
            },
        },
        "pg": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": PG_DATABASE,
            "USER": os.environ.get("ANOLE_BENCH_PG_USER", "postgres"),
            "HOST": os.environ.get("ANOLE_BENCH_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get("ANOLE_BENCH_PG_PORT", "5432"),
        },
    },
    CACHES={
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "jobs": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL},
    },
    ANOLE_JOBS={"STORE": "memory", "RUN": "manual", "METRICS": False},
    LOGGING_CONFIG=None,
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from anole_jobs import Debounce, Unique, jobs, kind  # noqa: E402

STORES: dict[str, Any] = {
    "memory": "memory",
    "sqlite": {"database": "default"},
    "postgres": {"database": "pg"},
    "redis": {"redis": "jobs"},
}
DEBOUNCE = Debounce(by="key", wait=60)


@kind("bench.debounce_cost")
@dataclass
class Touch:
    key: int
    n: int


@kind("bench.debounce_cost.debounced", debounce=DEBOUNCE)
@dataclass
class Debounced:
    key: int
    n: int


def configurations(keys: int) -> dict[str, Any]:
    return {
        "plain": lambda i: jobs.enqueue(Touch(key=i, n=i)),
        "debounced": lambda i: jobs.enqueue(Debounced(key=i % keys, n=i)),
        "replace": lambda i: jobs.enqueue(
            Touch(key=i % keys, n=i),
            unique=Unique(key=f"k{i % keys}", on_conflict="replace"),
        ),
    }


def create_pg() -> None:
    import psycopg

    with psycopg.connect(host="127.0.0.1", user="postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{PG_DATABASE}"')


def drop_pg() -> None:
    import psycopg

    connections["pg"].close()
    with psycopg.connect(host="127.0.0.1", user="postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)')


def run_store(name: str, rounds: int, n: int, keys: int) -> dict[str, list[float]]:
    prefix = f"anole_debounce_cost_{uuid.uuid4().hex[:8]}:"
    config = {"STORE": STORES[name], "RUN": "manual", "METRICS": False, "KEY_PREFIX": prefix}
    if name != "redis":
        del config["KEY_PREFIX"]
    per: dict[str, list[float]] = {}
    with override_settings(ANOLE_JOBS=config):
        if name in ("sqlite", "postgres"):
            call_command("migrate", "anole_jobs", database=STORES[name]["database"], verbosity=0)
        calls = configurations(keys)
        clock = time.perf_counter
        for round_no in range(rounds + 1):  # the first round warms up
            spent = dict.fromkeys(calls, 0.0)
            # Call by call, A/B/C: a slow moment of the machine hits every configuration.
            for i in range(n):
                for label, call in calls.items():
                    began = clock()
                    call(i)
                    spent[label] += clock() - began
            if round_no:
                for label, total in spent.items():
                    per.setdefault(label, []).append(total / n * 1e6)
        if name == "redis":
            client = jobs.service.store.inner.client  # type: ignore[attr-defined]
            for key in client.scan_iter(match=prefix + "*", count=1000):
                client.delete(key)
        jobs.reset()
    return per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="memory,sqlite,postgres,redis")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--keys", type=int, default=10)
    options = parser.parse_args()
    print(f"{os.cpu_count()} cores; {options.jobs} enqueues per configuration and round,")
    print(f"{options.rounds} rounds (after a warm-up), {options.keys} debounce/unique keys")
    print(f"{'store':<9} {'configuration':<11} {'µs/enqueue':>11} {'÷ plain (min–max)':>20}")
    for name in options.store.split(","):
        if name == "postgres":
            create_pg()
        try:
            per = run_store(name, options.rounds, options.jobs, options.keys)
        finally:
            if name == "postgres":
                drop_pg()
        plain = per["plain"]
        for label, values in per.items():
            ratios = [v / p for v, p in zip(values, plain, strict=True)]
            print(
                f"{name:<9} {label:<11} {statistics.median(values):>11.1f}"
                f" {statistics.median(ratios):>8.2f} ({min(ratios):.2f}–{max(ratios):.2f})"
            )


if __name__ == "__main__":
    main()
