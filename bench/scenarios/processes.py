"""Processes on a CPU-bound kind: ONE `manage.py runjobs` against `runjobs --processes 2`,
measured in the same run. Python runs one thread of a process at a time, so a process's
handler threads share one core when the jobs only compute; worker processes each get a core.
The bench pauses the queue, enqueues N `bench.cpu` jobs (about 20 ms of arithmetic each),
resumes it, and throughput is N ÷ (all completed − resume), once all of the supervisor's
workers are up. Opt-in (`python -m bench --scenarios processes`): on a machine with one core
it measures nothing. Memory has no processes: skipped."""

from __future__ import annotations

import os
import time

from bench.common import QUEUE, Deadline
from bench.context import Bench
from bench.report import Figure, figure
from bench.workers import RunjobsWorker

NAME = "processes"
#: (runjobs options, worker processes) per configuration, the baseline first.
SETUPS: tuple[tuple[tuple[str, ...], int], ...] = (((), 1), (("--processes", "2"), 2))


def run(bench: Bench) -> list[Figure]:
    if bench.store == "memory":
        return []
    from bench.jobs import Cpu

    n = max(60, bench.sizes.runtime // 40)
    rates: dict[int, float] = {}
    for args, processes in SETUPS:
        bench.wipe()
        worker = RunjobsWorker(bench, args=args, ups=processes)
        try:
            worker.start(Deadline(60, "runjobs start-up"))
            bench.jobs.pause(QUEUE)
            batch = bench.sizes.batch
            for start in range(0, n, batch):
                bench.jobs.enqueue_many([Cpu() for _ in range(start, min(n, start + batch))])
            bench.jobs.resume(QUEUE)
            resumed = time.perf_counter()
            finished = bench.wait_completed(n, Deadline(max(60.0, n / 5), f"cpu x{processes}"))
        finally:
            stopped = worker.stop()
        if stopped.get("returncode") != 0 or stopped.get("log_errors"):
            raise RuntimeError(f"runjobs {' '.join(args)} did not stop cleanly: {stopped}")
        rates[processes] = n / (finished - resumed)
    cores = os.cpu_count() or 1
    return [
        figure(
            "processes_1",
            f"CPU-bound jobs, ONE runjobs, c=10 (N={n:,})",
            rates[1],
            "jobs/s",
        ),
        figure(
            "processes_2",
            f"CPU-bound jobs, runjobs --processes 2, c=10 each (N={n:,})",
            rates[2],
            "jobs/s",
            ratio=rates[2] / rates[1],
            against="ONE runjobs, same run",
            note=f"{cores} cores on this machine",
        ),
    ]
