"""Worker presence with real processes, on every durable store: a `runjobs` process shows up
in ``manage.py jobs workers`` with its pid, host, queues and the job it runs, and leaves the
list as soon as it stops on SIGTERM (a killed process's record expires instead: the contract
tests cover that with a fake clock)."""

from __future__ import annotations

import json
import signal
import socket

import pytest

from tests.e2e.conftest import Backend, Spec, Worker, wait_markers, wait_until

pytestmark = pytest.mark.e2e


def workers(backend: Backend) -> list[dict]:
    return json.loads(backend.manage("jobs", "workers", "--json"))["workers"]


def test_a_runjobs_process_is_listed_with_its_job_and_gone_after_sigterm(backend: Backend):
    marker = str(backend.markers)
    ((job_id,),) = backend.enqueue_specs(Spec("block", 1, args={"seconds": 60, "marker": marker}))
    worker = Worker(
        {**backend.env, "ANOLE_JOBS_HOST": "worker-host-1"},
        ("--queue", "default"),
        backend.tmp / "runjobs-workers.log",
    )
    backend.workers.append(worker)  # closed and printed at the fixture's teardown
    worker.wait_ready()
    wait_markers(backend.markers, 1)

    def listed() -> dict | None:
        found = [w for w in workers(backend) if w["pid"] == worker.pid]
        return found[0] if found and found[0]["jobs"] else None

    seen = wait_until(listed, f"runjobs {worker.pid} listed with its job", timeout=30)
    assert seen["host"] == "worker-host-1"
    assert seen["id"].startswith(f"worker-host-1:{worker.pid}:")
    assert seen["queues"] == [{"name": "default", "busy": 1, "total": 4}]
    assert (seen["busy"], seen["slots"], seen["held"], seen["late"]) == (1, 4, 1, False)
    (job,) = seen["jobs"]
    assert (job["id"], job["kind"], job["running"]) == (job_id, "e2e.block", True)
    table = backend.manage("jobs", "workers")
    assert f"worker-host-1:{worker.pid}:" in table and f"job {job_id}  e2e.block" in table

    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=15) == 0, worker.output()
    assert [w for w in workers(backend) if w["pid"] == worker.pid] == []


def test_without_a_host_label_the_machine_name_is_reported(sqlite_backend: Backend):
    worker = sqlite_backend.spawn()
    worker.wait_ready()
    seen = wait_until(lambda: workers(sqlite_backend), "a worker listed", timeout=30)
    assert [(w["host"], w["pid"]) for w in seen] == [(socket.gethostname(), worker.pid)]


def test_a_killed_process_drops_out_when_its_record_expires(sqlite_backend: Backend):
    # LEASE is 2 s here: a record expires three heartbeats (one lease) after it was written.
    worker = sqlite_backend.spawn()
    worker.wait_ready()
    wait_until(lambda: workers(sqlite_backend), "a worker listed", timeout=30)
    worker.proc.send_signal(signal.SIGKILL)  # no drain, no clean-up: its record stays behind
    worker.proc.wait(timeout=10)
    wait_until(lambda: workers(sqlite_backend) == [], "the killed worker's record to expire", 15)
