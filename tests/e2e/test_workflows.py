"""Workflows through real processes, on every durable store: two `runjobs` processes run a
diamond-heavy workflow (fan-out, fan-in, twice); every step completes, once each, and each
join ran after all of its dependencies (it read their results)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from tests.e2e.conftest import Backend

pytestmark = pytest.mark.e2e

WIDTH = 12
FINAL = ("completed", "dead", "cancelled")


def test_two_workers_run_a_diamond_heavy_workflow_to_completion(backend: Backend) -> None:
    created = json.loads(backend.manage("e2e_workflow", str(WIDTH)))
    ids = list(created["jobs"].values())
    assert len(ids) == 2 * WIDTH + 3
    workers = [backend.spawn("--concurrency", "4"), backend.spawn("--concurrency", "4")]
    records = backend.wait_state(ids, "completed", timeout=60)
    assert all(record["attempt"] == 1 for record in records.values())  # each ran once
    state = json.loads(backend.manage("jobs", "workflow", created["id"], "--json"))
    assert state["state"] == "completed"
    join = state["steps"]["join"]["result"]
    assert join["deps"] == sorted(f"step-{i}" for i in range(2, WIDTH + 2))
    for worker in workers:
        worker.wait_ready()  # a worker slow to start may not have its signal handlers yet
        worker.signal()
    for worker in workers:
        assert worker.wait(timeout=20) == 0


def test_a_failure_cascades_retry_reopens_and_cancel_ends_through_runjobs(backend: Backend) -> None:
    """A step that fails for good cancels what waits for it (DependencyFailed) while a step
    that ignores failures runs; retrying the dead step from the CLI reopens what its failure
    cancelled (it fails again, so they are cancelled again); cancelling a running workflow
    from the CLI ends every step not ended yet."""
    created = json.loads(backend.manage("e2e_workflow", "0", "--failing"))
    steps = created["jobs"]
    worker = backend.spawn("--concurrency", "2")
    expected = {
        "root": "completed",
        "bad": "dead",
        "blocked": "cancelled",
        "tolerant": "completed",
        "end": "completed",
    }

    def settled(records: dict[int, dict[str, object]]) -> bool:
        return all(records[steps[n]]["state"] == s for n, s in expected.items())

    backend.wait_jobs(list(steps.values()), lambda r: r["state"] in FINAL, "steps final", 30)
    records = backend.jobs(list(steps.values()))
    assert settled(records), records
    blocked = records[steps["blocked"]]
    assert [e["type"] for e in blocked["errors"]] == ["DependencyFailed"]
    state = json.loads(backend.manage("jobs", "workflow", created["id"], "--json"))
    assert state["state"] == "failed"
    assert state["steps"]["tolerant"]["result"] == {"step": "tolerant", "deps": []}

    backend.manage("jobs", "retry", str(steps["bad"]))
    # It runs again and fails again: "blocked" was reopened, then cancelled a second time.
    backend.wait_jobs(
        [steps["blocked"]],
        lambda r: r["state"] == "cancelled" and len(r["errors"]) == 2,
        "blocked cancelled again after the retry",
        30,
    )
    again = backend.jobs([steps["bad"], steps["blocked"]])
    assert again[steps["bad"]]["state"] == "dead" and again[steps["bad"]]["attempt"] == 2
    assert [e["type"] for e in again[steps["blocked"]]["errors"]] == ["DependencyFailed"] * 2

    worker.wait_ready()
    worker.signal()
    assert worker.wait(timeout=20) == 0
    # With no worker running, a second workflow waits; cancelling it ends every step.
    second = json.loads(backend.manage("e2e_workflow", "0", "--failing"))
    cancelled = json.loads(backend.manage("jobs", "workflow", second["id"], "--cancel", "--json"))
    assert cancelled["state"] == "cancelled"
    left = backend.jobs(list(second["jobs"].values()))
    assert {r["state"] for r in left.values()} == {"cancelled"}, left


def test_a_steps_delay_counts_from_its_dependencys_completion_through_runjobs(
    backend: Backend,
) -> None:
    """A step's delay starts when its last dependency completes, not when the workflow was
    enqueued: the worker starts after the enqueue (a process start later), so the two
    readings differ, and the step is due exactly its delay after root's completion."""
    created = json.loads(backend.manage("e2e_workflow", "0", "--delayed"))
    steps = created["jobs"]
    worker = backend.spawn("--concurrency", "2")
    backend.wait_state(list(steps.values()), "completed", timeout=30)

    def show(name: str) -> dict[str, object]:
        return json.loads(backend.manage("jobs", "show", str(steps[name]), "--json"))

    root, late = show("root"), show("late")

    def at(record: dict[str, object], field: str) -> datetime:
        return datetime.fromisoformat(str(record[field]))

    assert at(late, "scheduled_at") == at(root, "finished_at") + timedelta(seconds=1)
    assert at(late, "scheduled_at") > at(late, "created_at") + timedelta(seconds=1)
    assert at(late, "attempted_at") >= at(late, "scheduled_at")
    worker.wait_ready()
    worker.signal()
    assert worker.wait(timeout=20) == 0
