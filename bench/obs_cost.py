"""What metrics and tracing cost: the same runs with both on and with both off, interleaved.

    .venv/bin/python bench/obs_cost.py [--store memory|sqlite] [--jobs 3000] [--rounds 3]
                                       [--mode runtime,step]

Each round runs `--jobs` no-op jobs once per configuration -- both off, metrics only, tracing
only, both on (prometheus-client, and the OpenTelemetry SDK with a batch processor and an
exporter that drops what it gets), and both on with `sample_all=False` and one enqueuer in ten
sampled -- interleaved, so a noisy neighbour hits them alike. It
prints the median jobs/s (wall clock) and the median CPU time per job of this process, each
with its cost against "off". `runtime` is `jobs.start()` in this process (the enqueuer shares
it); `step` is `jobs.step()` (RUN="manual"). The memory store is the harshest case: the
fastest store, so the overhead's share is the largest. It also times `bus.emit` with no
listener beside a plain function call: what an event costs when nothing listens.

On a shared machine, trust the CPU figure over the wall-clock one.

    .venv/bin/python bench/obs_cost.py --queued-rows 1000000 [--store sqlite|postgres]

times what the leader's queued-jobs gauge reads every 15 s (the store's `queued_counts()`) on
a table of that many jobs (95 % finished, as a busy queue's table is between prunes), beside
the full `counts()` the admin calls use. PostgreSQL needs a server at 127.0.0.1:5432 (user
postgres); the script creates and drops its own database.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

_TMP = tempfile.mkdtemp(prefix="anole_obs_cost_")
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
PG_DATABASE = "anole_obs_cost"
if "postgres" in sys.argv:
    settings.DATABASES["pg"] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": PG_DATABASE,
        "USER": os.environ.get("ANOLE_BENCH_PG_USER", "postgres"),
        "HOST": os.environ.get("ANOLE_BENCH_PG_HOST", "127.0.0.1"),
        "PORT": os.environ.get("ANOLE_BENCH_PG_PORT", "5432"),
    }
django.setup()

from anole_jobs import conf, events, jobs, kind  # noqa: E402


@kind("bench.obs.noop", attempts=1)
@dataclass
class Noop:
    n: int = 0


@jobs.handler(Noop)
def noop(job: Any, args: Noop) -> None:
    return None


def install_tracer() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropping()))
    trace.set_tracer_provider(provider)


CONFIGS = {
    "off": (False, False),
    "metrics": (True, False),
    "tracing": (False, True),
    "both": (True, True),
    # sample_all=False, one enqueuer in ten sampled: what a sampled production trace costs.
    "both-10%": (True, True),
}
SAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
UNSAMPLED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
current = {"config": "off"}


def configure(*, store: str, config: str, run: str) -> None:
    metrics_on, tracing_on = CONFIGS[config]
    settings.ANOLE_JOBS = {
        "STORE": "memory" if store == "memory" else {"database": "default"},
        "RUN": run,
        "QUEUES": {"default": {"concurrency": 10}},
        "METRICS": metrics_on,
        "TRACING": {"sample_all": config != "both-10%"} if tracing_on else False,
    }
    current["config"] = config
    conf.reset()  # the facade builds a new service (memory: a new, empty store)
    if store == "sqlite":
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM anole_jobs_job")


def measured(runner: Callable[[int], float], n: int) -> tuple[float, float]:
    """jobs/s (wall clock) and CPU microseconds per job of this whole process."""
    cpu = time.process_time()
    rate = runner(n)
    return rate, (time.process_time() - cpu) / n * 1e6


def enqueue(n: int) -> None:
    """The same calls in every configuration: one job in ten from a sampled context; the rest
    from an unsampled one under "both-10%", a sampled one otherwise (recorded all the same)."""
    rest = UNSAMPLED if current["config"] == "both-10%" else SAMPLED
    for i in range(0, n, 10):
        jobs.enqueue(Noop(i), meta={"traceparent": SAMPLED})
        jobs.enqueue_many([Noop(i + j) for j in range(1, 10)], meta={"traceparent": rest})


def run_step(n: int) -> float:
    enqueue(n)
    began = time.perf_counter()
    ran = 0
    while ran < n:
        ran += len(jobs.step().runs)
    return n / (time.perf_counter() - began)


def run_runtime(n: int) -> float:
    jobs.start()
    try:
        began = time.perf_counter()
        enqueue(n)
        while jobs.counts().get("default", {}).get("completed", 0) < n:
            time.sleep(0.005)
        return n / (time.perf_counter() - began)
    finally:
        jobs.stop(drain=False)


def emit_cost(loops: int = 200_000) -> tuple[float, float]:
    """ns per `bus.emit` with no listener, and per plain function call, on a private bus."""
    bus = events.EventBus()

    def call(name: str, /, **fields: Any) -> None:
        return None

    def timed(func: Callable[..., None]) -> float:
        began = time.perf_counter()
        for i in range(loops):
            func(events.RUN_FINISHED, queue="default", kind="k", job_id=i, attempt=1)
        return (time.perf_counter() - began) / loops * 1e9

    return timed(bus.emit), timed(call)


FILL_SQL = {
    # 95 % completed, the rest spread over the waiting states and dead, over four queues.
    "sqlite": """
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %s)
        INSERT INTO anole_jobs_job (kind, queue, state, args, meta, errors, priority, attempt,
            max_attempts, claim_token, created_at, scheduled_at, unique_scope)
        SELECT 'bench.obs.noop', 'q' || (i % 4),
            CASE WHEN i % 100 < 95 THEN 'completed' WHEN i % 100 < 97 THEN 'available'
                 WHEN i % 100 < 98 THEN 'scheduled' WHEN i % 100 < 99 THEN 'retrying'
                 ELSE 'dead' END,
            '{}', '{}', '[]', 0, 1, 3, 0, '2030-01-01 00:00:00', '2030-01-01 00:00:00', 'live'
        FROM n
    """,
    "postgres": """
        INSERT INTO anole_jobs_job (kind, queue, state, args, meta, errors, priority, attempt,
            max_attempts, claim_token, created_at, scheduled_at, unique_scope)
        SELECT 'bench.obs.noop', 'q' || (i %% 4),
            CASE WHEN i %% 100 < 95 THEN 'completed' WHEN i %% 100 < 97 THEN 'available'
                 WHEN i %% 100 < 98 THEN 'scheduled' WHEN i %% 100 < 99 THEN 'retrying'
                 ELSE 'dead' END,
            '{}', '{}', '[]', 0, 1, 3, 0, now(), now(), 'live'
        FROM generate_series(1, %s) AS i
    """,
}
COUNTS_SQL = "SELECT queue, state, COUNT(*) FROM anole_jobs_job GROUP BY 1, 2"
QUEUED_SQL = (
    "SELECT queue, state, COUNT(*) FROM anole_jobs_job WHERE {where}"
    " AND state IN ('scheduled', 'available', 'running', 'retrying') GROUP BY 1, 2"
)
QUEUES = ("q0", "q1", "q2", "q3")


def queued_cost(store: str, rows: int, repeat: int = 5) -> None:
    """Time `jobs.counts()` (the gauge's read) on `rows` jobs, and the waiting states alone."""
    from django.core.management import call_command
    from django.db import connections

    alias = "pg" if store == "postgres" else "default"
    if store == "postgres":
        import psycopg

        db = settings.DATABASES["pg"]
        with psycopg.connect(
            host=db["HOST"], port=db["PORT"], user=db["USER"], dbname="postgres", autocommit=True
        ) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {PG_DATABASE}")
            admin.execute(f"CREATE DATABASE {PG_DATABASE}")
    try:
        call_command("migrate", database=alias, verbosity=0)
        settings.ANOLE_JOBS = {"STORE": {"database": alias}, "RUN": "manual"}
        conf.reset()
        began = time.perf_counter()
        with connections[alias].cursor() as cursor:
            cursor.execute(FILL_SQL[store], [rows])
            cursor.execute("ANALYZE" if store == "sqlite" else "VACUUM ANALYZE anole_jobs_job")
        print(f"{store}: {rows} jobs inserted in {time.perf_counter() - began:.1f} s")

        def timed(call: Callable[[], object]) -> float:
            call()  # warm the cache: the gauge reads a table the workers keep hot
            samples = []
            for _ in range(repeat):
                began = time.perf_counter()
                call()
                samples.append(time.perf_counter() - began)
            return statistics.median(samples) * 1000

        store_ = jobs.service.store

        def queued() -> object:
            return store_.queued_counts(QUEUES)

        def plan(sql: str, params: list[object]) -> str:
            explain = "EXPLAIN QUERY PLAN " if store == "sqlite" else "EXPLAIN "
            with connections[alias].cursor() as cursor:
                cursor.execute(explain + sql, params)
                return " / ".join(str(row[-1]).strip() for row in cursor.fetchall())

        where, params = store_.in_list("queue", QUEUES)
        print(f"{store}: counts() {timed(jobs.counts):8.1f} ms   plan: {plan(COUNTS_SQL, [])}")
        print(
            f"{store}: queued_counts() of {len(QUEUES)} queues {timed(queued):8.1f} ms"
            f"   plan: {plan(QUEUED_SQL.format(where=where), params)}"
        )
    finally:
        conf.reset()
        connections.close_all()
        if store == "postgres":
            with psycopg.connect(
                host=db["HOST"],
                port=db["PORT"],
                user=db["USER"],
                dbname="postgres",
                autocommit=True,
            ) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", default="runtime,step")
    parser.add_argument("--store", choices=("memory", "sqlite", "postgres"), default="memory")
    parser.add_argument("--queued-rows", type=int, help="time the queued gauge's read instead")
    options = parser.parse_args()
    if options.queued_rows:
        queued_cost("sqlite" if options.store == "memory" else options.store, options.queued_rows)
        return 0
    if options.store == "postgres":
        parser.error("--store postgres is for --queued-rows; the cost runs use memory or sqlite")
    if options.store == "sqlite":
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
    install_tracer()
    from importlib.metadata import version

    print(
        f"anole_jobs observability cost -- {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, Django {django.get_version()}, prometheus-client "
        f"{version('prometheus-client')}, opentelemetry-sdk {version('opentelemetry-sdk')}"
    )
    print(f"store {options.store}, {options.jobs} jobs per run, median of {options.rounds}")
    failed = False
    for mode in options.mode.split(","):
        runner = {"runtime": run_runtime, "step": run_step}[mode]
        figures: dict[str, list[tuple[float, float]]] = {config: [] for config in CONFIGS}
        for _ in range(options.rounds):
            for config in CONFIGS:
                run = "auto" if mode == "runtime" else "manual"
                configure(store=options.store, config=config, run=run)
                figures[config].append(measured(runner, options.jobs))
        rate_off = statistics.median(rate for rate, _ in figures["off"])
        cpu_off = statistics.median(cpu for _, cpu in figures["off"])
        for config in CONFIGS:
            rate = statistics.median(rate for rate, _ in figures[config])
            cpu = statistics.median(cpu for _, cpu in figures[config])
            rate_cost = (rate_off - rate) / rate_off * 100
            cpu_cost = (cpu - cpu_off) / cpu_off * 100
            print(
                f"{mode:8} {config:8} {rate:7.0f} jobs/s ({rate_cost:+6.1f} %)"
                f"   {cpu:6.0f} us CPU/job ({cpu_cost:+6.1f} %)"
            )
            if config == "both":
                failed |= cpu_cost > 10  # the target, with every run recorded
    configure(store=options.store, config="off", run="manual")
    emit, call = emit_cost()
    print(f"bus.emit with no listener {emit:6.0f} ns   plain function call {call:6.0f} ns")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
