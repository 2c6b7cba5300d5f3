"""What every part of the bench shares: run sizes, deadlines, logging, rate measurement,
percentiles, CPU accounting from /proc, and the description of this machine.

Nothing here imports Django or a store: the parent process (which never configures Django)
uses it as much as the per-store children do.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
STORES = ("memory", "sqlite", "postgres", "redis")
QUEUE = "default"
CONCURRENCY = 10
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass(frozen=True)
class Sizes:
    single: int  # jobs.enqueue, one at a time
    many: int  # jobs.enqueue_many
    batch: int  # enqueue_many batch size
    step: int  # step-driven work
    runtime: int  # runjobs work
    latency: int  # idle latency samples
    latency_budget: float  # seconds: idle sampling stops early (stores that only poll)
    backlog: int  # the backlog behind the under-load latency probes
    growth_finished: int  # finished jobs in the table for the growth scenario
    growth_backlog: int  # available jobs in the table for the growth scenario
    growth_rounds: int  # claim+complete rounds timed per table shape
    baseline_seconds: float
    repeat: int  # how many times each throughput figure is measured (the range is reported)
    store_timeout: float  # the whole child process


FULL = Sizes(
    single=2_000,
    many=20_000,
    batch=1_000,
    step=5_000,
    runtime=10_000,
    latency=200,
    latency_budget=30.0,
    backlog=20_000,
    growth_finished=1_000_000,
    growth_backlog=100_000,
    growth_rounds=300,
    baseline_seconds=0.5,
    repeat=3,
    store_timeout=1_500.0,
)
QUICK = Sizes(
    single=100,
    many=1_000,
    batch=500,
    step=200,
    runtime=1_000,
    latency=10,
    latency_budget=2.0,
    backlog=500,
    growth_finished=2_000,
    growth_backlog=1_000,
    growth_rounds=20,
    baseline_seconds=0.1,
    repeat=1,
    store_timeout=60.0,
)


@dataclass(frozen=True)
class Options:
    """What the command line asked of every child."""

    poll_interval: float = 0.02
    profile_dir: str | None = None
    diagnose: bool = False
    extra: dict[str, str] = field(default_factory=dict)


@contextmanager
def scratch_postgres(needed: bool, name: str) -> Iterator[None]:
    """The one-process cost scripts' PostgreSQL database `name` (at 127.0.0.1:5432, user
    postgres), when `needed`: created before the block; after it, even when a measure raised,
    every Django connection is closed and the database dropped."""
    import psycopg
    from django.db import connections

    def admin(statement: str) -> None:
        with psycopg.connect(dbname="postgres", host="127.0.0.1", user="postgres") as session:
            session.autocommit = True
            session.execute(statement)

    if needed:
        admin(f'CREATE DATABASE "{name}"')
    try:
        yield
    finally:
        connections.close_all()
        if needed:
            admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Deadline:
    """A point in time a wait must not pass; `check` raises TimeoutError naming the wait."""

    def __init__(self, seconds: float, what: str) -> None:
        self.at = time.perf_counter() + seconds
        self.what = what

    def left(self) -> float:
        return self.at - time.perf_counter()

    def check(self, detail: str = "") -> None:
        if time.perf_counter() > self.at:
            raise TimeoutError(f"deadline passed: {self.what} {detail}".strip())


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


def rate_for(seconds: float, call: Callable[[int], Any]) -> float:
    """Calls per second of `call(i)` over about `seconds` (after a few warm-up calls)."""
    for i in range(10):
        call(i)
    count, began = 0, time.perf_counter()
    end = began + seconds
    while True:
        for _ in range(50):
            call(count)
            count += 1
        now = time.perf_counter()
        if now >= end:
            return count / (now - began)


def thread_ping_pong(seconds: float) -> float:
    """Round trips per second between two threads through queues: the least a worker pool
    pays to hand a job to a slot thread and hear back (the memory store has no I/O)."""
    import queue

    ping: queue.SimpleQueue[int | None] = queue.SimpleQueue()
    pong: queue.SimpleQueue[int] = queue.SimpleQueue()

    def echo() -> None:
        while (item := ping.get()) is not None:
            pong.put(item)

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()

    def round_trip(i: int) -> None:
        ping.put(i)
        pong.get()

    try:
        return rate_for(seconds, round_trip)
    finally:
        ping.put(None)
        thread.join(5)


def latency_summary(samples: list[float], lost: int) -> dict[str, Any]:
    if not samples:
        return {"n": 0, "lost": lost}
    return {
        "n": len(samples),
        "lost": lost,
        "p50": percentile(samples, 50),
        "p99": percentile(samples, 99),
        "max": max(samples),
    }


# -- CPU accounting --------------------------------------------------------------------------


def process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` (all threads), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_rss(pid: int) -> int | None:
    """Resident set size of `pid` in bytes, from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


SERVER_PROCESSES = {"postgres": ("postgres",), "redis": ("redis-server",)}


def server_cpu(store: str) -> float:
    """CPU seconds of the store's server processes (every PostgreSQL backend, redis-server)."""
    names = SERVER_PROCESSES.get(store)
    if not names:
        return 0.0
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() not in names:
                continue
        except OSError:
            continue
        total += process_cpu(int(entry.name)) or 0.0
    return total


def machine_cpu() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(values) - idle) / tick, sum(values) / tick


def cpu_snapshot(store: str, worker_pid: int | None) -> dict[str, Any]:
    bench = process_cpu(os.getpid()) or 0.0
    worker = process_cpu(worker_pid) if worker_pid not in (None, os.getpid()) else 0.0
    return {
        "bench": bench,
        "worker": worker or 0.0,
        "server": server_cpu(store),
        "machine": machine_cpu(),
    }


def cpu_report(began: dict[str, Any], ended: dict[str, Any], seconds: float, jobs: int) -> dict:
    """Cores used over the window by the worker, the bench process, the store's server and
    everything else on the machine (other users of this shared machine included)."""
    out: dict[str, Any] = {"seconds": seconds}
    for key in ("worker", "bench", "server"):
        out[f"{key}_cores"] = (ended[key] - began[key]) / seconds if seconds else None
    out["worker_cpu_seconds"] = ended["worker"] - began["worker"]
    if out["worker_cpu_seconds"] == 0:  # in-process workers: the bench process did it all
        out["worker_cpu_seconds"] = ended["bench"] - began["bench"]
    out["worker_cpu_us_per_job"] = 1e6 * out["worker_cpu_seconds"] / jobs if jobs else None
    if began["machine"] is not None and ended["machine"] is not None and seconds:
        busy = ended["machine"][0] - began["machine"][0]
        total = ended["machine"][1] - began["machine"][1]
        out["machine_busy"] = busy / total if total else None
        out["other_cores"] = max(
            0.0, busy / seconds - out["worker_cores"] - out["bench_cores"] - out["server_cores"]
        )
    return out


# -- the machine -----------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    """Cores, load, platform and the versions of everything measured (parent process)."""
    import sqlite3

    import django

    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "loadavg": os.getloadavg(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "django": django.get_version(),
        "sqlite": sqlite3.sqlite_version,
    }
    try:
        import psycopg

        info["psycopg"] = psycopg.__version__
        with psycopg.connect(dbname="postgres", connect_timeout=3, **PG) as conn:  # type: ignore[arg-type]
            row = conn.execute("SHOW server_version").fetchone()
            info["postgresql"] = row[0] if row else "?"
    except Exception as exc:  # noqa: BLE001 - reported in the header
        info["postgresql"] = f"unavailable ({type(exc).__name__})"
    try:
        import redis

        info["redis-py"] = redis.__version__
        client = redis.Redis.from_url(REDIS_URL, socket_timeout=3)
        info["redis"] = client.info("server")["redis_version"]
        client.close()
    except Exception as exc:  # noqa: BLE001 - reported in the header
        info["redis"] = f"unavailable ({type(exc).__name__})"
    info["commit"] = git_commit()
    return info


def git_commit() -> str:
    """The short commit of the checkout, ``+dirty`` when anole_jobs/ has changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "anole_jobs"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"
    return head + ("+dirty" if dirty else "")
