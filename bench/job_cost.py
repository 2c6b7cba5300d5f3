"""The worker's Python per no-op job, in CPU time (not wall clock), so a loaded machine moves
it little: `jobs.start()` in this process on the memory store (or SQLite) works N jobs
enqueued beforehand, with the per-job INFO log line going to a handler as `runjobs` sets it
up (to /dev/null) and the metrics on, as in `python -m bench`.

    .venv/bin/python bench/job_cost.py [--store memory|sqlite|postgres|redis] [--jobs 3000]
                                       [--rounds 5] [--metrics on|off] [--log info|warning]

PostgreSQL and Redis are reached as `python -m bench` reaches them (ANOLE_BENCH_PG_HOST,
_PORT, _USER; ANOLE_BENCH_REDIS): on PostgreSQL in a database ``anole_job_cost`` made anew
for each run, on Redis under the key prefix ``anole_job_cost:`` (deleted before each round).

Prints one line: the median CPU µs per job of this process over the rounds (after one
warm-up round), and each round's figure. An A/B of two code trees runs this script from each
tree in turn (A, B, A, B, ...) and compares the medians:

    for i in 1 2 3; do (cd A && python bench/job_cost.py); (cd B && python bench/job_cost.py); done

CPU time still moves with what the other core does; instruction counts do not (repeatable to
about 0.2%): run one measured round under callgrind and read its total,

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.out \
        python bench/job_cost.py --rounds 1 --jobs 1000 --callgrind
    grep ^totals: /tmp/cg.out          # instructions for the 1,000 jobs

The CPU time counts the worker from `jobs.start()` until the last job completed (its claims,
runs, writes, log lines, events and metrics), plus this thread's polling of `jobs.counts()`
every 20 ms. The instruction count covers the same and the round's `enqueue_many` before it
(instrumentation goes on before the round begins).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

_TMP = tempfile.mkdtemp(prefix="anole_job_cost_")
# The store decides the settings, which come before the arguments are parsed.
_STORE = sys.argv[sys.argv.index("--store") + 1] if "--store" in sys.argv[:-1] else "memory"
_REDIS_URL = os.environ.get("ANOLE_BENCH_REDIS", "redis://127.0.0.1:6379/0")
_REDIS_PREFIX = "anole_job_cost:"
_POSTGRES = {
    "ENGINE": "django.db.backends.postgresql",
    "NAME": "anole_job_cost",
    "USER": os.environ.get("ANOLE_BENCH_PG_USER", "postgres"),
    "HOST": os.environ.get("ANOLE_BENCH_PG_HOST", "127.0.0.1"),
    "PORT": os.environ.get("ANOLE_BENCH_PG_PORT", "5432"),
}
settings.configure(
    SECRET_KEY="bench",
    USE_TZ=True,
    INSTALLED_APPS=["anole_jobs"],
    CACHES={
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "jobs": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": _REDIS_URL},
    },
    DATABASES={
        "default": _POSTGRES
        if _STORE == "postgres"
        else {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.path.join(_TMP, "jobs.sqlite3"),
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL;",
            },
        }
    },
    ANOLE_JOBS={"STORE": "memory"},
    LOGGING_CONFIG=None,
)
django.setup()

from anole_jobs import conf, jobs, kind  # noqa: E402


@kind("bench.cost.noop", attempts=3)
@dataclass
class Noop:
    n: int = 0


@jobs.handler(Noop)
def noop(job: Any, args: Noop) -> None:
    return None


_STORES: dict[str, Any] = {
    "memory": "memory",
    "sqlite": {"database": "default"},
    "postgres": {"database": "default"},
    "redis": {"redis": "jobs"},
}


def configure(store: str, metrics: bool, mode: str = "runtime") -> None:
    settings.ANOLE_JOBS = {
        "STORE": _STORES[store],
        "KEY_PREFIX": _REDIS_PREFIX,
        "RUN": "manual" if mode == "step" else "auto",
        "QUEUES": {"default": {"concurrency": 10}},
        "METRICS": metrics,
    }
    conf.reset()  # a new service (memory: a new, empty store)
    if store in ("sqlite", "postgres"):
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM anole_jobs_job")
    if store == "redis":
        import redis

        client = redis.Redis.from_url(_REDIS_URL)
        keys = list(client.scan_iter(f"{_REDIS_PREFIX}*", count=1000))
        for i in range(0, len(keys), 1000):
            client.delete(*keys[i : i + 1000])


def callgrind(command: str) -> None:
    """Under `valgrind --tool=callgrind`: instrumentation on or off (`--instr=on|off`)."""
    subprocess.run(
        ["callgrind_control", command, str(os.getpid())], check=True, capture_output=True
    )


def one_step_round(n: int) -> float:
    """CPU µs per job of `jobs.step()` (the calling thread) working `n` jobs."""
    for i in range(0, n, 1000):
        jobs.enqueue_many([Noop(j) for j in range(i, min(n, i + 1000))])
    cpu = time.process_time()
    ran = 0
    while ran < n:
        ran += len(jobs.step().runs)
    return (time.process_time() - cpu) / n * 1e6


def one_round(n: int) -> float:
    """CPU µs per job of this process while the runtime works `n` jobs enqueued beforehand."""
    for i in range(0, n, 1000):
        jobs.enqueue_many([Noop(j) for j in range(i, min(n, i + 1000))])
    cpu = time.process_time()
    jobs.start()
    try:
        deadline = time.monotonic() + max(60.0, n / 20)
        while jobs.counts().get("default", {}).get("completed", 0) < n:
            if time.monotonic() > deadline:
                raise RuntimeError("the jobs did not complete in time")
            time.sleep(0.02)
        used = time.process_time() - cpu
    finally:
        jobs.stop(drain=False)
    return used / n * 1e6


def line_formatter(pattern: str) -> logging.Formatter:
    """runjobs' formatter (logging's own in a tree from before it had one, for an A/B)."""
    try:
        from anole_jobs.worker.logline import LineFormatter
    except ImportError:
        return logging.Formatter(pattern)
    return LineFormatter(pattern)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=tuple(_STORES), default="memory")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--metrics", choices=("on", "off"), default="on")
    parser.add_argument("--log", choices=("info", "warning"), default="info")
    parser.add_argument("--mode", choices=("runtime", "step"), default="runtime")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="under valgrind --tool=callgrind --instr-atstart=no: count only the measured rounds "
        "(instrumentation on after the warm-up, off at the end); the total is in the output",
    )
    options = parser.parse_args()
    # As runjobs sets it up: the package logger at INFO, one stream handler (here /dev/null)
    # with runjobs' formatter.
    package = logging.getLogger("anole_jobs")
    handler = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 - for the process
    handler.setFormatter(line_formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    package.setLevel(logging.INFO if options.log == "info" else logging.WARNING)
    package.addHandler(handler)
    if options.store == "postgres":
        import psycopg

        with psycopg.connect(
            dbname="postgres",
            user=_POSTGRES["USER"],
            host=_POSTGRES["HOST"],
            port=_POSTGRES["PORT"],
            autocommit=True,
        ) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{_POSTGRES["NAME"]}"')
            admin.execute(f'CREATE DATABASE "{_POSTGRES["NAME"]}"')
    if options.store in ("sqlite", "postgres"):
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
    figures = []
    work = one_step_round if options.mode == "step" else one_round
    for index in range(options.rounds + 1):
        configure(options.store, options.metrics == "on", options.mode)
        if index == 1 and options.callgrind:
            callgrind("--instr=on")
        figure = work(options.jobs)
        if index:  # the first round warms up (imports, caches, label children)
            figures.append(figure)
    if options.callgrind:
        callgrind("--instr=off")
    print(
        f"{statistics.median(figures):.1f} µs/job CPU (median of {len(figures)}; "
        + ", ".join(f"{f:.0f}" for f in figures)
        + f") store={options.store} jobs={options.jobs} metrics={options.metrics}"
        f" log={options.log} mode={options.mode}"
    )


if __name__ == "__main__":
    main()
