"""Sustained load: a producer enqueues at a steady rate while `runjobs` processes work, per store.
Reports throughput, enqueue-to-start latency (p50/p99), each worker's RSS over time and, on
PostgreSQL, the jobs table's dead tuples and the oldest open transaction. CI: about 20 s per
store with 2 processes; the long run: 30 minutes with 4.

Asserted: everything enqueued completes (the reconciliation), RSS does not keep growing, and on
PostgreSQL no transaction stays open (none is held while a handler runs: a long-open one stops
vacuum).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.harness import LONG, Cluster, scale
from tests.e2e.conftest import ROOT

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

RATE = 60.0  # jobs per second the producer offers


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def pg_health(pg: Any) -> tuple[int, float]:
    """(dead tuples in the jobs table, age in seconds of the oldest open transaction of any
    other session of this database)."""
    dead = pg.execute(
        "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables"
        " WHERE relname = 'anole_jobs_job'"
    ).fetchone()[0]
    oldest = pg.execute(
        "SELECT coalesce(max(extract(epoch FROM now() - xact_start)), 0) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND xact_start IS NOT NULL"
    ).fetchone()[0]
    return int(dead), float(oldest)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else 0.0


def test_sustained_load(cluster: Cluster) -> None:
    seconds = scale(10, 1800)
    processes = 4 if LONG else 2
    workers = cluster.start(processes, CONCURRENCY="8")
    for worker in workers:
        worker.wait_ready()
    producer = subprocess.Popen(
        [sys.executable, "-m", "django", "chaos_produce", str(RATE), str(seconds)],
        cwd=ROOT,
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    samples: list[dict[str, Any]] = []
    while producer.poll() is None:
        sample: dict[str, Any] = {
            "t": round(time.monotonic() - started, 1),
            "rss_kib": [rss_kib(w.pid) for w in workers],
        }
        if cluster.backend.pg is not None:
            sample["dead_tuples"], sample["oldest_xact_s"] = pg_health(cluster.backend.pg)
        samples.append(sample)
        # The sampling period of the report, not a wait for a condition.
        time.sleep(1.0 if not LONG else 10.0)
    out, err = producer.communicate(timeout=60)
    assert producer.returncode == 0, err
    cluster.enqueued.extend(json.loads(out))
    cluster.wait_all_final(timeout=scale(120, 1800))
    elapsed = time.monotonic() - started
    report = cluster.reconcile()
    assert report.completed == report.enqueued
    starts = [r for r in cluster.log() if r["e"] == "start" and r.get("sent")]
    latency = [(r["t"] - r["sent"]) / 1e9 for r in starts]
    rss_first = [v for v in samples[0]["rss_kib"] if v]
    rss_last = [v for v in samples[-1]["rss_kib"] if v]
    figures = {
        "store": cluster.backend.name,
        "processes": processes,
        "seconds": round(elapsed, 1),
        "jobs": report.enqueued,
        "throughput_jobs_per_s": round(report.enqueued / elapsed, 1),
        "latency_p50_s": round(statistics.median(latency), 3),
        "latency_p99_s": round(percentile(latency, 0.99), 3),
        "rss_kib_first": rss_first,
        "rss_kib_last": rss_last,
    }
    if cluster.backend.pg is not None:
        figures["dead_tuples_max"] = max(s["dead_tuples"] for s in samples)
        figures["oldest_xact_s_max"] = round(max(s["oldest_xact_s"] for s in samples), 2)
    print("load:", json.dumps(figures))
    (cluster.backend.tmp.parent / f"load-{cluster.backend.name}.json").write_text(
        json.dumps({**figures, "samples": samples})
    )
    # RSS flat: no worker grew by more than half over the run (start-up imports included).
    for first, last in zip(rss_first, rss_last, strict=False):
        assert last <= first * 1.5 + 20_000, figures
    if cluster.backend.pg is not None:
        # Transactions are short: none stayed open while handlers ran.
        assert figures["oldest_xact_s_max"] < 5.0, figures
    cluster.stop_all()
