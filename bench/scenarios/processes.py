"""Processes on a CPU-bound kind: ONE `manage.py runjobs` against `runjobs --processes 2`,
measured in the same run. Python runs one thread of a process at a time, so a process's
handler threads share one core when the jobs only compute; worker processes each get a core.
The bench pauses the queue, enqueues N `bench.cpu` jobs (about 20 ms of arithmetic each),
resumes it, and throughput is N ÷ (all completed − resume), once all of the supervisor's
workers are up. Opt-in (`python -m bench --scenarios processes`): on a machine with one core
it measures nothing. Memory has no processes: skipped."""

from __future__ import annotations

import os
import re
import time

from bench.common import QUEUE, Deadline, machine_cpu, process_cpu
from bench.context import Bench
from bench.report import Figure, figure
from bench.workers import RunjobsWorker

NAME = "processes"
#: (runjobs options, worker processes) per configuration, the baseline first.
#: Two slots per process: more threads do not help jobs that only compute (the docs' advice),
#: and fewer jobs claimed ahead leave less of a tail to one process at the end.
SLOTS = ("--concurrency", "2")
SETUPS: tuple[tuple[tuple[str, ...], int], ...] = (
    (SLOTS, 1),
    ((*SLOTS, "--processes", "2"), 2),
)


def run(bench: Bench) -> list[Figure]:
    if bench.store == "memory":
        return []
    from bench.jobs import Cpu

    n = max(100, bench.sizes.runtime // 20)
    rates: dict[int, float] = {}
    cores: dict[int, str] = {}
    for args, processes in SETUPS:
        bench.wipe()
        worker = RunjobsWorker(bench, args=args, ups=processes)
        try:
            worker.start(Deadline(60, "runjobs start-up"))
            bench.jobs.pause(QUEUE)
            batch = bench.sizes.batch
            for start in range(0, n, batch):
                bench.jobs.enqueue_many([Cpu() for _ in range(start, min(n, start + batch))])
            pids = worker_pids(worker)
            cpu_began, machine_began = sum_cpu(pids), machine_cpu()
            bench.jobs.resume(QUEUE)
            resumed = time.perf_counter()
            finished = bench.wait_completed(n, Deadline(max(60.0, n / 5), f"cpu x{processes}"))
            cores[processes] = used_cores(
                n, sum_cpu(pids) - cpu_began, machine_began, machine_cpu(), finished - resumed
            )
        finally:
            stopped = worker.stop()
        if stopped.get("returncode") != 0 or stopped.get("log_errors"):
            raise RuntimeError(f"runjobs {' '.join(args)} did not stop cleanly: {stopped}")
        rates[processes] = n / (finished - resumed)
    return [
        figure(
            "processes_1",
            f"CPU-bound jobs, ONE runjobs, c=2 (N={n:,})",
            rates[1],
            "jobs/s",
            note=cores[1],
        ),
        figure(
            "processes_2",
            f"CPU-bound jobs, runjobs --processes 2, c=2 each (N={n:,})",
            rates[2],
            "jobs/s",
            ratio=rates[2] / rates[1],
            against="ONE runjobs, same run",
            note=f"{cores[2]}; {os.cpu_count() or 1} cores on this machine",
        ),
    ]


def worker_pids(worker: RunjobsWorker) -> list[int]:
    """The processes that run jobs: runjobs itself, or the workers its supervisor started."""
    started = [
        int(pid) for pid in re.findall(r"worker \d+ started \(pid (\d+)\)", "".join(worker.lines))
    ]
    return started or ([worker.pid] if worker.pid else [])


def sum_cpu(pids: list[int]) -> float:
    return sum(process_cpu(pid) or 0.0 for pid in pids)


def used_cores(n: int, cpu: float, began: object, ended: object, seconds: float) -> str:
    """What the workers used, and how busy the rest of the machine was, in cores: on a
    shared machine the ratio is bounded by the cores the others leave."""
    per_cpu = n / cpu if cpu else 0.0
    text = f"{per_cpu:.0f} jobs per worker CPU-second; the workers used {cpu / seconds:.2f} cores"
    if isinstance(began, tuple) and isinstance(ended, tuple) and ended[1] > began[1]:
        busy = (ended[0] - began[0]) / (ended[1] - began[1]) * (os.cpu_count() or 1)
        text += f", everything else {max(0.0, busy - cpu / seconds):.2f}"
    return text
