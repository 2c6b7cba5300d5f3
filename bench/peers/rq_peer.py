"""RQ (Redis) through the comparison harness: `Queue.enqueue`, `Queue.enqueue_many`, and ONE
`rq worker` (RQ's default worker forks a work horse per job: concurrency 1)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.peers import harness


def noop(n: int) -> None:
    return None


def build(args: argparse.Namespace) -> harness.Peer:
    import importlib
    from importlib.metadata import version

    from redis import Redis
    from rq import Queue
    from rq.registry import StartedJobRegistry

    module = importlib.import_module("bench.peers.rq_peer")  # the worker imports it so
    name = f"anole_peers_{args.tag}_rq"
    redis = Redis.from_url(harness.REDIS_URL)
    queue = Queue(name, connection=redis)
    started = StartedJobRegistry(queue=queue)

    def enqueue_many(n: int) -> None:
        for start in range(0, n, 1_000):
            queue.enqueue_many(
                [
                    Queue.prepare_data(module.noop, (i,), result_ttl=0)
                    for i in range(start, min(n, start + 1_000))
                ]
            )

    def clear() -> None:
        queue.empty()
        for key in redis.scan_iter(match=f"rq:*{name}*", count=1000):
            redis.delete(key)

    return harness.Peer(
        name="RQ",
        store="redis",
        version=version("rq"),
        enqueue_one=lambda i: queue.enqueue(module.noop, i, result_ttl=0),
        enqueue_many=enqueue_many,
        bulk_api="Queue.enqueue_many",
        unfinished=lambda: queue.count + started.count,
        clear=clear,
        worker_argv=[
            str(Path(sys.executable).parent / "rq"),
            "worker",
            "--url",
            harness.REDIS_URL,
            "--quiet",
            name,
        ],
        concurrency="1 (a fork per job)",
        teardown=redis.close,
    )


if __name__ == "__main__":
    harness.main(build)
