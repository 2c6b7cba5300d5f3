"""Real `runjobs` processes on a Redis Cluster (the session's local three masters): jobs of
queues whose slots three different masters serve all run, one process leads, and a job whose
process is killed is rescued by the other one once its lease lapses.
"""

from __future__ import annotations

import re

import pytest

from anole_jobs.stores.redis.keys import SLOTS, queue_slot
from tests.e2e.conftest import Backend, Spec, wait_until

pytestmark = pytest.mark.e2e

LEADS = "is now leader"


def queues_on_distinct_masters(cluster: object) -> dict[str, int]:
    chosen: dict[str, int] = {}
    for i in range(1000):
        queue = f"e2e{i}"
        port = cluster.node_of_slot(queue_slot(queue))  # type: ignore[attr-defined]
        if port not in chosen.values():
            chosen[queue] = port
        if len(chosen) == 3:
            return chosen
    raise AssertionError("no queue names found for every master")


def test_runjobs_on_a_cluster_runs_every_shard_and_rescues_a_killed_run(
    cluster_backend: Backend, local_redis_cluster: object
) -> None:
    backend = cluster_backend
    placed = queues_on_distinct_masters(local_redis_cluster)
    assert len(set(placed.values())) == 3  # three queues, three masters
    queues = ",".join(placed)
    workers = [backend.spawn(QUEUES=queues) for _ in range(2)]
    for worker in workers:
        worker.wait_ready()
    batches = backend.enqueue_specs(
        *(Spec("noop", 4, queue=q, args={"marker": str(backend.markers)}) for q in placed)
    )
    for queue, ids in zip(placed, batches, strict=True):
        # Each job's id carries the slot of its queue, so it lives on that queue's master.
        assert {job_id % SLOTS for job_id in ids} == {queue_slot(queue)}
    every = [job_id for ids in batches for job_id in ids]
    backend.wait_state(every, "completed")
    # One process leads (leadership lives in the global hash tag's slot).
    wait_until(lambda: any(LEADS in w.output() for w in workers), "a leader", 15)
    assert sum(LEADS in w.output() for w in workers) == 1

    # A run whose process is killed outright is rescued by the other process (the leader,
    # by then) after its lease: maintenance reaches the slot of every known queue.
    blocked_queue = list(placed)[1]
    marker = str(backend.markers)
    (blocked,) = backend.enqueue("block", queue=blocked_queue, seconds=60, marker=marker)
    backend.wait_markers(1, "started", job_id=blocked)
    running = next(
        w for w in workers if re.search(rf"e2e-marker {blocked}\.1\.started", w.output())
    )
    running.kill()
    survivor = next(w for w in workers if w is not running)
    survivor.wait_output(LEADS, timeout=15)
    records = backend.wait_jobs(
        [blocked], lambda r: r["state"] == "completed", "the killed run rescued and rerun"
    )
    assert records[blocked]["attempt"] == 2
    assert records[blocked]["errors"][0]["type"] == "LeaseExpired"
