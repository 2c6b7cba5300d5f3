"""Drain: SIGTERM while handlers run long jobs, a second SIGTERM, and SIGTERM while the store
is down. The process exits within `max(drain_timeout) + 3 s` (status 0 for a drain, 1 for a
second signal, which gives the running jobs back first), and every job still completes once
exactly — run again by a fresh process.
"""

from __future__ import annotations

import signal
import time

import pytest

from tests.chaos.harness import Cluster
from tests.e2e.conftest import ALLOWANCE, WRITE_GRACE, Spec
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

DRAIN = 1.0
EXIT_WITHIN = DRAIN + WRITE_GRACE + ALLOWANCE


def long_jobs(cluster: Cluster, count: int = 6) -> list[int]:
    return cluster.enqueue(Spec("chaos.task", count=count, args={"seconds": 30}))


def running(cluster: Cluster, count: int) -> None:
    cluster.wait_started(0, count=count, timeout=60)


def test_sigterm_during_long_jobs_interrupts_them_and_they_run_again(cluster: Cluster) -> None:
    ids = long_jobs(cluster)
    (worker,) = cluster.start(1, DRAIN=str(DRAIN), CONCURRENCY="8")
    running(cluster, len(ids))
    cluster.drained.add(worker.pid)
    sent = worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=EXIT_WITHIN + 10) == 0, worker.output()
    assert time.monotonic() - sent <= EXIT_WITHIN
    records = cluster.backend.jobs(ids)
    # Interrupted: back to available, the attempt not counted.
    assert {(r["state"], r["attempt"]) for r in records.values()} == {("available", 0)}
    outcomes = [r for r in cluster.log() if r["e"] == "run"]
    assert {r["outcome"] for r in outcomes} == {"interrupted"}
    cluster.start(1, fast=True)
    cluster.wait_all_final(timeout=60)
    report = cluster.reconcile()
    assert report.completed == len(ids)
    assert {r["attempt"] for r in cluster.backend.jobs(ids).values()} == {1}


def test_a_second_sigterm_gives_the_jobs_back_and_exits_at_once(cluster: Cluster) -> None:
    ids = long_jobs(cluster)
    (worker,) = cluster.start(1, DRAIN="20", CONCURRENCY="8")
    running(cluster, len(ids))
    cluster.drained.add(worker.pid)
    worker.signal(signal.SIGTERM)
    worker.wait_output("draining")
    sent = worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=10) == 1, worker.output()
    assert time.monotonic() - sent <= 1.0 + ALLOWANCE
    # Given back at once (the attempt not counted), not held until their lease lapses.
    records = cluster.backend.jobs(ids)
    assert {(r["state"], r["attempt"]) for r in records.values()} == {("available", 0)}
    cluster.start(1, fast=True)
    cluster.wait_all_final(timeout=60)
    report = cluster.reconcile()
    assert report.completed == len(ids)
    for record in cluster.backend.jobs(ids).values():
        assert (record["attempt"], record["errors"]) == (1, [])


def test_sigterm_while_the_store_is_down(redis_cluster: Cluster, owned_redis: RedisServer) -> None:
    cluster = redis_cluster
    ids = long_jobs(cluster)
    (worker,) = cluster.start(1, DRAIN=str(DRAIN), CONCURRENCY="8")
    running(cluster, len(ids))
    owned_redis.kill()
    cluster.drained.add(worker.pid)
    sent = worker.signal(signal.SIGTERM)
    # It cannot give the jobs back, but it still exits within the drain window and its grace.
    assert worker.wait(timeout=EXIT_WITHIN + 10) == 0, worker.output()
    assert time.monotonic() - sent <= EXIT_WITHIN
    owned_redis.start()
    cluster.start(1, fast=True)
    cluster.wait_all_final(timeout=60)
    report = cluster.reconcile()
    assert report.completed == len(ids)
