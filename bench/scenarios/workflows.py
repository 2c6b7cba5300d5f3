"""Workflows and results (opt-in: ``--scenarios workflows``).

Cost per step: ONE runjobs (for memory: `jobs.start()` in the bench process) works, in this
order, N plain no-op jobs (enqueue_many), a fan-out/fan-in workflow of N no-op steps (a root,
N-2 steps after it, a join after all of them: `jobs.enqueue_workflow`), the same workflow whose
every step calls `job.dependency_results()` (the join reads N-2 results), and N plain jobs
again. Each figure is the time from the start of enqueueing to the last completion, per job,
and the worker's CPU per job; the ratios are against the mean of the two plain runs, so the
workflow and the plain jobs share the worker, the store and the machine's load.

Result latency: one job at a time on the idle worker, the bench process waits for it with
`jobs.result(id, timeout=10)`; the sample is the moment `result` returned minus the job's
`finished_at` (the worker's clock when it wrote the outcome; one machine, one wall clock).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from bench.common import Deadline, cpu_report, cpu_snapshot, log, percentile
from bench.context import Bench
from bench.report import Figure, figure

NAME = "workflows"
STEPS = 1_000
QUICK_STEPS = 200
SAMPLES = 50
QUICK_SAMPLES = 10


def run(bench: Bench) -> list[Figure]:
    quick = bench.sizes.runtime < 10_000
    n = QUICK_STEPS if quick else STEPS
    samples = QUICK_SAMPLES if quick else SAMPLES
    if bench.store == "sqlite":
        samples = QUICK_SAMPLES  # another process's finish is seen by polling: ~1/8 s each
    bench.wipe()
    with bench.worker() as worker:
        time.sleep(0.3)  # settle: idle, listener connected
        done = 0
        timed: dict[str, dict[str, float]] = {}
        for name, enqueue in (
            ("plain", lambda: bench.enqueue_batches(n)),
            ("workflow", lambda: _enqueue_workflow(bench, n, reads=False)),
            ("workflow_deps", lambda: _enqueue_workflow(bench, n, reads=True)),
            ("plain_again", lambda: bench.enqueue_batches(n)),
        ):
            done += n
            timed[name] = _timed(bench, worker.pid, enqueue, done, n)
            log(f"{bench.store}: {name}: {timed[name]['us']:.0f} µs/job")
        latencies = _result_latency(bench, samples)
    commit_ms = None
    if bench.store != "memory":
        commit_ms = 1000 / bench.baseline("commit")["commit"]
    plain_us = (timed["plain"]["us"] + timed["plain_again"]["us"]) / 2
    plain_cpu = (timed["plain"]["cpu"] + timed["plain_again"]["cpu"]) / 2
    against = f"{n:,} plain jobs, same worker, same run (mean of before and after)"
    figures = [
        figure(
            "workflow_plain",
            f"plain no-op jobs, time per job (N={n:,}, 1 worker, c=10)",
            plain_us,
            "µs",
            note=f"before {timed['plain']['us']:.0f}, after {timed['plain_again']['us']:.0f}",
        ),
        figure(
            "workflow_step",
            f"fan-out/fan-in workflow of {n:,} no-op steps, time per step",
            timed["workflow"]["us"],
            "µs",
            ratio=timed["workflow"]["us"] / plain_us,
            against=against,
        ),
        figure(
            "workflow_step_deps",
            "  the same, every step calls dependency_results()",
            timed["workflow_deps"]["us"],
            "µs",
            ratio=timed["workflow_deps"]["us"] / plain_us,
            against=against,
        ),
    ]
    if bench.store != "memory":
        figures += [
            figure(
                "workflow_step_cpu",
                "  worker CPU per step (no dependency_results)",
                timed["workflow"]["cpu"],
                "µs",
                ratio=timed["workflow"]["cpu"] / plain_cpu if plain_cpu else None,
                against=f"worker CPU per plain job ({plain_cpu:.0f} µs)",
            ),
            figure(
                "workflow_step_deps_cpu",
                "  worker CPU per step (with dependency_results)",
                timed["workflow_deps"]["cpu"],
                "µs",
                ratio=timed["workflow_deps"]["cpu"] / plain_cpu if plain_cpu else None,
                against=f"worker CPU per plain job ({plain_cpu:.0f} µs)",
            ),
        ]
    if latencies:
        p50 = percentile(latencies, 50)
        figures += [
            figure(
                "result_wait_p50",
                f"jobs.result(id, timeout=...) completion -> return, idle, p50 ({len(latencies)})",
                p50,
                "ms",
                ratio=p50 / commit_ms if commit_ms else None,
                against=f"one raw INSERT+COMMIT ({commit_ms:.2f} ms)" if commit_ms else "",
            ),
            figure("result_wait_p95", "  p95", percentile(latencies, 95), "ms"),
        ]
    bench.wipe()
    return figures


def _enqueue_workflow(bench: Bench, n: int, *, reads: bool) -> None:
    from anole_jobs import Workflow
    from bench.jobs import Deps, Noop

    make = Deps if reads else Noop
    wf = Workflow("bench fan-out/fan-in")
    root = wf.add(make(n=0), name="root")
    middle = [wf.add(make(n=i), after=[root]) for i in range(1, n - 1)]
    wf.add(make(n=n - 1), name="join", after=middle)
    bench.jobs.enqueue_workflow(wf)


def _timed(bench: Bench, pid: int | None, enqueue: Any, target: int, n: int) -> dict[str, float]:
    deadline = Deadline(max(120.0, n / 20), "workflows: all completed")
    cpu_began = cpu_snapshot(bench.store, pid)
    began = time.perf_counter()
    enqueue()
    finished = bench.wait_completed(target, deadline)
    cpu = cpu_report(cpu_began, cpu_snapshot(bench.store, pid), finished - began, n)
    return {"us": 1e6 * (finished - began) / n, "cpu": cpu["worker_cpu_us_per_job"] or 0.0}


def _result_latency(bench: Bench, samples: int) -> list[float]:
    from bench.jobs import Noop

    latencies = []
    deadline = Deadline(120.0, "workflows: result latency")
    # A first wait opens the waiter's listening session (PostgreSQL): not a sample.
    bench.jobs.result(bench.jobs.enqueue(Noop(n=-2)).id, timeout=10)
    for i in range(samples):
        deadline.check(f"({len(latencies)} result samples)")
        job_id = bench.jobs.enqueue(Noop(n=-3 - i)).id
        bench.jobs.result(job_id, timeout=10)
        returned = datetime.now(UTC)
        record = bench.jobs.get(job_id)
        if record is None or record.finished_at is None:
            continue
        latencies.append((returned - record.finished_at).total_seconds() * 1000)
        time.sleep(0.02)  # idle between samples, as the enqueue->start probes are spaced
    return latencies
