"""Malformed rows in the store (written by hand, an old version, a bad migration): arguments
that are not JSON or not an object, arguments of the wrong type, an unknown kind — one naming
``os.system`` — and a state no code writes. A `runjobs` process must neither crash nor stall on
them: the good jobs enqueued beside them complete, and an unknown kind never runs anything.
"""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.harness import Cluster
from tests.e2e.conftest import Spec

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]


def corrupt(cluster: Cluster, job_id: int, **columns: Any) -> None:
    """Overwrite stored columns of one job behind the store's back (SQL names; Redis fields
    are mapped). Values are written as given: strings are stored verbatim."""
    backend = cluster.backend
    if backend.name == "sqlite":
        sets = ", ".join(f"{column} = ?" for column in columns)
        with sqlite3.connect(backend.env["ANOLE_E2E_SQLITE"], timeout=20) as db:
            db.execute(
                f"UPDATE anole_jobs_job SET {sets} WHERE id = ?", [*columns.values(), job_id]
            )
    elif backend.name == "postgres":
        sets = ", ".join(
            f"{column} = %s::jsonb" if column in ("args", "meta", "errors") else f"{column} = %s"
            for column in columns
        )
        backend.pg.execute(
            f"UPDATE anole_jobs_job SET {sets} WHERE id = %s", [*columns.values(), job_id]
        )
    else:
        import redis

        client = redis.Redis.from_url(backend.env["ANOLE_E2E_REDIS"])
        fields = {"args": "args", "meta": "meta", "errors": "errors", "kind": "kind"}
        key = f"{backend.env['ANOLE_E2E_KEY_PREFIX']}job:{job_id}"
        assert client.exists(key), key
        client.hset(key, mapping={fields[c]: v for c, v in columns.items()})


def test_malformed_rows_never_crash_or_stall_a_worker(cluster: Cluster, tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    bad_ids = cluster.enqueue(Spec("chaos.task", count=4, args={"seconds": 0}))
    not_json, wrong_type, not_object, system = bad_ids
    if cluster.backend.name == "redis":
        corrupt(cluster, not_json, args="{this is not json")
    else:  # jsonb, and SQLite's JSON_VALID check, refuse text that is not JSON
        corrupt(cluster, not_json, args='"a string, not an object"')
    corrupt(cluster, wrong_type, args=json.dumps({"seconds": "soon", "mode": ["x"]}))
    corrupt(cluster, not_object, args="[1, 2, 3]", meta="[]")
    command = {"command": f"touch {pwned}"}
    if cluster.backend.name == "redis":
        # A Redis job lives in several keys (its kind is in its index's name): store it whole.
        system = insert_raw(cluster, kind="os.system", args=command)
        bad_ids[3] = system
        cluster.enqueued.append(system)
    else:
        corrupt(cluster, system, kind="os.system", args=json.dumps(command))
    worker = cluster.start(1)[0]
    worker.wait_ready()
    good = cluster.enqueue(Spec("chaos.task", count=20, args={"seconds": 0}))
    cluster.backend.wait_state(good, "completed", timeout=60)
    # The bad rows ended dead (they can never run), never in a loop, and the worker lives on.
    records = cluster.backend.jobs(bad_ids)
    assert worker.proc.poll() is None, worker.output()
    for job_id in (not_json, wrong_type, not_object):
        assert records[job_id]["state"] == "dead", records[job_id]
    # A kind no handler is registered for waits for a handler, and nothing is imported from it.
    assert records[system]["state"] == "available", records[system]
    assert records[system]["attempt"] == 0
    assert not pwned.exists()
    assert "os.system" in worker.output()  # logged once as a kind with no handler
    # Still claiming: a job enqueued after all this runs too.
    (late,) = cluster.enqueue(Spec("chaos.task", args={"seconds": 0}))
    cluster.backend.wait_state([late], "completed", timeout=30)
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == 0


def insert_raw(cluster: Cluster, *, kind: str, args: dict[str, Any]) -> int:
    """Store a job of any kind name straight through a Redis store on the test's prefix."""
    from datetime import UTC, datetime

    from anole_jobs import conf
    from anole_jobs.stores import open_store
    from anole_jobs.stores.base import NewJob

    prefix = cluster.backend.env["ANOLE_E2E_KEY_PREFIX"]
    store = open_store(conf.parse({"STORE": {"redis": "jobs"}, "KEY_PREFIX": prefix}))
    now = datetime.now(UTC)
    try:
        (inserted,) = store.insert(
            [
                NewJob(
                    kind=kind,
                    queue="default",
                    args=args,
                    meta={},
                    priority=0,
                    max_attempts=3,
                    state="available",
                    scheduled_at=now,
                    created_at=now,
                )
            ]
        )
    finally:
        store.close()
    return inserted.id


def test_a_state_no_code_writes_does_not_stall_a_worker(cluster: Cluster) -> None:
    if cluster.backend.name == "redis":
        pytest.skip(
            "a Redis job's state lives in several keys (indexes per state); one written "
            "behind the store's back cannot be told from a corrupted index"
        )
    ids = cluster.enqueue(Spec("chaos.task", count=3, args={"seconds": 0}))
    corrupt(cluster, ids[0], state="zombie")
    worker = cluster.start(1)[0]
    worker.wait_ready()
    good = cluster.enqueue(Spec("chaos.task", count=10, args={"seconds": 0}))
    cluster.backend.wait_state([*ids[1:], *good], "completed", timeout=60)
    assert cluster.backend.jobs([ids[0]])[ids[0]]["state"] == "zombie"
    assert worker.proc.poll() is None, worker.output()
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == 0
