"""Work driven by `jobs.step()` in the bench process (RUN="manual"): N no-op jobs enqueued,
then `step()` until all ran; against a raw batched claim-10 + complete loop on the server."""

from __future__ import annotations

import time

from bench.common import Deadline
from bench.context import Bench
from bench.report import Figure, figure

NAME = "step"


def run(bench: Bench) -> list[Figure]:
    n = bench.sizes.step
    bench.wipe()
    bench.enqueue_batches(n)
    base_name = "round_trip" if bench.store == "memory" else "claim_complete"
    before = bench.baseline(base_name)[base_name]
    deadline = Deadline(max(60.0, n / 50), "step-driven work")
    began = time.perf_counter()
    ran = 0
    while ran < n:
        report = bench.jobs.step()
        ran += len(report.runs)
        bad = [r for r in report.runs if r.outcome != "completed"]
        if bad:
            raise RuntimeError(f"step ran {bad[0]}")
        if not report.runs:
            deadline.check(f"(ran {ran}/{n})")
            time.sleep(0.001)
    rate = n / (time.perf_counter() - began)
    base = (before + bench.baseline(base_name)[base_name]) / 2
    if bench.completed() != n:
        raise RuntimeError(f"step ran {ran} jobs but {bench.completed()} are completed")
    return [
        figure(
            "step",
            f"work, jobs.step() (N={n:,})",
            rate,
            "jobs/s",
            ratio=rate / base,
            against="thread ping-pong" if bench.store == "memory" else "raw claim 10 + complete",
        )
    ]
