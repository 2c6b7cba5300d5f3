"""Celery (Redis broker) through the comparison harness: `Task.delay`, no bulk API; ONE
`celery worker -P threads -c 10` with late acks and a prefetch of 1, so the broker's queue
length plus its unacked hash count every unfinished job."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from celery import Celery

from bench.peers import harness

QUEUE = os.environ.get("ANOLE_PEER_NAME", "anole_peers_celery")
app = Celery("anole_peers", broker=harness.REDIS_URL)
app.conf.update(
    task_default_queue=QUEUE,
    task_ignore_result=True,
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
)


@app.task(name="noop")
def noop(n: int) -> None:
    return None


def build(args: argparse.Namespace) -> harness.Peer:
    import importlib
    from importlib.metadata import version

    name = f"anole_peers_{args.tag}_celery"
    os.environ["ANOLE_PEER_NAME"] = name
    module = importlib.import_module("bench.peers.celery_peer")
    task = module.noop
    from redis import Redis

    redis = Redis.from_url(harness.REDIS_URL)

    def enqueue_many(n: int) -> None:
        for i in range(n):
            task.delay(i)

    def unfinished() -> int:
        return int(redis.llen(name)) + int(redis.hlen("unacked"))

    def clear() -> None:
        redis.delete(name)
        redis.delete("unacked", "unacked_index")

    return harness.Peer(
        name="Celery",
        store="redis",
        version=version("celery"),
        enqueue_one=task.delay,
        enqueue_many=enqueue_many,
        bulk_api="",
        unfinished=unfinished,
        clear=clear,
        worker_argv=[
            str(Path(sys.executable).parent / "celery"),
            "-A",
            "bench.peers.celery_peer",
            "worker",
            "-P",
            "threads",
            "-c",
            "10",
            "-Q",
            name,
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-l",
            "WARNING",
        ],
        worker_env={"ANOLE_PEER_NAME": name},
        teardown=redis.close,
    )


if __name__ == "__main__":
    harness.main(build)
