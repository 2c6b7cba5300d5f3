"""The worker's Python per no-op job, in CPU time (not wall clock), so a loaded machine moves
it little: `jobs.start()` in this process on the memory store (or SQLite) works N jobs
enqueued beforehand, with the per-job INFO log line going to a handler as `runjobs` sets it
up (to /dev/null) and the metrics on, as in `python -m bench`.

    .venv/bin/python bench/job_cost.py [--store memory|sqlite] [--jobs 3000] [--rounds 5]
                                       [--metrics on|off] [--log info|warning]

Prints one line: the median CPU µs per job of this process over the rounds (after one
warm-up round), and each round's figure. An A/B of two code trees runs this script from each
tree in turn (A, B, A, B, ...) and compares the medians:

    for i in 1 2 3; do (cd A && python bench/job_cost.py); (cd B && python bench/job_cost.py); done

CPU time still moves with what the other core does; instruction counts do not (repeatable to
about 0.2%): run one measured round under callgrind and read its total,

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.out \
        python bench/job_cost.py --rounds 1 --jobs 1000 --callgrind
    grep ^totals: /tmp/cg.out          # instructions for the 1,000 jobs

The enqueueing is not counted; what is counted is the worker from `jobs.start()` until the
last job completed (its claims, runs, writes, log lines, events and metrics), plus this
thread's polling of `jobs.counts()` every 20 ms.
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


def configure(store: str, metrics: bool, mode: str = "runtime") -> None:
    settings.ANOLE_JOBS = {
        "STORE": "memory" if store == "memory" else {"database": "default"},
        "RUN": "manual" if mode == "step" else "auto",
        "QUEUES": {"default": {"concurrency": 10}},
        "METRICS": metrics,
    }
    conf.reset()  # a new service (memory: a new, empty store)
    if store == "sqlite":
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM anole_jobs_job")


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
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory")
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
    if options.store == "sqlite":
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
