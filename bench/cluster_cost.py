"""What a Redis Cluster costs the Redis store: the same store calls on one local redis-server
and on a local 3-master cluster, interleaved in one process.

    .venv/bin/python bench/cluster_cost.py [--rounds 5] [--jobs 5000] [--singles 500]

Both servers are started by the script on free ports of 127.0.0.1 (no persistence), so they
see the same machine load. Each round, for each store (one node, then the cluster, or the
reverse every other round), it times `store.insert` of `--jobs` jobs in batches of 1,000 in
one queue (what `enqueue_many` does), `--singles` single `store.insert` calls (one `enqueue`
each), claim 10 + finish rounds over the batch's jobs (a worker's two calls), and `counts()`
with jobs in 8 queues; then deletes the keys. Each is timed in wall time and in this
process's CPU time (less sensitive to a loaded machine), and the commands the servers
executed (a script's own `redis.call`s included) are counted for single inserts and `counts()`
(exact whatever the load). It prints
the median of each per store and the ratio cluster ÷ one node per round (min–max). Needs
`redis-server` and `redis-cli`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

settings.configure(SECRET_KEY="bench", USE_TZ=True, INSTALLED_APPS=["anole_jobs"])
django.setup()

import redis  # noqa: E402
from redis.cluster import RedisCluster as ClusterClient  # noqa: E402

from anole_jobs.stores.base import Finish, NewJob, RunRef  # noqa: E402
from anole_jobs.stores.redis.cluster import RedisClusterStore  # noqa: E402
from anole_jobs.stores.redis.keys import Keys  # noqa: E402
from anole_jobs.stores.redis.store import RedisStore  # noqa: E402
from tests.support.redis_cluster import RedisCluster  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def job(queue: str, n: int) -> NewJob:
    return NewJob(
        kind="bench.noop",
        queue=queue,
        args={"n": n},
        meta={},
        priority=0,
        max_attempts=3,
        state="available",
        scheduled_at=T0,
        created_at=T0,
    )


def commands(nodes: list[Any]) -> int:
    """Commands the servers processed so far, those the scripts ran (`redis.call`) included."""
    return sum(int(node.info("stats")["total_commands_processed"]) for node in nodes)


def measure(store: Any, jobs: int, singles: int, nodes: list[Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    start, cpu = time.perf_counter(), time.process_time()
    for first in range(0, jobs, 1000):
        store.insert([job("bench", n) for n in range(first, min(jobs, first + 1000))])
    out["insert batch µs/job"] = (time.perf_counter() - start) / jobs * 1e6
    out["insert batch CPU µs/job"] = (time.process_time() - cpu) / jobs * 1e6
    before = commands(nodes)
    start, cpu = time.perf_counter(), time.process_time()
    for n in range(singles):
        store.insert([job("single", n)])
    out["insert one µs/job"] = (time.perf_counter() - start) / singles * 1e6
    out["insert one CPU µs/job"] = (time.process_time() - cpu) / singles * 1e6
    out["insert one server cmds"] = (commands(nodes) - before - len(nodes)) / singles
    lease = T0 + timedelta(seconds=30)
    start, cpu = time.perf_counter(), time.process_time()
    done = 0
    while done < jobs:
        claimed = store.claim("bench", kinds=None, limit=10, now=T0, lease_until=lease, worker="b")
        if not claimed:
            break
        store.finish(
            [
                Finish(run=RunRef(c.run.id, c.run.attempt, c.run.token), state="completed", at=T0)
                for c in claimed
            ]
        )
        done += len(claimed)
    if done != jobs:
        raise AssertionError(f"claimed {done} of {jobs} jobs")
    out["claim+finish µs/job"] = (time.perf_counter() - start) / done * 1e6
    out["claim+finish CPU µs/job"] = (time.process_time() - cpu) / done * 1e6
    for q in range(8):
        store.insert([job(f"counted{q}", n) for n in range(10)])
    before = commands(nodes)
    start = time.perf_counter()
    for _ in range(20):
        store.counts()
    out["counts() ms"] = (time.perf_counter() - start) / 20 * 1e3
    out["counts() server cmds"] = (commands(nodes) - before - len(nodes)) / 20
    return out


def clean(clients: list[Any], prefix: str) -> None:
    for client in clients:
        for key in client.scan_iter(match=Keys(prefix).pattern(), count=1000):
            client.delete(key)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--singles", type=int, default=500)
    options = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="anole_cluster_cost_"))
    server, cluster = RedisServer(), RedisCluster(tmp / "cluster")
    server.start()
    cluster.start()
    try:
        single_client = redis.Redis.from_url(server.url)
        cluster_client = ClusterClient.from_url(cluster.urls[0])
        nodes = [redis.Redis(host="127.0.0.1", port=port) for port in cluster.ports]
        figures: dict[str, dict[str, list[float]]] = {"one node": {}, "cluster": {}}
        ratios: dict[str, list[float]] = {}
        for round_ in range(options.rounds):
            order = ["one node", "cluster"] if round_ % 2 == 0 else ["cluster", "one node"]
            got: dict[str, dict[str, float]] = {}
            for name in order:
                prefix = f"bench{round_}:"
                if name == "one node":
                    store: Any = RedisStore(single_client, key_prefix=prefix)
                    got[name] = measure(store, options.jobs, options.singles, [single_client])
                    clean([single_client], prefix)
                else:
                    store = RedisClusterStore(cluster_client, key_prefix=prefix)
                    got[name] = measure(store, options.jobs, options.singles, nodes)
                    clean(nodes, prefix)
                for figure, value in got[name].items():
                    figures[name].setdefault(figure, []).append(value)
            for figure in got["one node"]:
                ratios.setdefault(figure, []).append(
                    got["cluster"][figure] / got["one node"][figure]
                )
            print(
                f"round {round_ + 1}: " + ", ".join(f"{f} {r[-1]:.2f}x" for f, r in ratios.items())
            )
        print(f"\n{options.rounds} rounds, {options.jobs} jobs, {options.singles} single inserts")
        print(f"{'figure':<26} {'one node':>10} {'cluster':>10}  cluster ÷ one node (min–max)")
        for figure, values in ratios.items():
            one = statistics.median(figures["one node"][figure])
            many = statistics.median(figures["cluster"][figure])
            print(
                f"{figure:<26} {one:>10.1f} {many:>10.1f}  {statistics.median(values):.2f}x "
                f"({min(values):.2f}–{max(values):.2f})"
            )
    finally:
        server.kill()
        cluster.stop()


if __name__ == "__main__":
    main()
