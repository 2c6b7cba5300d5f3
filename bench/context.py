"""The per-store child's state: Django configured for one store (`bench/settings.py`, chosen
by environment variables), its scratch database / key prefix, and the helpers every scenario
uses (wipe the store, enqueue in batches, wait for completions, sample a baseline, probe
enqueue->start latency, start a worker)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from bench import baselines
from bench.common import CONCURRENCY, PG, QUEUE, REDIS_URL, ROOT, Deadline, Options, Sizes, log
from bench.workers import Worker, worker_for


class Bench:
    """One store, set up for the scenarios; `close()` removes everything it created."""

    def __init__(self, store: str, sizes: Sizes, tag: str, options: Options) -> None:
        self.store = store
        self.sizes = sizes
        self.tag = tag
        self.options = options
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
                **options.extra,
            }
        )
        os.environ.update(self.env)
        self.info: dict[str, Any] = {}

    # -- set-up and tear-down ------------------------------------------------------------------
    def setup(self) -> None:
        if self.store == "postgres":
            import psycopg

            with psycopg.connect(dbname="postgres", autocommit=True, **PG) as conn:  # type: ignore[arg-type]
                conn.execute(f'DROP DATABASE IF EXISTS "{self.pg_db}"')
                conn.execute(f'CREATE DATABASE "{self.pg_db}"')
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        from anole_jobs import jobs

        self.jobs = jobs
        if os.environ.get("ANOLE_BENCH_COUNT_TRIGGERS", "on") == "off":
            self._drop_count_triggers()
        if os.environ.get("ANOLE_BENCH_STAT_TRIGGER", "on") == "off":
            self._drop_stat_trigger()
        store = jobs.service.store
        self.info["store_name"] = store.name
        self.info["wakeups"] = (
            "this process only"
            if self.store == "memory"
            else "cross-process wake-ups"
            if self.store == "redis" or getattr(store.inner, "notify", False)  # type: ignore[attr-defined]
            else "other processes poll"
        )

    def _drop_count_triggers(self) -> None:
        """ANOLE_BENCH_COUNT_TRIGGERS=off: the hot paths without the triggers that keep the job
        counts (counts() then reads stale figures), to measure what the triggers cost."""
        if self.store not in ("sqlite", "postgres"):
            return
        from django.db import connection

        from bench.schema_switches import count_triggers

        prefix = self.jobs.service.settings.table_prefix
        with connection.cursor() as cursor:
            for statement in count_triggers(connection.vendor, on=False, prefix=prefix):
                cursor.execute(statement)
        self.info["count_triggers"] = "off"

    def _drop_stat_trigger(self) -> None:
        """ANOLE_BENCH_STAT_TRIGGER=off: the hot paths without the per-minute run statistics
        (the trigger dropped, PostgreSQL's claim and finish functions without them; the charts
        then go stale), to measure what they cost."""
        if self.store not in ("sqlite", "postgres"):
            return
        from django.db import connection

        from bench.schema_switches import stat_trigger

        prefix = self.jobs.service.settings.table_prefix
        with connection.cursor() as cursor:
            for statement in stat_trigger(connection.vendor, on=False, prefix=prefix):
                cursor.execute(statement)
        self.info["stat_trigger"] = "off"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        with contextlib.suppress(Exception):
            self.jobs.reset()
        cleanup_external(self.store, self.tag)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- baselines -------------------------------------------------------------------------------
    def baseline(self, *names: str) -> dict[str, float]:
        """The named raw baselines of this store, measured now (next to the figure)."""
        where = baselines.Where(
            self.store,
            self.tmp,
            self.pg_db,
            self.prefix,
            self.sizes.baseline_seconds,
            self.sizes.many,
        )
        return baselines.measure(where, names)

    def bracketed(self, name: str, measure: Callable[[], float]) -> tuple[float, float]:
        """`measure()` (a rate) and the mean of baseline `name` taken just before and just
        after it: a long figure on a noisy machine is then compared with the same noise."""
        before = self.baseline(name)[name]
        value = measure()
        after = self.baseline(name)[name]
        return value, (before + after) / 2

    # -- the store -------------------------------------------------------------------------------
    def completed(self) -> int:
        if self.info.get("count_triggers") == "off":  # counts() is stale: count the rows
            from django.db import connection

            table = self.jobs.service.store.inner.job_table  # type: ignore[attr-defined]
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE queue = %s AND state = 'completed'",
                    [QUEUE],
                )
                return int(cursor.fetchone()[0])
        return int(self.jobs.counts().get(QUEUE, {}).get("completed", 0))

    def wipe(self) -> None:
        """Remove every job (no worker may be running): each figure starts from an empty store."""
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

        # The job counts' table last: deleting jobs fires its triggers.
        tables = sorted(self.job_tables(), key=lambda t: t == self.count_table())
        with connection.cursor() as cursor:
            for table in tables:
                cursor.execute(f'DELETE FROM "{table}"')
            if self.store == "postgres":
                for table in tables:
                    cursor.execute(f'VACUUM ANALYZE "{table}"')
            else:
                cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def job_tables(self) -> list[str]:
        from django.db import connection

        prefix = self.jobs.service.settings.table_prefix
        return [t for t in connection.introspection.table_names() if t.startswith(prefix)]

    def count_table(self) -> str:
        from anole_jobs.stores.database.ddl import tables

        return tables(self.jobs.service.settings.table_prefix).count

    def vacuum(self) -> None:
        """PostgreSQL: VACUUM ANALYZE the job tables (fresh statistics and visibility map)."""
        if self.store != "postgres":
            return
        from django.db import connection

        with connection.cursor() as cursor:
            for table in self.job_tables():
                cursor.execute(f'VACUUM ANALYZE "{table}"')

    def clean_finished(self) -> None:
        """Delete finished jobs through the store contract (safe while workers run)."""
        from anole_jobs.core import FINAL_STATES

        service = self.jobs.service
        later = service.clock() + timedelta(days=1)
        horizons = {s: timedelta(0) for s in FINAL_STATES}
        deadline = Deadline(300, "pruning finished jobs")
        while service.store.prune(now=later, horizons=horizons) > 0:
            deadline.check()
        self.vacuum()

    def enqueue_batches(self, n: int, **options: Any) -> None:
        from bench.jobs import Noop

        batch = self.sizes.batch
        for start in range(0, n, batch):
            self.jobs.enqueue_many(
                [Noop(n=i) for i in range(start, min(n, start + batch))], **options
            )

    def wait_completed(self, target: int, deadline: Deadline) -> float:
        """Poll `jobs.counts()` every --poll-interval until `target` jobs are completed;
        return the perf_counter time it saw them."""
        while True:
            done = self.completed()
            if done >= target:
                return time.perf_counter()
            deadline.check(f"({done}/{target} completed; counts {self.jobs.counts()})")
            time.sleep(self.options.poll_interval)

    # -- workers ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def worker(self, concurrency: int = CONCURRENCY) -> Iterator[Worker]:
        """A started worker, idle and settled; stopped (and checked) on the way out."""
        worker = worker_for(self, concurrency)
        stopped: dict[str, Any] = {}
        try:
            worker.start(Deadline(60, "runjobs start-up"))
            time.sleep(0.5)  # settle: listener connected, first poll done, idle
            yield worker
        finally:
            stopped = worker.stop()
        if stopped.get("log_errors"):
            raise RuntimeError("runjobs logged errors:\n" + "\n".join(stopped.get("log_tail", [])))

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
        """Enqueue one job at a time, wait until it started; the samples are
        ``attempted_at - created_at`` in ms (both from this machine's clock)."""
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


def cleanup_external(store: str, tag: str) -> None:
    """Drop the bench's PostgreSQL database / delete its Redis keys (idempotent)."""
    try:
        if store == "postgres":
            import psycopg

            with psycopg.connect(
                dbname="postgres",
                autocommit=True,
                connect_timeout=5,
                **PG,  # type: ignore[arg-type]
            ) as c:
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
