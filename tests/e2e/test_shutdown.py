"""`runjobs` on SIGTERM/SIGINT: stop claiming, drain, give back, exit in time; what the drain
says; a second signal; a job that every drain gives back.

The subprocess runs with drain_timeout 2 s on the "default" queue (1 s on "other"), so the
exit bound is max(drain_timeout) + 3 s = 5 s, measured from the signal, plus `ALLOWANCE` for
the interpreter's own shut-down. Tests whose point does not depend on the store run on SQLite
only; the drain itself runs on every store.
"""

from __future__ import annotations

import signal
import time

import pytest

from tests.e2e.conftest import ALLOWANCE, DRAIN, WRITE_GRACE, Backend, Spec, wait_markers

pytestmark = pytest.mark.e2e

BOUND = DRAIN + WRITE_GRACE + ALLOWANCE


def given_back(record: dict) -> bool:
    return record["state"] == "available" and record["attempt"] == 0 and record["errors"] == []


def stop_and_time(worker, signum: int = signal.SIGTERM) -> float:
    """Signal `worker`, wait for it, check it exited 0; seconds from the signal to the exit."""
    sent = worker.signal(signum)
    status = worker.wait(timeout=BOUND + 10)
    took = time.monotonic() - sent
    assert status == 0, worker.output()
    return took


def test_sigterm_drains_gives_back_and_exits_within_the_bound(backend: Backend) -> None:
    # Four slots. Running when the signal comes: two handlers in job.sleep(60), one in
    # time.sleep(60) (never reaches a wait the runtime can cancel), one that returns 0.8 s
    # after it started (within the 2 s drain). Two more wait unclaimed.
    marker = str(backend.markers)
    sleeping, busy, finishing, waiting = backend.enqueue_specs(
        Spec("block", 2, args={"seconds": 60, "marker": marker}),
        Spec("busy", 1, args={"seconds": 60, "marker": marker}),
        Spec("block", 1, args={"seconds": 0.8, "marker": marker}),
        Spec("block", 2, args={"seconds": 60, "marker": marker}),
    )
    worker = backend.spawn()
    worker.wait_ready()
    wait_markers(backend.markers, 4)
    before = len(worker.output())
    took = stop_and_time(worker)
    assert took <= BOUND, f"exited {took:.1f} s after the signal (bound {BOUND} s)"
    # It waited for the drain: the sleeping handlers leave job.sleep only when cancelled.
    assert took >= DRAIN - 0.2, f"exited {took:.1f} s after the signal, before the drain ended"
    records = backend.jobs(sleeping + busy + finishing + waiting)
    # Cancelled at the deadline (or never started): back to available, the attempt not counted.
    for job_id in sleeping + busy + waiting:
        assert given_back(records[job_id]), records[job_id]
    # Finished during the drain: keeps its outcome.
    (done,) = finishing
    assert (records[done]["state"], records[done]["attempt"]) == ("completed", 1)
    assert [p.name for p in backend.markers.glob("*.finished")] == [f"{done}.1.finished"]
    assert not any((backend.markers / f"{job_id}.1.started").exists() for job_id in waiting)
    output = worker.output()
    assert "runjobs: stopped" in output
    assert output.count(": interrupted") == 3
    # The drain's first line says what it waits for, and for how long; then what it cancels.
    logged = [line for line in output[before:].splitlines() if " anole_jobs" in line]
    assert logged[0].endswith(
        "runjobs: SIGTERM received; draining: waiting up to 2 s for 4 running job(s) to finish "
        "(default: 4 within its drain_timeout of 2 s); those still running then are cancelled "
        "and given back; a second SIGTERM or SIGINT gives them back now and exits"
    ), logged[0]
    assert "queue default: drain_timeout (2 s) passed with 3 job(s) still running" in output


def test_sigint_drains_like_sigterm(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    ids = backend.enqueue("block", count=2, seconds=60, marker=str(backend.markers))
    worker = backend.spawn()
    worker.wait_ready()
    wait_markers(backend.markers, 2)
    took = stop_and_time(worker, signal.SIGINT)
    assert DRAIN - 0.2 <= took <= BOUND
    assert all(given_back(r) for r in backend.jobs(ids).values())


def test_a_drain_ends_as_soon_as_nothing_runs(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    (job_id,) = backend.enqueue("block", seconds=0.5, marker=str(backend.markers))
    worker = backend.spawn(DRAIN="30")
    worker.wait_ready()
    wait_markers(backend.markers, 1)
    took = stop_and_time(worker)
    assert took < 0.5 + ALLOWANCE + 1.0, "the drain waited for its timeout with nothing running"
    assert backend.jobs([job_id])[job_id]["state"] == "completed"


def test_given_back_jobs_run_again_with_the_same_attempt_and_a_streak_is_warned_about(
    sqlite_backend: Backend,
) -> None:
    # blocking_attempts=1: after the give-back the next run is attempt 1 again, so it blocks
    # again. Four deploys in a row interrupt it: the job is still fresh each time, and the
    # fourth drain warns (once) that it runs longer than its queue's drain_timeout.
    backend = sqlite_backend
    (job_id,) = backend.enqueue("block", seconds=60, marker=str(backend.markers))
    warning = f"job {job_id} (e2e.block) was given back by a drain 4 times in a row"
    for deploy in range(1, 5):
        worker = backend.spawn(DRAIN="0.5")
        worker.wait_ready()
        wait_markers(backend.markers, 1)
        # The marker names <id>.<attempt>.started: every run is attempt 1.
        started = sorted(p.name for p in backend.markers.glob("*.started"))
        assert started == [f"{job_id}.1.started"]
        stop_and_time(worker)
        assert given_back(backend.jobs([job_id])[job_id])
        (backend.markers / started[0]).unlink()
        output = worker.output()
        assert (warning in output) == (deploy == 4), output
    assert output.count(warning) == 1
    assert "WARNING" in next(line for line in output.splitlines() if warning in line)
    assert "queue default's drain_timeout (0.5 s)" in output


def test_a_second_signal_gives_the_running_jobs_back_and_exits(backend: Backend) -> None:
    # One handler in time.sleep(60), which reaches no wait, and one in job.sleep(60), which
    # the give-back cancels (and must not end the process before the give-back is written).
    marker = str(backend.markers)
    busy, sleeping = backend.enqueue_specs(
        Spec("busy", args={"seconds": 60, "marker": marker}),
        Spec("block", args={"seconds": 60, "marker": marker}),
    )
    ids = busy + sleeping
    # A long drain, so "at once" cannot be mistaken for the end of the drain.
    worker = backend.spawn(DRAIN="30")
    worker.wait_ready()
    wait_markers(backend.markers, 2)
    worker.signal()
    worker.wait_output("draining")
    sent = worker.signal(signal.SIGINT)
    status = worker.wait(timeout=15)
    took = time.monotonic() - sent
    assert status == 1, "a second signal cuts the drain short: not a clean exit"
    assert took < ALLOWANCE + 2.0, f"exited {took:.1f} s after the second signal"
    output = worker.output()
    assert "runjobs: second signal: gave back 2 running job(s)" in output, output
    assert output.count(": interrupted, given back") == 2
    # Given back, fenced and not counted: not held until their lease lapses.
    assert all(given_back(r) for r in backend.jobs(ids).values()), backend.jobs(ids)


def test_an_idle_worker_exits_at_once(sqlite_backend: Backend) -> None:
    worker = sqlite_backend.spawn()
    worker.wait_ready()
    took = stop_and_time(worker)
    assert took < ALLOWANCE + 1.0
    assert "runjobs: stopped" in worker.output()
