"""The async runtime in a real `runjobs`: one process with a queue of concurrency 1000 runs
1,000 async jobs that each await `asyncio.sleep(0.1)` at once, on one event loop, with few
threads; and a cancel reaches a running async handler (its `await` raises
`CancelledError`) within 2 s of `jobs.cancel` returning in another process, on every store
(SQLite, which tells no other process, by the worker's poll; the others by their push).

Each worker starts while its jobs are enqueued (two process starts at once, to keep the tier
fast)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import BACKENDS, Backend, Spec

pytestmark = pytest.mark.e2e

END_TO_END = 2.0  # seconds from `jobs.cancel` returning to the handler's CancelledError


def cancel_lands(backend: Backend, job_id: int) -> None:
    """Cancel the running `asyncrt.hold` job `job_id` from another process; its handler sees
    the cancel within `END_TO_END` seconds of `jobs.cancel` returning there."""
    backend.wait_markers(1, "started", job_id=job_id)
    returned = float(backend.manage("e2e_cancel", str(job_id)).strip())
    backend.wait_markers(1, "canceled", job_id=job_id, timeout=10)
    seen = float((backend.markers / f"{job_id}.1.canceled").read_text())
    assert seen - returned < END_TO_END, f"the cancel took {seen - returned:.2f} s"
    backend.wait_state([job_id], "cancelled", timeout=10)


def test_a_thousand_async_jobs_run_at_once_with_few_threads(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    marker = str(backend.markers)
    worker = backend.spawn(CONCURRENCY="1000")
    ids, (hold,) = backend.enqueue_specs(
        Spec("asyncrt.nap", count=1000, args={"seconds": 0.1, "marker": marker}),
        Spec("asyncrt.hold", args={"marker": marker, "seconds": 60}),
    )
    backend.wait_state(ids, "completed", timeout=30)
    ran = [json.loads((backend.markers / f"{job_id}.nap").read_text()) for job_id in ids]
    took = max(r["ended"] for r in ran) - min(r["began"] for r in ran)
    assert took < 3.0, f"1,000 async jobs of 0.1 s took {took:.2f} s"
    assert max(r["threads"] for r in ran) < 60, max(r["threads"] for r in ran)
    assert len({(r["pid"], r["loop"]) for r in ran}) == 1  # one process, one loop
    cancel_lands(backend, hold)
    assert worker.proc.poll() is None  # the worker goes on


@pytest.mark.parametrize("backend", BACKENDS[1:], indirect=True)
def test_a_cancel_reaches_a_running_async_handler_within_two_seconds(backend: Backend) -> None:
    worker = backend.spawn()
    (job_id,) = backend.enqueue("asyncrt.hold", marker=str(backend.markers), seconds=60)
    cancel_lands(backend, job_id)
    assert worker.proc.poll() is None
