"""Dramatiq (Redis broker) through the comparison harness: `Actor.send`, no bulk API; ONE
`dramatiq --processes 1 --threads 10`. Unfinished = the broker's message hash (queued and
fetched-but-not-acked messages)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from bench.peers import harness

NAMESPACE = os.environ.get("ANOLE_PEER_NAME", "anole_peers_dramatiq")
broker = RedisBroker(url=harness.REDIS_URL, namespace=NAMESPACE)
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name="default", max_retries=0)
def noop(n: int) -> None:
    return None


def build(args: argparse.Namespace) -> harness.Peer:
    import importlib
    from importlib.metadata import version

    name = f"anole_peers_{args.tag}_dramatiq"
    os.environ["ANOLE_PEER_NAME"] = name
    module = importlib.import_module("bench.peers.dramatiq_peer")
    client = module.broker.client
    actor = module.noop

    def enqueue_many(n: int) -> None:
        for i in range(n):
            actor.send(i)

    def clear() -> None:
        for key in client.scan_iter(match=f"{name}:*", count=1000):
            client.delete(key)

    return harness.Peer(
        name="Dramatiq",
        store="redis",
        version=version("dramatiq"),
        enqueue_one=actor.send,
        enqueue_many=enqueue_many,
        bulk_api="",
        unfinished=lambda: int(client.hlen(f"{name}:default.msgs")),
        clear=clear,
        worker_argv=[
            str(Path(sys.executable).parent / "dramatiq"),
            "bench.peers.dramatiq_peer",
            "--processes",
            "1",
            "--threads",
            "10",
        ],
        worker_env={"ANOLE_PEER_NAME": name},
    )


if __name__ == "__main__":
    harness.main(build)
