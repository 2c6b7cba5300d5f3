"""`jobs.enqueue_many` in batches of 1,000, against the server's own bulk path (PostgreSQL
COPY, SQLite executemany in one transaction, a Redis pipeline). A second figure times the
store's `insert` alone, the jobs built beforehand: it separates what the store costs from
what building and validating each job costs in the service."""

from __future__ import annotations

import time

from bench.context import Bench
from bench.report import Figure, figure

NAME = "enqueue_many"

AGAINST = {
    "memory": "thread ping-pong",
    "sqlite": "raw executemany, 1 txn",
    "postgres": "raw COPY",
    "redis": "raw pipeline HSET+ZADD",
}


def run(bench: Bench) -> list[Figure]:
    from bench.jobs import Noop

    n = bench.sizes.many
    bench.wipe()
    base_name = "round_trip" if bench.store == "memory" else "bulk"

    def enqueue() -> float:
        began = time.perf_counter()
        bench.enqueue_batches(n)
        return n / (time.perf_counter() - began)

    rate, base = bench.bracketed(base_name, enqueue)

    bench.wipe()
    service = bench.jobs.service
    now = service.clock()
    batches = [
        [service.build(Noop(n=i), now=now) for i in range(start, min(n, start + bench.sizes.batch))]
        for start in range(0, n, bench.sizes.batch)
    ]
    built = time.perf_counter()
    for batch in batches:
        service.store.insert(batch)
    store_rate = n / (time.perf_counter() - built)
    against = AGAINST[bench.store]
    return [
        figure(
            "enqueue_many",
            f"enqueue_many (N={n:,}, batches of {bench.sizes.batch:,})",
            rate,
            "jobs/s",
            ratio=rate / base,
            against=against,
        ),
        figure(
            "enqueue_many_store",
            "  store.insert alone (jobs built before)",
            store_rate,
            "jobs/s",
            ratio=store_rate / base,
            against=against,
        ),
    ]
