"""A Redis Cluster master killed mid-run (chaos tier): its replica takes over; meanwhile the
queues whose masters are healthy keep working (each queue's outcomes are written apart), no
job is lost, and the queue of the killed master resumes once its replica leads."""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REQUIRED, _skip_reason
from tests.e2e.conftest import RUN_ID, Backend, base_env, store_reader, wait_until

pytestmark = pytest.mark.chaos

#: Jobs per queue, each a handler sleep of `SLEEP` seconds, two slots per queue: about
#: JOBS * SLEEP / 2 seconds of work per queue, long enough to span the failover.
JOBS, SLEEP = 300, 0.05
#: The longest a healthy master's queue may go without finishing a job.
STALL_BOUND = 1.5


def two_queues_on_two_masters(cluster: Any, avoid: int) -> tuple[str, str]:
    """Two queue names whose slots live on different masters, neither on `avoid`."""
    from anole_jobs.stores.redis.keys import queue_slot

    by_master: dict[int, str] = {}
    for n in range(200):
        name = f"fo{n}"
        master = cluster.node_of_slot(queue_slot(name))
        if master != avoid:
            by_master.setdefault(master, name)
        if len(by_master) == 2:
            first, second = by_master.values()
            return first, second
    raise AssertionError("no two queues on two masters")


def patient(read: Any) -> Any:
    """A reader that reads nothing while the test's own client waits out the failover."""
    from anole_jobs.errors import StoreUnavailable

    def read_or_nothing(ids: list[int]) -> Any:
        try:
            return read(ids)
        except StoreUnavailable:
            return {}

    return read_or_nothing


def longest_gap(times: list[datetime], since: datetime) -> float:
    times = sorted(t for t in times if t >= since)
    return max(((b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)), default=0)


def test_queues_on_healthy_masters_do_not_wait_for_a_failover(tmp_path: Path) -> None:
    from redis.cluster import RedisCluster as Client

    from anole_jobs.stores.redis.cluster import RedisClusterStore
    from anole_jobs.stores.redis.keys import key_slot
    from tests.support.redis_cluster import RedisCluster, cluster_unavailable

    reason = cluster_unavailable()
    if reason is not None:
        if "redis" in REQUIRED:
            pytest.fail(f"ANOLE_TEST_REQUIRE names redis, but {reason}", pytrace=False)
        pytest.skip(_skip_reason("redis", reason))
    cluster = RedisCluster(tmp_path / "cluster", replicas=1, node_timeout_ms=2000)
    cluster.start()
    store = None
    backend = None
    try:
        cluster.wait_replicas_synced()
        prefix = f"anole-e2e:{RUN_ID}:{uuid.uuid4().hex[:8]}:"
        store = RedisClusterStore(Client.from_url(cluster.urls[0]), key_prefix=prefix)
        global_master = cluster.node_of_slot(key_slot(store.global_keys.prefix))
        healthy, doomed = two_queues_on_two_masters(cluster, avoid=global_master)
        (tmp_path / "markers").mkdir()
        backend = Backend(
            name="redis_cluster",
            env=base_env(
                ANOLE_E2E_STORE="redis_cluster",
                ANOLE_E2E_SQLITE=str(tmp_path / "unused.sqlite3"),
                ANOLE_E2E_REDIS=cluster.urls[0],
                ANOLE_E2E_KEY_PREFIX=prefix,
            ),
            tmp=tmp_path,
            reader=patient(store_reader(store)),
        )
        worker = backend.spawn(QUEUES=f"{healthy},{doomed}")
        worker.wait_ready()
        ids = {
            queue: backend.enqueue("busy", JOBS, queue=queue, seconds=SLEEP)
            for queue in (healthy, doomed)
        }
        # Both queues under way, then the doomed queue's master dies.
        wait_until(
            lambda: all(
                sum(r["state"] == "completed" for r in backend.jobs(ids[q][:40]).values()) >= 10
                for q in (healthy, doomed)
            ),
            "both queues working",
            20,
        )
        killed_at = datetime.now().astimezone()
        cluster.kill(cluster.node_of_slot(key_slot(doomed)))
        everything = ids[healthy] + ids[doomed]
        backend.wait_state(everything, "completed", timeout=40)
        finished = {
            queue: [store.get(job_id).finished_at for job_id in ids[queue]]
            for queue in (healthy, doomed)
        }
        gap = longest_gap(finished[healthy], killed_at)
        stalled = longest_gap(finished[doomed], killed_at)
        print(
            f"after the kill: {healthy} (healthy master) waited at most {gap:.2f} s between two"
            f" finished jobs; {doomed} (killed master) {stalled:.2f} s"
        )
        assert gap <= STALL_BOUND, worker.output()[-3000:]
        assert all(r["attempt"] >= 1 for r in backend.jobs(everything).values())
    finally:
        if backend is not None:
            for spawned in backend.workers:
                spawned.close()
        if store is not None:
            store.close()
        cluster.stop()
