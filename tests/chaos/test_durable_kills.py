"""Durable steps under kill -9: `runjobs` processes SIGKILLed at random moments (and, some,
by themselves right after a step's fn returned, before its record) while they run jobs made
of steps. On SQLite and PostgreSQL each step is atomic and inserts one row: every job
completes and every step's row exists exactly once. On Redis a step is recorded after its fn
returns: a fn runs again only when its run ended in that window (killed, or its lease lost),
and the scenario counts those reruns.

Scale with ``ANOLE_CHAOS_DURABLE_JOBS`` and ``ANOLE_CHAOS_DURABLE_KILLS`` (docs/reliability.md).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections import Counter, defaultdict

import pytest

from tests.chaos.harness import Cluster, random_kills, scale, sized
from tests.chaos.jobs import STEP_TABLE
from tests.e2e.conftest import Spec, wait_until

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

STEPS = 4


def _rows(cluster: Cluster) -> Counter[tuple[int, int]]:
    backend = cluster.backend
    query = f"SELECT job_id, step FROM {STEP_TABLE}"
    if backend.name == "sqlite":
        with sqlite3.connect(backend.env["ANOLE_E2E_SQLITE"], timeout=20) as db:
            found = db.execute(query).fetchall()
    else:
        found = backend.pg.execute(query).fetchall()
    return Counter((job_id, step) for job_id, step in found)


def _create_table(cluster: Cluster) -> None:
    backend = cluster.backend
    ddl = f"CREATE TABLE IF NOT EXISTS {STEP_TABLE} (job_id bigint NOT NULL, step int NOT NULL)"
    if backend.name == "sqlite":
        with sqlite3.connect(backend.env["ANOLE_E2E_SQLITE"], timeout=20) as db:
            db.execute(ddl)
    elif backend.name == "postgres":
        backend.pg.execute(ddl)
        backend.pg.execute(f"TRUNCATE {STEP_TABLE}")


def test_killed_workers_never_redo_a_committed_step(cluster: Cluster) -> None:
    rng = random.Random(48)
    jobs = sized("durable_jobs", 120, 1000)
    kills = sized("durable_kills", 6, 100)
    _create_table(cluster)
    cluster.enqueue(Spec("chaos.durable", count=jobs, args={"steps": STEPS, "seconds": 0.005}))
    started = time.monotonic()
    # First two processes that kill themselves between a step's fn and its record (the 2nd
    # and 4th time), then three more under random kills.
    cluster.start(kill_at="in_step:2")
    cluster.start(kill_at="in_step:4")

    def self_killed() -> bool:
        return sum(1 for r in cluster.log() if r["e"] == "kill") >= 2

    wait_until(self_killed, "both processes to kill themselves inside a step", 60, recheck=0.1)
    cluster.replace_dead()
    cluster.start(2)
    done = random_kills(cluster, kills=kills, rng=rng, pause=(0.1, 0.4))
    cluster.wait_all_final(timeout=scale(90, 1800))
    seconds = time.monotonic() - started
    stored = cluster.backend.jobs(cluster.enqueued)
    assert Counter(r["state"] for r in stored.values()) == {"completed": jobs}
    log = cluster.log()
    self_kills = sum(1 for r in log if r["e"] == "kill" and r["point"] == "in_step")
    assert self_kills >= 2
    fn_runs: dict[tuple[int, int], list[dict]] = defaultdict(list)
    recorded: set[tuple[int, int, int, int]] = set()  # (job, step, attempt, pid)
    for record in log:
        if record["e"] == "fn":
            fn_runs[(record["id"], record["step"])].append(record)
        elif record["e"] == "recorded":
            recorded.add((record["id"], record["step"], record["attempt"], record["pid"]))
    name = cluster.backend.name
    if name in ("sqlite", "postgres"):
        rows = _rows(cluster)
        expected = {(job_id, step) for job_id in cluster.enqueued for step in range(STEPS)}
        assert set(rows) == expected
        twice = {key: n for key, n in rows.items() if n != 1}
        assert not twice, f"step rows written more than once: {twice}"
        reruns = sum(len(runs) - 1 for runs in fn_runs.values())
        print(
            f"{name}: {jobs} jobs x {STEPS} atomic steps, {done} kills + {self_kills} kills"
            f" inside a step, in {seconds:.1f} s: every row once ({reruns} step bodies rolled"
            " back with their process and run again)"
        )
    else:
        # A fn runs again only after a run whose record never came: it ended in the window.
        reruns = 0
        for (job_id, step), runs in fn_runs.items():
            for earlier in runs[:-1]:
                key = (job_id, step, earlier["attempt"], earlier["pid"])
                assert key not in recorded, f"job {job_id} step {step} ran again after its record"
                reruns += 1
        print(
            f"{name}: {jobs} jobs x {STEPS} steps, {done} kills + {self_kills} kills between a"
            f" fn and its record, in {seconds:.1f} s: {reruns} fn reruns, each after a run"
            " that ended between its fn's return and the record"
        )
        assert reruns >= self_kills
    cluster.reconcile()
