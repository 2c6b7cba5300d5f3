"""Huey (Redis) through the comparison harness: calling the task enqueues it, no bulk API;
ONE `huey_consumer -w 10 -k thread`. Unfinished = Huey's pending count (its in-flight tasks,
at most 10, are not counted: an error of ≤ 10 jobs)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from huey import RedisHuey

from bench.peers import harness

huey = RedisHuey(
    os.environ.get("ANOLE_PEER_NAME", "anole_peers_huey"),
    url=harness.REDIS_URL,
    results=False,
)


@huey.task()
def noop(n: int) -> None:
    return None


def build(args: argparse.Namespace) -> harness.Peer:
    import importlib
    from importlib.metadata import version

    name = f"anole_peers_{args.tag}_huey"
    os.environ["ANOLE_PEER_NAME"] = name
    module = importlib.import_module("bench.peers.huey_peer")  # as the consumer imports it
    local, task = module.huey, module.noop

    def enqueue_many(n: int) -> None:
        for i in range(n):
            task(i)

    return harness.Peer(
        name="Huey",
        store="redis",
        version=version("huey"),
        enqueue_one=task,
        enqueue_many=enqueue_many,
        bulk_api="",
        unfinished=local.pending_count,
        clear=local.flush,
        worker_argv=[
            str(Path(sys.executable).parent / "huey_consumer"),
            "bench.peers.huey_peer.huey",
            "-w",
            "10",
            "-k",
            "thread",
            "-q",
        ],
        worker_env={"ANOLE_PEER_NAME": name},
    )


if __name__ == "__main__":
    harness.main(build)
