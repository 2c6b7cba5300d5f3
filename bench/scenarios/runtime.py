"""Work through ONE `manage.py runjobs --concurrency 10` (for memory: `jobs.start()` in the
bench process). Once the worker idles, the bench enqueues N no-op jobs with enqueue_many and
polls `jobs.counts()` until all completed. Throughput = N / (all completed − end of
enqueueing), as issue 12 defines it; against a raw batched claim-10 + complete loop. Also the
worker's CPU per job and its resident memory before and after."""

from __future__ import annotations

import time

from bench.common import Deadline, cpu_report, cpu_snapshot, process_rss
from bench.context import Bench
from bench.report import Figure, figure

NAME = "runtime"


def run(bench: Bench) -> list[Figure]:
    n = bench.sizes.runtime
    bench.wipe()
    with bench.worker() as worker:
        base_name = "round_trip" if bench.store == "memory" else "claim_complete"
        base = bench.baseline(base_name)[base_name]
        time.sleep(0.3)
        deadline = Deadline(max(60.0, n / 50), "runtime throughput")
        worker.profile_start()
        rss_before = process_rss(worker.pid) if worker.pid else None
        cpu_began = cpu_snapshot(bench.store, worker.pid)
        wall_began = time.time()
        began = time.perf_counter()
        bench.enqueue_batches(n)
        enqueued = time.perf_counter()
        done_early = bench.completed()
        finished = bench.wait_completed(n, deadline)
        cpu = cpu_report(cpu_began, cpu_snapshot(bench.store, worker.pid), finished - began, n)
        rss_after = process_rss(worker.pid) if worker.pid else None
        worker.profile_stop()
        diag = worker.diagnostics(wall_began, time.time()) if bench.options.diagnose else {}
        base = (base + bench.baseline(base_name)[base_name]) / 2  # before and after the run
    rate = n / (finished - enqueued)
    e2e = n / (finished - began)
    against = "thread ping-pong" if bench.store == "memory" else "raw claim 10 + complete"
    who = "jobs.start() in-process" if bench.store == "memory" else "1 runjobs"
    note = (
        f"{done_early:,} of {n:,} done when enqueueing ended ({enqueued - began:.2f} s); "
        f"worker {cpu.get('worker_cores') or 0:.2f} cores, server "
        f"{cpu.get('server_cores') or 0:.2f}, everything else {cpu.get('other_cores') or 0:.2f}"
    )
    if diag.get("error"):
        note += f"; the worker's calls could not be read: {diag['error']}"
    elif diag:
        note += "; " + ", ".join(
            f"{op}: {d.get('jobs_per_nonempty_call', 0):.1f} jobs/call, "
            f"{d.get('mean_ms', 0):.2f} ms/call"
            for op, d in diag.items()
            if isinstance(d, dict)
        )
    figures = [
        figure(
            "runtime",
            f"work, {who}, c=10 (N={n:,})",
            rate,
            "jobs/s",
            ratio=rate / base,
            against=against,
            note=note,
        ),
        figure(
            "runtime_e2e",
            "  N / time from the start of enqueueing",
            e2e,
            "jobs/s",
            ratio=e2e / base,
            against=against,
        ),
    ]
    if bench.store != "memory":
        figures.append(
            figure(
                "runtime_cpu",
                "  worker CPU per job",
                cpu["worker_cpu_us_per_job"],
                "µs",
            )
        )
    if rss_before and rss_after:
        figures.append(
            figure(
                "runtime_rss",
                "  worker RSS after the run",
                rss_after / 2**20,
                "MiB",
                ratio=rss_after / rss_before,
                against="RSS before the run",
            )
        )
    return figures
