"""Store faults under load: the store's connections cut, its server restarted, its file locked.
Workers recover by themselves (no restart of `runjobs`), and the run reconciles exactly.

- PostgreSQL: `pg_terminate_backend` on every session of the workers (claims, outcome writes,
  the LISTEN session and the leader's advisory-lock session), again and again.
- Redis: a `redis-server` the test owns (a free port, AOF on with ``appendfsync always``):
  `CLIENT KILL` of every client, `SCRIPT FLUSH`, and a `kill -9` of the server followed by a
  restart from its AOF.
- SQLite: several processes on one file while the test holds the database locked.
"""

from __future__ import annotations

import random
import sqlite3
import time
from typing import Any

import pytest
from django.conf import settings as django_settings

from tests.chaos.harness import Cluster, scale
from tests.e2e.conftest import Spec, wait_until
from tests.support.network import TcpProxy
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]


def load(cluster: Cluster, count: int) -> list[int]:
    return cluster.enqueue(Spec("chaos.task", count=count, args={"seconds": 0.2}))


def faults(cluster: Cluster, fault: Any, *, times: int, rng: random.Random) -> int:
    """Apply `fault` up to `times` times while jobs remain, each after a handler started since
    the last one and a random pause (the fault schedule: faults land at random moments of the
    load); returns how many were applied."""
    position = 0
    applied = 0
    for _ in range(times):
        if not cluster.unfinished():
            break
        position = cluster.wait_started(position)
        time.sleep(rng.uniform(0.1, 0.5))
        fault()
        applied += 1
    return applied


# -- PostgreSQL ----------------------------------------------------------------------------------
@pytest.mark.needs("postgres")
def test_postgres_sessions_terminated_under_load(pg_backend: Any) -> None:
    cluster = Cluster(pg_backend)
    pg = pg_backend.pg
    load(cluster, scale(300, 5000))
    cluster.start(2)
    cut = 0

    def terminate() -> None:
        nonlocal cut
        rows = pg.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        cut += len(rows)

    applied = faults(cluster, terminate, times=scale(6, 60), rng=random.Random(1))
    cluster.wait_all_final(timeout=scale(90, 1800))
    report = cluster.reconcile()
    print(f"postgres: {cut} sessions terminated; {report.summary()}")
    assert applied >= 3 and cut >= applied, (applied, cut)
    assert all(w.proc.poll() is None for w in cluster.workers), "a worker died of a cut"
    # Leadership and LISTEN came back: one leader session holds the advisory lock again.
    # Only this test's database: the server is shared, and another project's workers may hold
    # advisory locks of their own in theirs.
    wait_until(
        lambda: (
            pg.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()[0]
            == 1
        ),
        "the leader's advisory lock to be taken again",
        15,
    )
    cluster.stop_all()


# -- Redis -----------------------------------------------------------------------------------------
def test_redis_client_kill_script_flush_and_a_server_restart(
    redis_cluster: Cluster, owned_redis: RedisServer
) -> None:
    import redis

    cluster = redis_cluster
    admin = redis.Redis.from_url(owned_redis.url)
    load(cluster, scale(300, 5000))
    cluster.start(2)
    counts = {"client kill": 0, "script flush": 0, "restart": 0}

    def fault() -> None:
        nonlocal admin
        which = rng.choice(["client kill", "client kill", "script flush", "restart"])
        counts[which] += 1
        if which == "client kill":
            for kind in ("normal", "pubsub"):
                admin.execute_command("CLIENT", "KILL", "TYPE", kind, "SKIPME", "yes")
        elif which == "script flush":
            admin.script_flush()
        else:
            owned_redis.kill()  # kill -9: only what the AOF holds survives
            owned_redis.start()
            admin = redis.Redis.from_url(owned_redis.url)

    rng = random.Random(2)
    assert faults(cluster, fault, times=scale(8, 80), rng=rng) >= 3
    if not counts["restart"]:
        fault_restart = owned_redis
        fault_restart.kill()
        fault_restart.start()
        counts["restart"] += 1
    cluster.wait_all_final(timeout=scale(90, 1800))
    report = cluster.reconcile()
    print(f"redis: {counts}; {report.summary()}")
    assert all(w.proc.poll() is None for w in cluster.workers), "a worker died of a fault"
    cluster.stop_all()


# -- SQLite ----------------------------------------------------------------------------------------
def test_sqlite_several_processes_and_a_locked_database(sqlite_backend: Any) -> None:
    cluster = Cluster(sqlite_backend)
    path = sqlite_backend.env["ANOLE_E2E_SQLITE"]
    load(cluster, scale(300, 5000))
    cluster.start(3)

    def lock() -> None:
        # An exclusive lock held for a while: every worker's writes wait or fail, then resume.
        db = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            db.execute("BEGIN EXCLUSIVE")
            time.sleep(1.5)
            db.execute("COMMIT")
        finally:
            db.close()

    locks = faults(cluster, lock, times=scale(4, 40), rng=random.Random(3))
    assert locks >= 2
    cluster.wait_all_final(timeout=scale(90, 1800))
    report = cluster.reconcile()
    print(f"sqlite: {locks} locks; {report.summary()}")
    assert all(w.proc.poll() is None for w in cluster.workers), "a worker died of a lock"
    cluster.stop_all()


@pytest.mark.needs("postgres")
def test_a_full_postgres_outage_through_a_proxy(pg_backend: Any) -> None:
    """Workers reach PostgreSQL only through a proxy the test drops for longer than the lease
    (every connection cut, new ones refused), twice; after each restore they carry on."""

    proxy = TcpProxy((django_settings.PG_HOST, int(django_settings.PG_PORT)))
    proxy.start()
    cluster = Cluster(pg_backend)
    cluster.env["ANOLE_TEST_PG_PORT"] = str(proxy.port)
    load(cluster, scale(200, 5000))
    cluster.start(2)
    rng = random.Random(4)
    outages = 0

    def outage() -> None:
        nonlocal outages
        proxy.drop()
        outages += 1
        time.sleep(cluster.lease * 2)  # the outage itself: longer than the lease
        proxy.restore()

    try:
        assert faults(cluster, outage, times=scale(2, 20), rng=rng) >= 1
        cluster.wait_all_final(timeout=scale(120, 1800))
    finally:
        proxy.close()
    report = cluster.reconcile()
    print(f"postgres outage: {outages} outages of {cluster.lease * 2:.0f} s; {report.summary()}")
    assert all(w.proc.poll() is None for w in cluster.workers), "a worker died of the outage"
    cluster.stop_all()
