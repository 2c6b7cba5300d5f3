"""Workers that die, and runs that time out: no job is lost, a killed worker's jobs are rescued
once their lease lapses, and a timeout cancels a run at its next wait.

`kill -9` leaves a worker's jobs `running` with a lease nobody extends; any `runjobs` puts
them back once the lease lapses — within about 1.5 x LEASE — and runs them again. These tests
use LEASE = 1 s (the smallest allowed) so rescues come quickly.
"""

from __future__ import annotations

import signal
import time

import pytest

from tests.e2e.conftest import Backend, Spec, wait_markers, wait_until

pytestmark = pytest.mark.e2e

LEASE = "1"
#: A bound, not a wait: a lease lapse + the rescue interval + a runjobs start-up, which takes
#: seconds on a loaded machine.
RESCUE_WITHIN = 30.0


def test_jobs_of_a_killed_worker_are_rescued_by_another_and_complete(backend: Backend) -> None:
    # Attempt 1 blocks in job.sleep(60); attempt 2 returns at once.
    ids = backend.enqueue("block", count=3, seconds=60, marker=str(backend.markers))
    first = backend.spawn(LEASE=LEASE)
    wait_markers(backend.markers, 3)
    first.proc.send_signal(signal.SIGKILL)
    assert first.wait(timeout=10) == -signal.SIGKILL
    # Held: nobody gave them back.
    assert {r["state"] for r in backend.jobs(ids).values()} == {"running"}
    second = backend.spawn(LEASE=LEASE)
    records = backend.wait_state(ids, "completed", timeout=RESCUE_WITHIN)
    for record in records.values():
        assert record["attempt"] == 2
        (error,) = record["errors"]
        assert (error["type"], error["attempt"]) == ("LeaseExpired", 1)
    assert "rescued job" in second.output()
    second.signal()
    assert second.wait(timeout=10) == 0


def test_a_job_that_kills_its_worker_every_time_ends_dead(backend: Backend) -> None:
    # attempts=3. Each run kills its worker; the next runjobs rescues the job (the attempt is
    # counted) and runs it again, until the rescue of the third attempt makes it dead.
    (job_id,) = backend.enqueue("suicide", marker=str(backend.markers))
    deaths = 0
    while True:
        worker = backend.spawn(LEASE=LEASE)

        def settled(worker=worker) -> bool:
            return (
                worker.proc.poll() is not None or backend.jobs([job_id])[job_id]["state"] == "dead"
            )

        wait_until(settled, "the worker to die or the job to be dead", RESCUE_WITHIN)
        if worker.proc.poll() is None:
            break  # the job is dead and this worker lives on
        assert worker.proc.returncode == -signal.SIGKILL, worker.output()
        deaths += 1
        assert deaths <= 3, "the job ran more often than its attempts"
    record = backend.jobs([job_id])[job_id]
    assert deaths == 3
    assert (record["state"], record["attempt"]) == ("dead", 3)
    assert [(e["type"], e["attempt"]) for e in record["errors"]] == [
        ("LeaseExpired", 1),
        ("LeaseExpired", 2),
        ("LeaseExpired", 3),
    ]
    assert sorted(p.name for p in backend.markers.glob("*.started")) == [
        f"{job_id}.{attempt}.started" for attempt in (1, 2, 3)
    ]
    worker.signal()
    assert worker.wait(timeout=10) == 0


def test_runs_past_their_timeout_are_cancelled_and_record_Timeout(backend: Backend) -> None:
    # Each kind has timeout=1 s and attempts=1, so its timeout is its last, failed attempt.
    # They differ in where the cancellation reaches them (their next wait).
    marker = str(backend.markers)
    kinds = ["timeout", "async_timeout", "spin", "query_loop"]
    specs = [Spec(kind, args={"seconds": 30, "marker": marker}) for kind in kinds]
    *timed_out, (swallowed,) = backend.enqueue_specs(
        *specs, Spec("swallow", args={"seconds": 30, "marker": marker})
    )
    ids = [job_id for (job_id,) in timed_out]
    began = time.monotonic()
    worker = backend.spawn(CONCURRENCY="5")
    records = backend.wait_jobs(
        ids + [swallowed],
        lambda r: r["state"] in ("dead", "completed"),
        "every run to end",
        timeout=20,
    )
    assert time.monotonic() - began < 20
    for kind, job_id in zip(kinds, ids, strict=True):
        record = records[job_id]
        assert record["state"] == "dead", (kind, record)
        assert [(e["type"], e["attempt"]) for e in record["errors"]] == [("Timeout", 1)], kind
        assert (backend.markers / f"{job_id}.1.started").exists(), kind
        assert not (backend.markers / f"{job_id}.1.finished").exists(), kind
    # A handler that catches its Canceled and returns is recorded completed: it returned.
    record = records[swallowed]
    assert (record["state"], record["attempt"], record["errors"]) == ("completed", 1, [])
    assert (backend.markers / f"{swallowed}.1.swallowed").exists()
    worker.signal()
    assert worker.wait(timeout=10) == 0


@pytest.mark.needs("postgres")
def test_a_handler_gets_a_fresh_connection_after_the_server_dropped_its_own(
    pg_backend: Backend,
) -> None:
    # A database restart, an idle timeout or a pooler drops the worker's connections. The
    # store's own threads reconnect; a handler's slot thread must not keep a dead connection
    # (Django's request cycle does this with close_old_connections; a worker has no requests).
    backend = pg_backend
    (first,) = backend.enqueue("query")
    worker = backend.spawn(CONCURRENCY="1")
    backend.wait_state([first], "completed", timeout=20)
    terminated = backend.pg.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    ).fetchone()[0]
    assert terminated >= 1
    (second,) = backend.enqueue("query")
    record = backend.wait_jobs(
        [second], lambda r: r["state"] in ("completed", "dead"), "the second run to end", 20
    )[second]
    assert (record["state"], record["errors"]) == ("completed", []), record
    worker.signal()
    assert worker.wait(timeout=10) == 0
