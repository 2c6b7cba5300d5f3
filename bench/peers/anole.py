"""anole_jobs through the comparison harness (project virtualenv): `bench/settings.py` for
the store named by ``--store``; the worker is ONE `manage.py runjobs --concurrency 10`."""

from __future__ import annotations

import argparse
import sys

from bench.common import BENCH_DIR, QUEUE, QUICK
from bench.peers import harness


def build(args: argparse.Namespace) -> harness.Peer:
    from bench.common import Options
    from bench.context import Bench

    bench = Bench(args.store, QUICK, f"{args.tag}_anole", Options())
    bench.setup()
    from importlib.metadata import version

    from bench.jobs import Noop

    jobs = bench.jobs

    def enqueue_many(n: int) -> None:
        for start in range(0, n, 1_000):
            jobs.enqueue_many([Noop(n=i) for i in range(start, min(n, start + 1_000))])

    def unfinished() -> int:
        counts = jobs.counts().get(QUEUE, {})
        return sum(n for state, n in counts.items() if state not in ("completed", "dead"))

    return harness.Peer(
        name="anole_jobs",
        store=args.store,
        version=version("anole_jobs"),
        enqueue_one=lambda i: jobs.enqueue(Noop(n=i)),
        enqueue_many=enqueue_many,
        bulk_api="jobs.enqueue_many",
        unfinished=unfinished,
        clear=bench.wipe,
        worker_argv=[
            sys.executable,
            str(BENCH_DIR / "manage.py"),
            "runjobs",
            "--queue",
            QUEUE,
            "--concurrency",
            "10",
        ],
        worker_env={**bench.env, "ANOLE_BENCH_RUN": "auto"},
        teardown=bench.close,
    )


if __name__ == "__main__":
    harness.main(build)
