"""`jobs.enqueue`, one job at a time (each its own transaction), against the rate of a raw
one-row INSERT+COMMIT on the same server: the commit is the bound."""

from __future__ import annotations

import time

from bench.context import Bench
from bench.report import Figure, figure

NAME = "enqueue_one"


def run(bench: Bench) -> list[Figure]:
    from bench.jobs import Noop

    n = bench.sizes.single
    bench.wipe()
    bench.jobs.enqueue(Noop(n=-1))  # connect, load scripts: not part of the figure
    bench.wipe()
    base_name = "round_trip" if bench.store == "memory" else "commit"

    def enqueue() -> float:
        began = time.perf_counter()
        for i in range(n):
            bench.jobs.enqueue(Noop(n=i))
        return n / (time.perf_counter() - began)

    rate, base = bench.bracketed(base_name, enqueue)
    against = "thread ping-pong" if bench.store == "memory" else "raw 1-row INSERT+COMMIT"
    if bench.store == "redis":
        against = "raw HSET+ZADD in MULTI"
    return [
        figure(
            "enqueue_one",
            f"enqueue, one at a time (N={n:,})",
            rate,
            "jobs/s",
            ratio=rate / base,
            against=against,
        )
    ]
