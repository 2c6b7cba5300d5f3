#!/usr/bin/env python
"""Throughput and latency of anole_jobs per store, against a baseline measured in the same run.

    python bench/run.py [--stores memory,sqlite,postgres,redis] [--quick] [--json FILE]
                        [--profile DIR]

For each store a child process (its own Django settings: `bench/settings.py`, chosen by
environment variables) measures:

1. enqueue throughput: `jobs.enqueue` one at a time, and `jobs.enqueue_many` in batches;
2. step-driven work throughput (RUN="manual"): enqueue_many N no-op jobs, time `jobs.step()`
   until all are completed;
3. runtime throughput: ONE `manage.py runjobs` subprocess (concurrency 10, queue default); once
   its start-up line says it is running and it has been idle a moment, the bench enqueues N
   no-op jobs with enqueue_many and polls `jobs.counts()` every 20 ms until all are completed.
   The figure is N / (all completed - end of enqueueing), as the issues define it; the table
   also shows N / (all completed - start of enqueueing) and how many were done by the end of
   enqueueing. The memory store is process-local, so there the runtime is `jobs.start()` in
   the bench process itself (same GIL as the enqueuer);
4. enqueue->start latency (`attempted_at - created_at`, both from the system clock of this one
   machine): idle (one job at a time, each waited for, >= 20 ms apart) and under load (probes
   at priority 100 while a second N-job backlog drains: the runtime's dispatch latency, not the
   backlog's wait);
5. baselines: one raw round trip (SQLite `SELECT 1` through the sqlite3 module, psycopg
   `SELECT 1`, Redis `PING`; memory: a locked dict write), measured before and after the store's
   runs; every figure is also printed as a ratio to it. SQL stores also show a one-row
   INSERT+COMMIT rate (what one transaction per job would cost).

Every wait has a deadline; the runjobs subprocess is always terminated (SIGTERM, then SIGKILL)
and the PostgreSQL database / Redis keys the bench created are removed. `--quick` is a smoke
run (small N) of well under a minute.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
# `python bench/run.py` puts bench/ first on sys.path: replace it with the repository root so
# `bench.settings` and `anole_jobs` import as packages.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != BENCH_DIR]
sys.path.insert(0, str(ROOT))

STORES = ("memory", "sqlite", "postgres", "redis")
PHASES = ("enqueue", "step", "runtime")
QUEUE = "default"
CONCURRENCY = 10
PG = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
REDIS_URL = "redis://127.0.0.1:6379/0"

#: Targets from issues 3 and 4 (runtime work throughput with one runjobs; idle latency).
TARGETS: dict[str, dict[str, tuple[str, float]]] = {
    "postgres": {
        "runtime": (">=", 10_000),
        "latency_idle_p50": ("<=", 5.0),
        "latency_idle_p99": ("<=", 20.0),
    },
    "sqlite": {"runtime": (">=", 5_000)},
    "redis": {"runtime": (">=", 5_000), "latency_idle_p50": ("<=", 5.0)},
}


@dataclass(frozen=True)
class Sizes:
    single: int  # jobs.enqueue, one at a time
    many: int  # jobs.enqueue_many
    batch: int  # enqueue_many batch size
    step: int  # step-driven work
    runtime: int  # runjobs work
    latency: int  # idle latency samples
    latency_budget: float  # seconds: idle sampling stops early (stores that only poll)
    baseline_seconds: float
    store_timeout: float  # the whole child process


FULL = Sizes(
    single=2_000,
    many=20_000,
    batch=1_000,
    step=5_000,
    runtime=20_000,
    latency=200,
    latency_budget=30.0,
    baseline_seconds=0.5,
    store_timeout=900.0,
)
QUICK = Sizes(
    single=100,
    many=2_000,
    batch=1_000,
    step=500,
    runtime=2_000,
    latency=20,
    latency_budget=4.0,
    baseline_seconds=0.1,
    store_timeout=50.0,
)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class Deadline:
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


# =============================================================================================
# The child: one store, Django configured for it.
# =============================================================================================


class StoreBench:
    def __init__(
        self,
        store: str,
        sizes: Sizes,
        tag: str,
        profile_dir: str | None,
        diagnose: bool = False,
        phases: tuple[str, ...] = PHASES,
    ) -> None:
        self.store = store
        self.phases = phases
        self.poll_interval = float(os.environ.get("ANOLE_BENCH_POLL", "0.02"))
        self.diagnose = diagnose
        self.sizes = sizes
        self.tag = tag
        self.profile_dir = profile_dir
        self.tmp = tempfile.mkdtemp(prefix=f"anole_bench_{tag}_{store}_")
        self.pg_db = f"anole_bench_{tag}"
        self.prefix = f"anole_bench_{tag}:"
        self.env = dict(os.environ)
        self.env.update(
            {
                "DJANGO_SETTINGS_MODULE": "bench.settings",
                "ANOLE_BENCH_STORE": store,
                "ANOLE_BENCH_RUN": "manual",
                "ANOLE_BENCH_TMP": self.tmp,
                "ANOLE_BENCH_PG_DB": self.pg_db,
                "ANOLE_BENCH_PREFIX": self.prefix,
                "PYTHONPATH": os.pathsep.join(
                    [str(ROOT)] + ([os.environ["PYTHONPATH"]] if "PYTHONPATH" in os.environ else [])
                ),
            }
        )
        os.environ.update(self.env)
        self.results: dict[str, Any] = {"store": store, "sizes": asdict(sizes)}
        self.runjobs_log: deque[str] = deque(maxlen=400)

    # -- set-up and tear-down ------------------------------------------------------------------
    def setup(self) -> None:
        if self.store == "postgres":
            import psycopg

            with psycopg.connect(dbname="postgres", autocommit=True, **PG) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.pg_db}"')
                conn.execute(f'CREATE DATABASE "{self.pg_db}"')
        import django

        django.setup()
        from django.core.management import call_command

        began = time.perf_counter()
        call_command("migrate", verbosity=0, interactive=False)
        self.results["migrate_seconds"] = time.perf_counter() - began
        from anole_jobs import jobs

        self.jobs = jobs
        store = jobs.service.store
        self.results["store_name"] = store.name
        if self.store == "memory":
            self.results["wakeups"] = "this process only"
        else:
            self.results["wakeups"] = (
                "cross-process wake-ups" if store.capabilities.notify else "other processes poll"
            )

    def teardown(self) -> None:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001
            pass
        try:
            from anole_jobs import jobs

            jobs.reset()
        except Exception:  # noqa: BLE001
            pass
        cleanup_external(self.store, self.tag)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers -------------------------------------------------------------------------------
    def completed(self) -> int:
        return self.jobs.counts().get(QUEUE, {}).get("completed", 0)

    def wipe(self) -> None:
        """Remove every job (no worker may be running): each phase starts from an empty store."""
        if self.store == "memory":
            self.jobs.reset()
            return
        if self.store == "redis":
            import redis

            client = redis.Redis.from_url(REDIS_URL)
            keys = list(client.scan_iter(match=self.prefix + "*", count=1000))
            for start in range(0, len(keys), 1000):
                client.delete(*keys[start : start + 1000])
            client.close()
            return
        from django.db import connection

        prefix = self.jobs.service.settings.table_prefix
        tables = [t for t in connection.introspection.table_names() if t.startswith(prefix)]
        with connection.cursor() as cursor:
            for table in tables:
                cursor.execute(f'DELETE FROM "{table}"')
            if self.store == "postgres":
                for table in tables:
                    cursor.execute(f'VACUUM ANALYZE "{table}"')
            else:
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def clean_finished(self) -> None:
        """Delete finished jobs through the store contract (safe while workers run)."""
        from datetime import timedelta

        service = self.jobs.service
        later = service.clock() + timedelta(days=1)
        horizons = {s: timedelta(0) for s in ("completed", "dead", "cancelled")}
        deadline = Deadline(120, "pruning finished jobs")
        while service.store.prune(now=later, horizons=horizons) > 0:
            deadline.check()
        if self.store == "postgres":
            from django.db import connection

            prefix = service.settings.table_prefix
            tables = [t for t in connection.introspection.table_names() if t.startswith(prefix)]
            with connection.cursor() as cursor:
                for table in tables:
                    cursor.execute(f'VACUUM ANALYZE "{table}"')

    def enqueue_batches(self, n: int, **options: Any) -> None:
        from bench.jobs import Noop

        batch = self.sizes.batch
        for start in range(0, n, batch):
            self.jobs.enqueue_many(
                [Noop(n=i) for i in range(start, min(n, start + batch))], **options
            )

    def wait_completed(
        self,
        target: int,
        deadline: Deadline,
        interval: float | None = None,
        stats: str | None = None,
    ) -> float:
        """Poll `jobs.counts()` every `interval` (default: --poll-interval, 20 ms) until
        `target` jobs are completed."""
        interval = self.poll_interval if interval is None else interval
        calls, spent = 0, 0.0
        while True:
            t0 = time.perf_counter()
            done = self.completed()
            calls, spent = calls + 1, spent + time.perf_counter() - t0
            if stats:
                self.results[stats] = {"calls": calls, "mean_ms": 1000 * spent / calls}
            if done >= target:
                return time.perf_counter()
            deadline.check(f"({done}/{target} completed; counts {self.jobs.counts()})")
            time.sleep(interval)

    # -- baselines -----------------------------------------------------------------------------
    def sample_baseline(self, key: str) -> None:
        """A baseline measured just before one figure (the machine is shared and noisy)."""
        self.results.setdefault("baseline", {})[key] = self.baseline()

    def baseline(self) -> dict[str, float]:
        seconds = self.sizes.baseline_seconds
        out: dict[str, float] = {}
        if self.store == "memory":
            out["round_trip"] = thread_ping_pong(seconds)
        elif self.store == "sqlite":
            path = os.path.join(self.tmp, "baseline.sqlite3")
            conn = sqlite3.connect(path, isolation_level=None, timeout=20)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS scratch (x INTEGER)")
            out["round_trip"] = rate_for(seconds, lambda i: conn.execute("SELECT 1").fetchone())
            out["commit"] = rate_for(
                seconds, lambda i: conn.execute("INSERT INTO scratch (x) VALUES (?)", (i,))
            )
            conn.close()
        elif self.store == "postgres":
            import psycopg

            with psycopg.connect(dbname=self.pg_db, autocommit=True, **PG) as conn:
                conn.execute("CREATE TABLE IF NOT EXISTS bench_scratch (x int)")
                out["round_trip"] = rate_for(seconds, lambda i: conn.execute("SELECT 1").fetchone())
                out["commit"] = rate_for(
                    seconds, lambda i: conn.execute("INSERT INTO bench_scratch VALUES (%s)", (i,))
                )
                conn.execute("DROP TABLE bench_scratch")
        elif self.store == "redis":
            import redis

            client = redis.Redis.from_url(REDIS_URL)
            out["round_trip"] = rate_for(seconds, lambda i: client.ping())
            client.close()
        return out

    # -- phases ----------------------------------------------------------------------------------
    def phase_enqueue(self) -> None:
        from bench.jobs import Noop

        n = self.sizes.single
        self.wipe()
        self.jobs.enqueue(Noop(n=-1))  # connect, load scripts: not part of the figure
        self.wipe()
        self.sample_baseline("enqueue_single")
        began = time.perf_counter()
        for i in range(n):
            self.jobs.enqueue(Noop(n=i))
        self.results["enqueue_single"] = n / (time.perf_counter() - began)
        log(f"{self.store}: enqueue single {self.results['enqueue_single']:,.0f} jobs/s")

        n = self.sizes.many
        self.wipe()
        self.sample_baseline("enqueue_many")
        began = time.perf_counter()
        self.enqueue_batches(n)
        self.results["enqueue_many"] = n / (time.perf_counter() - began)
        log(f"{self.store}: enqueue_many {self.results['enqueue_many']:,.0f} jobs/s")

    def phase_step(self) -> None:
        n = self.sizes.step
        self.wipe()
        self.enqueue_batches(n)
        self.sample_baseline("step")
        deadline = Deadline(max(60.0, n / 50), "step-driven work")
        began = time.perf_counter()
        ran = steps = 0
        while ran < n:
            report = self.jobs.step()
            steps += 1
            ran += len(report.runs)
            bad = [r for r in report.runs if r.outcome != "completed"]
            if bad:
                raise RuntimeError(f"step ran {bad[0]}")
            if not report.runs:
                deadline.check(f"(ran {ran}/{n})")
                time.sleep(0.001)
        elapsed = time.perf_counter() - began
        done = self.completed()
        if done != n:
            raise RuntimeError(f"step ran {ran} jobs but {done} are completed")
        self.results["step"] = n / elapsed
        self.results["step_calls"] = steps
        log(f"{self.store}: step {self.results['step']:,.0f} jobs/s ({steps} step calls)")

    def phase_runtime(self) -> None:
        self.wipe()
        worker = InProcessWorker(self) if self.store == "memory" else RunjobsWorker(self)
        try:
            worker.start(Deadline(60, "runjobs start-up"))
            time.sleep(0.5)  # let it settle: listener connected, first poll done, idle

            self.sample_baseline("latency_idle")
            samples, lost = self.latency_probes(
                self.sizes.latency, Deadline(120, "idle latency"), budget=self.sizes.latency_budget
            )
            self.results["latency_idle"] = latency_summary(samples, lost)
            log(f"{self.store}: idle latency {fmt_latency(self.results['latency_idle'])}")

            self.clean_finished()
            self.sample_baseline("runtime")
            time.sleep(0.3)
            n = self.sizes.runtime
            deadline = Deadline(max(60.0, n / 50), "runtime throughput")
            worker.profile_start()
            cpu_began = cpu_snapshot(self.store, worker.pid)
            wall_began = time.time()
            began = time.perf_counter()
            self.enqueue_batches(n)
            enqueued = time.perf_counter()
            done_at_enqueued = self.completed()
            finished = self.wait_completed(n, deadline, stats="runtime_poll")
            self.results["runtime_window"] = (wall_began, time.time())
            cpu_ended = cpu_snapshot(self.store, worker.pid)
            self.results["runtime_cpu"] = cpu_report(cpu_began, cpu_ended, finished - began, n)
            worker.profile_stop()
            self.results["runtime"] = n / (finished - enqueued)
            self.results["runtime_e2e"] = n / (finished - began)
            self.results["runtime_enqueue_seconds"] = enqueued - began
            self.results["runtime_done_at_enqueued"] = done_at_enqueued
            self.results["runtime_drain_seconds"] = finished - enqueued
            self.results["runtime_after"] = (n - done_at_enqueued) / (finished - enqueued)
            log(
                f"{self.store}: runtime {self.results['runtime']:,.0f} jobs/s after enqueueing "
                f"({done_at_enqueued}/{n} done by then), {self.results['runtime_e2e']:,.0f} "
                "jobs/s end to end"
            )

            self.clean_finished()
            self.sample_baseline("loaded")
            time.sleep(0.3)
            self.loaded_run(n, Deadline(max(60.0, n / 50), "runtime under load"))
        finally:
            self.results["runtime_stop"] = worker.stop()
            self.results["runtime_log"] = worker.log_summary()
            if self.diagnose and "runtime_window" in self.results:
                self.results["runtime_diag"] = worker.diagnostics(*self.results["runtime_window"])

    def loaded_run(self, n: int, deadline: Deadline) -> None:
        stop = threading.Event()
        probes: dict[str, Any] = {"samples": [], "lost": 0, "error": None}

        def probe() -> None:
            try:
                samples, lost = self.latency_probes(
                    10**9, deadline, stop=stop, priority=100, poll=0.005
                )
                probes["samples"], probes["lost"] = samples, lost
            except Exception as exc:  # noqa: BLE001 - reported below
                probes["error"] = repr(exc)

        thread = threading.Thread(target=probe, name="bench-probe", daemon=True)
        began = time.perf_counter()
        thread.start()
        try:
            self.enqueue_batches(n)
            self.wait_completed(n, deadline)
        finally:
            stop.set()
            thread.join(max(0.0, deadline.left()) + 5)
        if probes["error"]:
            raise RuntimeError(f"latency probe failed: {probes['error']}")
        total = n + len(probes["samples"]) + probes["lost"]
        finished = self.wait_completed(total - probes["lost"], deadline)
        self.results["latency_load"] = latency_summary(probes["samples"], probes["lost"])
        self.results["runtime_loaded_e2e"] = total / (finished - began)
        log(f"{self.store}: latency under load {fmt_latency(self.results['latency_load'])}")

    def latency_probes(
        self,
        count: int,
        deadline: Deadline,
        *,
        stop: threading.Event | None = None,
        priority: int | None = None,
        spacing: float = 0.02,
        poll: float = 0.002,
        budget: float | None = None,
    ) -> tuple[list[float], int]:
        """Enqueue one job at a time, wait until it started, return attempted_at - created_at."""
        from bench.jobs import Noop

        options = {} if priority is None else {"priority": priority}
        samples: list[float] = []
        lost = 0
        give_up = None if budget is None else time.perf_counter() + budget
        for _ in range(count):
            if stop is not None and stop.is_set():
                break
            if give_up is not None and time.perf_counter() > give_up:
                break
            deadline.check(f"({len(samples)} latency samples)")
            sent = time.perf_counter()
            job_id = self.jobs.enqueue(Noop(n=-2), **options).id
            record = None
            wait_until = min(sent + 10.0, deadline.at)
            while time.perf_counter() < wait_until:
                record = self.jobs.get(job_id)
                if record is not None and record.attempted_at is not None:
                    break
                time.sleep(poll)
            if record is None or record.attempted_at is None:
                lost += 1
            else:
                samples.append((record.attempted_at - record.created_at).total_seconds() * 1000)
            rest = spacing - (time.perf_counter() - sent)
            if rest > 0:
                time.sleep(rest)
        return samples, lost

    # -- all of it -------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.setup()
        self.sample_baseline("start")
        for name, phase in (
            ("enqueue", self.phase_enqueue),
            ("step", self.phase_step),
            ("runtime", self.phase_runtime),
        ):
            if name not in self.phases:
                continue
            try:
                phase()
            except Exception as exc:  # noqa: BLE001 - report it, go on with the next phase
                log(f"{self.store}: phase {name} failed: {exc!r}")
                self.results.setdefault("errors", {})[name] = "".join(
                    traceback.format_exception_only(type(exc), exc)
                ).strip()[-2000:]
                traceback.print_exc()
        self.sample_baseline("end")
        return self.results


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


def rate_for(seconds: float, call: Any) -> float:
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


def process_cpu(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` (all threads), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    if began["machine"] is not None and ended["machine"] is not None:
        busy = ended["machine"][0] - began["machine"][0]
        total = ended["machine"][1] - began["machine"][1]
        cores = total / seconds if seconds else 0
        out["machine_cores_busy"] = busy / seconds if seconds else None
        out["machine_busy"] = busy / total if total else None
        out["machine_cores"] = cores
        out["other_cores"] = max(
            0.0,
            out["machine_cores_busy"]
            - out["worker_cores"]
            - out["bench_cores"]
            - out["server_cores"],
        )
    return out


def latency_summary(samples: list[float], lost: int) -> dict[str, Any]:
    if not samples:
        return {"n": 0, "lost": lost}
    return {
        "n": len(samples),
        "lost": lost,
        "p50": percentile(samples, 50),
        "p99": percentile(samples, 99),
        "max": max(samples),
        "mean": sum(samples) / len(samples),
    }


def fmt_latency(summary: dict[str, Any]) -> str:
    if not summary.get("n"):
        return f"no samples ({summary.get('lost', 0)} lost)"
    return (
        f"p50 {summary['p50']:.2f} ms, p99 {summary['p99']:.2f} ms, max {summary['max']:.1f} ms "
        f"(n={summary['n']}, lost {summary['lost']})"
    )


class RunjobsWorker:
    """ONE `manage.py runjobs` subprocess: started, watched, always stopped."""

    UP_MARKER = "runjobs running"

    def __init__(self, bench: StoreBench) -> None:
        self.bench = bench
        self.proc: subprocess.Popen[str] | None = None
        self.up = threading.Event()
        self.lines = bench.runjobs_log
        self.levels: Counter[str] = Counter()
        self.profiler: subprocess.Popen[bytes] | None = None

    def start(self, deadline: Deadline) -> None:
        env = dict(self.bench.env, ANOLE_BENCH_RUN="auto", PYTHONUNBUFFERED="1")
        if self.bench.diagnose:
            env["ANOLE_BENCH_DIAG"] = self.diag_path = os.path.join(self.bench.tmp, "diag.json")
        cmd = [
            sys.executable,
            str(BENCH_DIR / "manage.py"),
            "runjobs",
            "--queue",
            QUEUE,
            "--concurrency",
            str(CONCURRENCY),
            "--log-level",
            "INFO",
        ]
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=str(ROOT),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        threading.Thread(target=self._read, name="bench-runjobs-log", daemon=True).start()
        while not self.up.wait(0.05):
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"runjobs exited with {self.proc.returncode} before it was up:\n"
                    + "".join(list(self.lines)[-30:])
                )
            deadline.check("(no start-up line from runjobs)\n" + "".join(list(self.lines)[-30:]))
        log(f"{self.bench.store}: runjobs pid {self.proc.pid} up")

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            for level in ("WARNING", "ERROR", "CRITICAL", "Traceback"):
                if level in line:
                    self.levels[level] += 1
            if self.UP_MARKER in line:
                self.up.set()

    def profile_start(self) -> None:
        if not self.bench.profile_dir or self.proc is None:
            return
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        out = Path(self.bench.profile_dir) / f"{self.bench.store}-runjobs.txt"
        self.profiler = subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(self.proc.pid),
                "--format",
                "raw",
                "--threads",
                "--rate",
                "250",
                "--output",
                str(out),
                "--nonblocking",
                *os.environ.get("ANOLE_BENCH_PYSPY_ARGS", "").split(),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)  # attach

    def profile_stop(self) -> None:
        if self.profiler is None:
            return
        self.profiler.send_signal(signal.SIGINT)
        try:
            self.profiler.wait(20)
        except subprocess.TimeoutExpired:
            self.profiler.kill()
            self.profiler.wait(5)
        self.profiler = None

    def stop(self) -> dict[str, Any]:
        self.profile_stop()
        if self.proc is None:
            return {}
        began = time.perf_counter()
        killed = False
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                killed = True
                self.proc.kill()
                self.proc.wait(10)
        return {
            "returncode": self.proc.returncode,
            "stop_seconds": time.perf_counter() - began,
            "killed": killed,
        }

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def diagnostics(self, since: float, until: float) -> dict[str, Any]:
        from bench.diag import summarise

        try:
            events = json.loads(Path(self.diag_path).read_text())
        except (OSError, ValueError, AttributeError) as exc:
            return {"error": repr(exc)}
        return summarise(events, since, until)

    def log_summary(self) -> dict[str, Any]:
        interesting = [
            line.rstrip()
            for line in self.lines
            if any(word in line for word in ("WARNING", "ERROR", "Traceback", "starting"))
        ]
        return {"counts": dict(self.levels), "lines": interesting[-15:]}


class InProcessWorker:
    """The memory store lives in one process: run the workers with `jobs.start()` here."""

    def __init__(self, bench: StoreBench) -> None:
        self.bench = bench
        self.override: Any = None

    def start(self, deadline: Deadline) -> None:
        from django.conf import settings
        from django.test import override_settings

        self.override = override_settings(ANOLE_JOBS={**settings.ANOLE_JOBS, "RUN": "auto"})
        self.override.enable()  # a fresh memory store, RUN="auto"
        self.bench.jobs.start(queues=[QUEUE], concurrency=CONCURRENCY)

    def profile_start(self) -> None:
        pass

    def profile_stop(self) -> None:
        pass

    def stop(self) -> dict[str, Any]:
        began = time.perf_counter()
        try:
            self.bench.jobs.stop(drain=True)
        finally:
            if self.override is not None:
                self.override.disable()
        return {"returncode": 0, "stop_seconds": time.perf_counter() - began, "killed": False}

    def log_summary(self) -> dict[str, Any]:
        return {"counts": {}, "lines": ["in-process jobs.start() (memory store)"]}

    def diagnostics(self, since: float, until: float) -> dict[str, Any]:
        return {}

    pid = None  # the workers run in the bench process


def cleanup_external(store: str, tag: str) -> None:
    """Drop the bench's PostgreSQL database / delete its Redis keys (idempotent)."""
    try:
        if store == "postgres":
            import psycopg

            with psycopg.connect(dbname="postgres", autocommit=True, connect_timeout=5, **PG) as c:
                c.execute(f'DROP DATABASE IF EXISTS "anole_bench_{tag}" WITH (FORCE)')
        elif store == "redis":
            import redis

            client = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
            keys = list(client.scan_iter(match=f"anole_bench_{tag}:*", count=1000))
            for start in range(0, len(keys), 1000):
                client.delete(*keys[start : start + 1000])
            client.close()
    except Exception as exc:  # noqa: BLE001 - best effort; say so
        log(f"cleanup of {store} failed: {exc!r}")


def child_main(
    store: str,
    quick: bool,
    out: str,
    tag: str,
    profile_dir: str | None,
    diagnose: bool,
    phases: tuple[str, ...],
) -> int:
    def on_term(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # run the finally blocks: stop runjobs, clean up

    signal.signal(signal.SIGTERM, on_term)
    bench = StoreBench(store, QUICK if quick else FULL, tag, profile_dir, diagnose, phases)
    results: dict[str, Any] = {"store": store}
    try:
        results = bench.run()
    except BaseException as exc:  # noqa: BLE001 - the parent prints it
        results = dict(bench.results)
        results["fatal"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        traceback.print_exc()
    finally:
        bench.teardown()
        Path(out).write_text(json.dumps(results, default=str))
    return 0


# =============================================================================================
# The parent: one child per store, then the tables.
# =============================================================================================


def run_child(
    store: str,
    quick: bool,
    tag: str,
    profile_dir: str | None,
    diagnose: bool,
    phases: tuple[str, ...],
    timeout: float,
) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(prefix=f"anole_bench_{store}_", suffix=".json") as out:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            store,
            "--tag",
            tag,
            "--out",
            out.name,
        ]
        if quick:
            cmd.append("--quick")
        if profile_dir:
            cmd += ["--profile", profile_dir]
        if diagnose:
            cmd.append("--diagnose")
        cmd += ["--phases", ",".join(phases)]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(cmd, env=env, cwd=str(ROOT), start_new_session=True)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"{store}: over its {timeout:.0f} s budget; stopping it")
            _stop_group(proc)
            cleanup_external(store, tag)
            partial: dict[str, Any] = {"store": store}
            # The child writes what it measured when SIGTERM stops it.
            with contextlib.suppress(OSError, ValueError):
                partial = json.loads(Path(out.name).read_text() or "{}") or partial
            partial["fatal"] = f"timed out after {timeout:.0f} s"
            return partial
        except BaseException:
            _stop_group(proc)
            cleanup_external(store, tag)
            raise
        finally:
            _stop_group(proc)  # whatever is left of its group (a stray runjobs)
        text = Path(out.name).read_text()
        if not text:
            cleanup_external(store, tag)
            return {"store": store, "fatal": f"child exited with {proc.returncode}, no results"}
        return json.loads(text)


def _stop_group(proc: subprocess.Popen[Any]) -> None:
    for sig, wait in ((signal.SIGTERM, 25.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        # The child is gone; anything else in its group?
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)


def machine_info() -> dict[str, Any]:
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
        with psycopg.connect(dbname="postgres", connect_timeout=3, **PG) as conn:
            info["postgresql"] = conn.execute("SHOW server_version").fetchone()[0]
    except Exception as exc:  # noqa: BLE001
        info["postgresql"] = f"unavailable ({type(exc).__name__})"
    try:
        import redis

        info["redis-py"] = redis.__version__
        client = redis.Redis.from_url(REDIS_URL, socket_timeout=3)
        info["redis"] = client.info("server")["redis_version"]
        client.close()
    except Exception as exc:  # noqa: BLE001
        info["redis"] = f"unavailable ({type(exc).__name__})"
    try:
        from importlib.metadata import version

        info["django-redis"] = version("django-redis")
    except Exception:  # noqa: BLE001
        pass
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
        info["commit"] = head + ("+dirty" if dirty else "")
    except Exception:  # noqa: BLE001
        pass
    return info


# -- printing ------------------------------------------------------------------------------------

BASELINE_LABEL = {
    "memory": "thread ping-pong through queues (no store I/O)",
    "sqlite": "sqlite3 SELECT 1 (file DB, WAL)",
    "postgres": "psycopg SELECT 1 (TCP 127.0.0.1)",
    "redis": "redis-py PING (TCP 127.0.0.1)",
}


def baseline_rate(
    result: dict[str, Any], key: str = "round_trip", at: str | None = None
) -> float | None:
    """The baseline measured next to figure `at`, else the mean of all baselines taken."""
    samples = result.get("baseline") or {}
    if at is not None and key in samples.get(at, {}):
        return float(samples[at][key])
    rates = [sample[key] for sample in samples.values() if key in sample]
    return sum(rates) / len(rates) if rates else None


def verdict(store: str, metric: str, value: float | None) -> tuple[str, str]:
    target = TARGETS.get(store, {}).get(metric)
    if target is None:
        return "", ""
    op, bound = target
    unit = " ms" if metric.startswith("latency") else " jobs/s"
    text = f"{op} {bound:,.0f}{unit}"
    if value is None:
        return text, "n/a"
    ok = value >= bound if op == ">=" else value <= bound
    return text, "pass" if ok else "MISS"


Row = tuple[str, str, str, str, str, str]


def store_rows(result: dict[str, Any]) -> list[Row]:
    store = result["store"]
    sizes = result.get("sizes", {})
    rows: list[Row] = []

    def rate_row(label: str, key: str, at: str, metric: str | None = None) -> None:
        value = result.get(key)
        base = baseline_rate(result, "round_trip", at)
        commit = baseline_rate(result, "commit", at)
        ratio = f"{value / base:.3f}" if value and base else ""
        per_commit = f"{value / commit:.2f}" if value and commit else ""
        shown = f"{value:,.0f} jobs/s" if value is not None else "—"
        target, ok = verdict(store, metric or key, value)
        rows.append((label, shown, ratio, per_commit, target, ok))

    def latency_rows(label: str, key: str, at: str) -> None:
        summary = result.get(key) or {}
        base = baseline_rate(result, "round_trip", at)
        for q in ("p50", "p99"):
            value = summary.get(q)
            ratio = f"{value / 1000 * base:,.1f} RT" if value is not None and base else ""
            shown = f"{value:.2f} ms" if value is not None else "—"
            target, ok = verdict(store, f"{key}_{q}", value)
            n = f"n={summary.get('n', 0)}" + (
                f", {summary['lost']} lost" if summary.get("lost") else ""
            )
            rows.append((f"{label} {q} ({n})", shown, ratio, "", target, ok))

    rate_row(f"enqueue, single (N={sizes.get('single', 0):,})", "enqueue_single", "enqueue_single")
    rate_row(
        f"enqueue_many (N={sizes.get('many', 0):,}, batches of {sizes.get('batch', 0):,})",
        "enqueue_many",
        "enqueue_many",
    )
    rate_row(f"work, jobs.step() (N={sizes.get('step', 0):,})", "step", "step")
    who = "jobs.start() in-process" if store == "memory" else "1 runjobs"
    rate_row(f"work, {who} c={CONCURRENCY} (N={sizes.get('runtime', 0):,})", "runtime", "runtime")
    if "runtime_done_at_enqueued" in result:
        rows.append(
            (
                "  done when enqueueing ended",
                f"{result['runtime_done_at_enqueued']:,} jobs",
                "",
                "",
                f"(enqueue took {result['runtime_enqueue_seconds']:.2f} s)",
                "",
            )
        )
    rate_row("  jobs left at end of enqueueing / time", "runtime_after", "runtime")
    rate_row("  N / time from start of enqueueing", "runtime_e2e", "runtime")
    rate_row("  2nd run, with latency probes", "runtime_loaded_e2e", "loaded")
    latency_rows("latency idle", "latency_idle", "latency_idle")
    latency_rows("latency under load, prio 100,", "latency_load", "loaded")
    return rows


def table(rows: list[Row]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        lines.append(
            "  ".join(
                cell.rjust(widths[i]) if i in (1, 2, 3) else cell.ljust(widths[i])
                for i, cell in enumerate(row)
            ).rstrip()
        )
        if index == 0:
            lines.append("  ".join("-" * w for w in widths).rstrip())
    return lines


def print_store(result: dict[str, Any], out: list[str]) -> None:
    store = result["store"]
    out.append("")
    wake = result.get("wakeups", "")
    out.append(
        f"== {store} ({result.get('store_name', '?')} store{', ' + wake if wake else ''}) =="
    )
    if result.get("fatal") and "enqueue_single" not in result:
        out.append(f"  unavailable: {result['fatal'].splitlines()[-1]}")
        return
    rates = [s["round_trip"] for s in (result.get("baseline") or {}).values() if "round_trip" in s]
    if rates:
        out.append(
            f"baseline: {BASELINE_LABEL[store]}: {sum(rates) / len(rates):,.0f}/s "
            f"(min {min(rates):,.0f}, max {max(rates):,.0f} over {len(rates)} samples, one "
            "taken just before each figure and used for its ratio)"
        )
    commits = [s["commit"] for s in (result.get("baseline") or {}).values() if "commit" in s]
    if commits:
        out.append(
            f"reference: one-row INSERT + COMMIT: {sum(commits) / len(commits):,.0f}/s "
            f"(min {min(commits):,.0f}, max {max(commits):,.0f})"
        )
    header: Row = ("metric", "value", "x baseline", "x commit", "target", "")
    out.extend(table([header, *store_rows(result)]))
    stop = result.get("runtime_stop") or {}
    if stop:
        out.append(
            f"worker stop: exit {stop.get('returncode')} in {stop.get('stop_seconds', 0):.1f} s"
            + (" (killed)" if stop.get("killed") else "")
        )
    cpu = result.get("runtime_cpu") or {}
    if cpu.get("worker_cpu_seconds") is not None:
        parts = []
        if store != "memory":
            parts.append(f"runjobs {cpu['worker_cores']:.2f}")
        parts.append(f"bench process {cpu['bench_cores']:.2f}")
        if cpu.get("server_cores"):
            parts.append(f"{store} server {cpu['server_cores']:.2f}")
        if cpu.get("other_cores") is not None:
            parts.append(f"everything else {cpu['other_cores']:.2f}")
        out.append(
            f"CPU in the runtime run (cores of {cpu.get('machine_cores', 0):.0f}): "
            + ", ".join(parts)
            + f"; machine {100 * (cpu.get('machine_busy') or 0):.0f}% busy; worker "
            f"{cpu['worker_cpu_us_per_job']:.0f} µs CPU per job"
        )
    poll = result.get("runtime_poll") or {}
    if poll.get("calls"):
        out.append(
            f"bench polling: {poll['calls']} jobs.counts() calls, {poll['mean_ms']:.2f} ms each"
        )
    for op, d in (result.get("runtime_diag") or {}).items():
        if not isinstance(d, dict):
            out.append(f"diagnostics: {op}: {d}")
            continue
        out.append(
            f"runjobs {op}: {d['calls']:,} calls ({d['empty_calls']:,} empty), "
            f"{d['jobs_per_nonempty_call']:.2f} jobs per non-empty call, "
            f"{d['mean_ms']:.2f} ms per call, {d['busy_seconds']:.2f} s busy; sizes {d['sizes']}"
        )
    log_info = result.get("runtime_log") or {}
    if log_info.get("counts"):
        out.append(f"runjobs log: {log_info['counts']}")
    for phase, error in (result.get("errors") or {}).items():
        out.append(f"  phase {phase} FAILED: {error.splitlines()[-1]}")
    if result.get("fatal"):
        out.append(f"  FATAL: {result['fatal'].splitlines()[-1]}")


def summary_rows(results: list[dict[str, Any]]) -> list[str]:
    """One line per store: the headline figures side by side."""
    header = (
        "store",
        "enqueue 1",
        "enqueue_many",
        "step",
        "runtime",
        "idle p50/p99",
        "load p50/p99",
    )
    rows = [header]

    def rate(r: dict[str, Any], key: str) -> str:
        return f"{r[key]:,.0f}" if isinstance(r.get(key), (int, float)) else "—"

    def lat(r: dict[str, Any], key: str) -> str:
        s = r.get(key) or {}
        return f"{s['p50']:.1f}/{s['p99']:.1f} ms" if s.get("n") else "—"

    for r in results:
        rows.append(
            (
                r["store"],
                rate(r, "enqueue_single"),
                rate(r, "enqueue_many"),
                rate(r, "step"),
                rate(r, "runtime"),
                lat(r, "latency_idle"),
                lat(r, "latency_load"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for index, row in enumerate(rows):
        lines.append(
            "  ".join(
                c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(row)
            )
        )
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def print_report(info: dict[str, Any], results: list[dict[str, Any]], quick: bool) -> str:
    out = [
        "anole_jobs bench" + (" (--quick: small N, smoke run only)" if quick else ""),
        f"machine: {info['nproc']} cores (affinity {info['affinity']}), load average "
        + ", ".join(f"{x:.2f}" for x in info["loadavg"])
        + f"; {info['platform']}",
        "versions: "
        + ", ".join(
            f"{k} {info[k]}"
            for k in (
                "python",
                "django",
                "sqlite",
                "postgresql",
                "psycopg",
                "redis",
                "redis-py",
                "django-redis",
                "commit",
            )
            if k in info
        ),
        "ratios: throughput / baseline round trips per second; latency in baseline round trips "
        "(RT).",
    ]
    for result in results:
        print_store(result, out)
    out.append("")
    out.append("summary (jobs/s; latency enqueue->start):")
    out.extend(summary_rows(results))
    out.append("")
    text = "\n".join(out)
    print(text, flush=True)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--stores", default=",".join(STORES), help="comma-separated: " + ", ".join(STORES)
    )
    parser.add_argument("--quick", action="store_true", help="small N: a smoke run, < 1 minute")
    parser.add_argument("--json", help="also write the results as JSON to this file")
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="record the runjobs process with py-spy (raw collapsed stacks, all threads) "
        "during the throughput run, into DIR/<store>-runjobs.txt",
    )
    parser.add_argument(
        "--diagnose",
        action="store_true",
        help="record every claim/finish call of the runjobs process (bench/diag.py) and print "
        "how many jobs each round trip carried during the throughput run",
    )
    parser.add_argument(
        "--phases",
        default=",".join(PHASES),
        help="comma-separated subset of " + ", ".join(PHASES) + " (default: all)",
    )
    parser.add_argument(
        "--store-timeout",
        type=float,
        metavar="SECONDS",
        help="time budget of each store's child process (default: 900, --quick: 50)",
    )
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=0.02,
        metavar="SECONDS",
        help="how often the runtime runs poll jobs.counts() for completion (default 0.02)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tag", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    phases = tuple(p.strip() for p in args.phases.split(",") if p.strip())
    if set(phases) - set(PHASES):
        parser.error(f"unknown phase(s); known: {', '.join(PHASES)}")

    if args.child:
        return child_main(
            args.child, args.quick, args.out, args.tag, args.profile, args.diagnose, phases
        )

    os.environ["ANOLE_BENCH_POLL"] = str(args.poll_interval)  # the children read it
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = [s for s in stores if s not in STORES]
    if unknown:
        parser.error(f"unknown store(s) {', '.join(unknown)}; known: {', '.join(STORES)}")
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    info = machine_info()
    tag = str(os.getpid())
    sizes = QUICK if args.quick else FULL
    results = []
    for store in stores:
        log(f"{store}: starting")
        began = time.perf_counter()
        result = run_child(
            store,
            args.quick,
            tag,
            args.profile,
            args.diagnose,
            phases,
            args.store_timeout or sizes.store_timeout,
        )
        result["seconds"] = time.perf_counter() - began
        results.append(result)
        log(f"{store}: done in {result['seconds']:.1f} s")
    print_report(info, results, args.quick)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"machine": info, "results": results}, indent=2, default=str)
        )
    failed = [r["store"] for r in results if r.get("fatal") or r.get("errors")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
