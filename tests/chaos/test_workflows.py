"""Workflows under kill -9: two `runjobs` processes run a 50-step diamond-heavy workflow
(`chaos_workflow`) and one of them is killed with SIGKILL during a fan-in, while it holds a
dependency of the join. On SQLite, PostgreSQL and Redis the workflow completes, no step is left
`pending`, and every step's handler ran once, or twice only when its first run was lost with
the killed process and its lease lapsed (the run log's attempt numbers and the step's
``LeaseExpired`` error say so). Each step started only after all of its dependencies returned.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import pytest

from tests.chaos.harness import Cluster
from tests.e2e.conftest import manage, wait_until

pytestmark = [pytest.mark.chaos, pytest.mark.e2e]

#: How long each step's handler waits: long enough that the kill lands with steps in flight.
STEP_SECONDS = "0.3"
#: The one dependency of the first join that runs longer. With every step at 0.3 s the fan-in
#: (some dependencies returned, another still running) lasted about one step, shorter than a
#: poll of the run log, and a run could miss it; this step keeps it open for seconds.
HELD_STEP, HELD_SECONDS = "a11", "3"


def in_flight(log: list[dict[str, Any]], names: set[str]) -> dict[int, set[str]]:
    """pid -> the steps among `names` whose handler started there and has not returned."""
    running: dict[tuple[int, int], str] = {}
    for record in log:
        if record.get("step") not in names:
            continue
        key = (record["pid"], record["id"])
        if record["e"] == "start":
            running[key] = record["step"]
        elif record["e"] == "end":
            running.pop(key, None)
    held: dict[int, set[str]] = defaultdict(set)
    for (pid, _), step in running.items():
        held[pid].add(step)
    return held


def test_kill_during_fan_in_leaves_no_step_pending_and_none_run_twice_without_a_lapse(
    cluster: Cluster,
) -> None:
    first, second = cluster.start(2)
    for worker in (first, second):
        worker.wait_ready()
    created = json.loads(
        manage(cluster.env, "chaos_workflow", STEP_SECONDS, "--hold", f"{HELD_STEP}={HELD_SECONDS}")
    )
    steps: dict[str, int] = created["jobs"]
    after: dict[str, list[str]] = created["after"]
    assert len(steps) == 50
    cluster.enqueued.extend(steps.values())
    name_of = {job_id: name for name, job_id in steps.items()}

    # Fan-in: some dependencies of join1 have returned, join1 has not started, and a process
    # holds another of them in its handler. That process is the one killed.
    fan_in = set(after["join1"])

    def victim() -> int | None:
        log = cluster.log()
        ended = {r["step"] for r in log if r["e"] == "end" and r.get("step") in fan_in}
        if not ended or any(r.get("step") == "join1" for r in log):
            return None
        held = in_flight(log, fan_in)
        return next((pid for pid, names in held.items() if names), None)

    victim_pid = wait_until(victim, "a process holding a dependency of join1 mid fan-in", 30)
    (doomed,) = [w for w in cluster.workers if w.pid == victim_pid]
    held_at_kill = sorted(in_flight(cluster.log(), fan_in)[victim_pid])
    cluster.kill(doomed)
    cluster.workers.remove(doomed)
    print(f"{cluster.backend.name}: killed {victim_pid} holding {held_at_kill}")

    cluster.wait_all_final(timeout=50)
    stored = cluster.backend.jobs(list(steps.values()))
    not_done = {name_of[i]: r["state"] for i, r in stored.items() if r["state"] != "completed"}
    assert not not_done, f"steps not completed after the kill (pending = stuck): {not_done}"
    state = json.loads(manage(cluster.env, "jobs", "workflow", created["id"], "--json"))
    assert state["state"] == "completed", state

    log = cluster.log()
    starts: dict[int, list[dict[str, Any]]] = defaultdict(list)
    ends: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in log:
        if record.get("id") in name_of and record["e"] in ("start", "end"):
            (starts if record["e"] == "start" else ends)[record["id"]].append(record)
    twice = []
    for job_id, name in name_of.items():
        runs = starts[job_id]
        record = stored[job_id]
        assert runs, f"step {name} completed but its handler never started: {record}"
        if len(runs) == 1:
            continue
        errors = [e["type"] for e in record["errors"]]
        # A second run is allowed only after a lease lapse: the first ran in the killed
        # process (or its lease lapsed), the store recorded LeaseExpired, and the second run
        # is the next attempt.
        explained = (
            len(runs) == 2
            and runs[1]["attempt"] == runs[0]["attempt"] + 1
            and "LeaseExpired" in errors
            and runs[0]["pid"] != runs[1]["pid"]
        )
        assert explained, (
            f"step {name} ran {len(runs)} times without a lease lapse to explain it: runs "
            f"{runs}, stored attempt {record['attempt']}, errors {errors}, killed "
            f"{sorted(cluster.killed)}"
        )
        twice.append(f"{name} (attempt {runs[0]['attempt']} in pid {runs[0]['pid']} lost)")
    print(f"{cluster.backend.name}: ran again after a lease lapse: {twice or 'none'}")

    # A step started only after each of its dependencies' completing run returned.
    for name, deps in after.items():
        for run in starts[steps[name]]:
            for dep in deps:
                dep_id = steps[dep]
                done = [e for e in ends[dep_id] if e["attempt"] == stored[dep_id]["attempt"]]
                assert done and done[0]["t"] < run["t"], (
                    f"step {name} started (attempt {run['attempt']}) before its dependency "
                    f"{dep} returned: {done}"
                )
    # Each join read every dependency's result.
    for name in ("join1", "join2", "end"):
        assert state["steps"][name]["result"] == {"deps": sorted(after[name])}, name
    cluster.stop_all()
    cluster.reconcile()
