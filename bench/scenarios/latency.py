"""Enqueue→start latency (`attempted_at − created_at`) of single jobs enqueued one at a time,
each waited for: idle, and under load (probes at priority 100 while a backlog of no-op jobs
drains: the runtime's dispatch latency, not the backlog's queueing time). Ratios are in
round trips of the store's server (its raw `SELECT 1` / `PING`), measured next to them.

`ANOLE_BENCH_LATENCY_SAMPLES=DIR` also writes every sample, in ms and in the order taken, to
``DIR/<store>-<figure>.json`` (to look at the distribution behind a p99 of ~100 samples)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from bench.common import Deadline, latency_summary
from bench.context import Bench
from bench.report import Figure, figure

NAME = "latency"


def run(bench: Bench) -> list[Figure]:
    bench.wipe()
    figures: list[Figure] = []
    with bench.worker():
        rt = bench.baseline("round_trip")["round_trip"]
        samples, lost = bench.latency_probes(
            bench.sizes.latency,
            Deadline(120, "idle latency"),
            budget=bench.sizes.latency_budget,
        )
        _dump(bench, "latency_idle", samples)
        figures += _figures("latency_idle", "enqueue→start, idle", samples, lost, rt)

        rt = bench.baseline("round_trip")["round_trip"]
        samples, lost = _under_load(bench)
        _dump(bench, "latency_load", samples)
        figures += _figures(
            "latency_load",
            f"enqueue→start, prio 100 behind {bench.sizes.backlog:,} jobs",
            samples,
            lost,
            rt,
        )
    return figures


def _dump(bench: Bench, key: str, samples: list[float]) -> None:
    where = os.environ.get("ANOLE_BENCH_LATENCY_SAMPLES")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        Path(where, f"{bench.store}-{key}.json").write_text(json.dumps(samples))


def _figures(key: str, label: str, samples: list[float], lost: int, rt: float) -> list[Figure]:
    summary = latency_summary(samples, lost)
    note = f"n={summary['n']}" + (f", {lost} lost" if lost else "")
    return [
        figure(
            f"{key}_{q}",
            f"{label} {q}",
            summary.get(q),
            "ms",
            ratio=summary[q] * rt / 1000 if q in summary else None,
            against="server round trips",
            note=note if q == "p50" else "",
        )
        for q in ("p50", "p99")
    ]


def _under_load(bench: Bench) -> tuple[list[float], int]:
    n = bench.sizes.backlog
    deadline = Deadline(max(60.0, n / 50), "latency under load")
    stop = threading.Event()
    probes: dict[str, Any] = {"samples": [], "lost": 0, "error": None}

    def probe() -> None:
        try:
            probes["samples"], probes["lost"] = bench.latency_probes(
                10**9, deadline, stop=stop, priority=100, poll=0.005
            )
        except Exception as exc:  # noqa: BLE001 - raised below, in the bench's thread
            probes["error"] = repr(exc)

    base = bench.completed()
    thread = threading.Thread(target=probe, name="bench-probe", daemon=True)
    thread.start()
    try:
        bench.enqueue_batches(n)
        bench.wait_completed(base + n, deadline)
    finally:
        stop.set()
        thread.join(max(0.0, deadline.left()) + 5)
    if probes["error"]:
        raise RuntimeError(f"latency probe failed: {probes['error']}")
    return probes["samples"], probes["lost"]
