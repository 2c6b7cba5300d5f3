"""Soak: ONE `manage.py runjobs --concurrency 10` works 200,000 no-op jobs, enqueued in 10
rounds of 20,000 while it runs; its resident memory is read after each round. The figure is the
RSS after the last round against the RSS after the first (the first round warms every cache and
pool), so a leak of even a few hundred bytes per job shows. Opt-in:
``python -m bench --scenarios soak`` (a few minutes). Memory: skipped (jobs live in the bench)."""

from __future__ import annotations

from bench.common import Deadline, process_rss
from bench.context import Bench
from bench.report import Figure, figure

NAME = "soak"
ROUNDS = 10


def run(bench: Bench) -> list[Figure]:
    if bench.store == "memory":
        return []
    per_round = bench.sizes.runtime * 2  # 20,000 (2,000 with --quick)
    bench.wipe()
    samples: list[int] = []
    with bench.worker() as worker:
        assert worker.pid is not None
        started = process_rss(worker.pid)
        for done in range(1, ROUNDS + 1):
            bench.enqueue_batches(per_round)
            bench.wait_completed(done * per_round, Deadline(max(120.0, per_round / 50), "soak"))
            samples.append(process_rss(worker.pid) or 0)
    total = ROUNDS * per_round
    mib = [f"{s / 2**20:.1f}" for s in samples]
    return [
        figure(
            "soak_rss",
            f"worker RSS after {total:,} jobs",
            samples[-1] / 2**20,
            "MiB",
            ratio=samples[-1] / samples[0],
            against=f"RSS after the first {per_round:,}",
            note=f"RSS at start {(started or 0) / 2**20:.1f} MiB; after each round (MiB): "
            + ", ".join(mib),
        )
    ]
