"""Workflows through real processes, on every durable store: two `runjobs` processes run a
diamond-heavy workflow (fan-out, fan-in, twice); every step completes, once each, and each
join ran after all of its dependencies (it read their results)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Backend

pytestmark = pytest.mark.e2e

WIDTH = 12


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
        worker.signal()
    for worker in workers:
        assert worker.wait(timeout=20) == 0
