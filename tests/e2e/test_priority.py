"""A job enqueued at a high priority while one `runjobs` works a backlog overtakes it: it
starts while the jobs enqueued before it still wait, on every durable store (with its
cross-process wake-ups: NOTIFY, pub/sub, or none on SQLite).

The enqueuing process (`e2e_overtake`) fills the queue, waits until the worker works it at its
steady pace (jobs claimed ahead of its slots), then enqueues the priority job and reads the
queue once that job started. No time is asserted: the figures are the bench's."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Backend

pytestmark = pytest.mark.e2e

BACKLOG = 10_000


def test_a_priority_job_overtakes_the_backlog_a_worker_is_working(backend: Backend) -> None:
    worker = backend.spawn(CONCURRENCY="4")
    worker.wait_ready()
    out = json.loads(backend.manage("e2e_overtake", str(BACKLOG)))
    print(f"{backend.name}: {out}")
    # Enqueued behind thousands of waiting jobs, it started while most of them still waited.
    assert out["waiting_before"] > BACKLOG // 2, out
    assert out["waiting_after"] > BACKLOG // 4, out
