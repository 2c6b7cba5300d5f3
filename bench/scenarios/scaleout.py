"""Scale-out: 1, 2 and 4 `manage.py runjobs --concurrency 10` processes on one store, each
started and idle; the bench pauses the queue, enqueues N no-op jobs, resumes it, and
throughput is N ÷ (all completed − resume), against ONE process measured in the same run (a
full queue, so that faster workers do not finish most of it while it is being enqueued). Not run by
default (it is slow and, on a machine with fewer cores than processes, measures the cores):
``python -m bench --scenarios scaleout``. Memory has no processes to add: skipped."""

from __future__ import annotations

import contextlib
import os
import time

from bench.common import QUEUE, Deadline
from bench.context import Bench
from bench.report import Figure, figure
from bench.workers import RunjobsWorker

NAME = "scaleout"
PROCESSES = (1, 2, 4)


def run(bench: Bench) -> list[Figure]:
    if bench.store == "memory":
        return []
    n = bench.sizes.runtime * 2
    rates: dict[int, float] = {}
    for count in PROCESSES:
        bench.wipe()
        with contextlib.ExitStack() as stack:
            for _ in range(count):
                worker = RunjobsWorker(bench)
                stack.callback(worker.stop)
                worker.start(Deadline(60, "runjobs start-up"))
            time.sleep(0.5 + 0.25 * count)  # settle: listeners connected, idle
            deadline = Deadline(max(60.0, n / 50), f"scale-out x{count}")
            bench.jobs.pause(QUEUE)
            bench.enqueue_batches(n)
            bench.jobs.resume(QUEUE)
            resumed = time.perf_counter()
            finished = bench.wait_completed(n, deadline)
        rates[count] = n / (finished - resumed)
    cores = os.cpu_count() or 1
    return [
        figure(
            f"scaleout_{count}",
            f"work, {count} runjobs, c=10 each (N={n:,})",
            rate,
            "jobs/s",
            ratio=rate / rates[1],
            against="1 runjobs, same run",
            note=f"{cores} cores on this machine" if count == PROCESSES[-1] else "",
        )
        for count, rate in rates.items()
    ]
