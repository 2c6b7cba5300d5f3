"""Queue pause and resume against real `runjobs` processes, on every durable store.

A pause is made by another process (as an operator's command would) while workers run; it
holds for every worker and across a restart; resume makes them claim again at once (a wake-up
on PostgreSQL and Redis, the next poll — one second — on SQLite).

Showing that something does *not* happen takes watching for a while: `stays` watches the
paused jobs for `WATCH` seconds (longer than the workers' one-second poll), after a job of an
unpaused queue, enqueued after the paused ones, has completed — so the workers were awake.
"""

from __future__ import annotations

import signal
import time

import pytest

from tests.e2e.conftest import OUTPUT, RECHECK, Backend, Spec

pytestmark = pytest.mark.e2e

WATCH = 1.5  # seconds: more than the workers' poll interval (1 s)
RESUME_BOUND = 5.0  # seconds from `resume` returning to the jobs completing (measured ~1 s)


def stays(backend: Backend, ids: list[int], state: str, seconds: float = WATCH) -> None:
    """Fail if any job of `ids` leaves `state` within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        records = backend.jobs(ids)
        moved = {i: r["state"] for i, r in records.items() if r["state"] != state}
        assert not moved, f"jobs left {state!r} while paused: {moved}"
        # Look again when a worker prints something (a claim would), or every RECHECK s.
        OUTPUT.wait_after(OUTPUT.seen(), min(RECHECK, max(0.0, deadline - time.monotonic())))


def pause(backend: Backend, queue: str) -> None:
    """``manage.py jobs pause`` in a process of its own, as an operator would."""
    assert backend.manage("jobs", "pause", queue).startswith(f"queue {queue}: paused")


def resume_and_time(backend: Backend, queue: str, ids: list[int]) -> float:
    """Resume `queue` from another process; seconds from its return until `ids` completed."""
    assert backend.manage("jobs", "resume", queue).startswith(f"queue {queue}: active")
    resumed = time.monotonic()
    backend.wait_state(ids, "completed", timeout=RESUME_BOUND + 10)
    return time.monotonic() - resumed


def test_running_workers_stop_claiming_a_paused_queue_and_resume_at_once(backend: Backend) -> None:
    worker = backend.spawn()
    worker.wait_ready()
    pause(backend, "default")
    paused_ids, witness = backend.enqueue_specs(
        Spec("noop", 3, args={"marker": str(backend.markers)}),
        Spec("noop", 1, queue="other"),
    )
    backend.wait_state(witness, "completed")
    stays(backend, paused_ids, "available")
    assert not list(backend.markers.glob("*.started")), "a paused job's handler ran"

    latency = resume_and_time(backend, "default", paused_ids)
    assert latency < RESUME_BOUND, f"resumed jobs completed {latency:.2f} s after resume"
    assert {r["attempt"] for r in backend.jobs(paused_ids).values()} == {1}
    worker.signal()
    assert worker.wait(timeout=15) == 0


def test_the_pause_holds_for_two_workers_and_across_a_restart(backend: Backend) -> None:
    pause(backend, "default")  # before any worker starts: read from the store, not memory
    paused_ids, witness = backend.enqueue_specs(Spec("noop", 4), Spec("noop", 1, queue="other"))
    first, second = backend.spawn(), backend.spawn()
    first.wait_ready()
    second.wait_ready()
    backend.wait_state(witness, "completed")
    stays(backend, paused_ids, "available")

    first.signal(signal.SIGTERM)
    assert first.wait(timeout=15) == 0
    restarted = backend.spawn()
    restarted.wait_ready()
    (witness2,) = backend.enqueue_specs(Spec("noop", 1, queue="other"))
    backend.wait_state(witness2, "completed")
    stays(backend, paused_ids, "available")

    resume_and_time(backend, "default", paused_ids)
    # Each job ran once, by one of the two live workers.
    assert {r["attempt"] for r in backend.jobs(paused_ids).values()} == {1}
