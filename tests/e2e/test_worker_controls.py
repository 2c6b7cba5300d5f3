"""Worker controls with a real `runjobs` process: `jobs worker-quiet ID` makes it claim
nothing more while its running job finishes (a job enqueued meanwhile stays available), and
`jobs worker-stop ID` makes it drain and exit 0; both are in the audit log as the CLI's."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.conftest import Backend, Spec, wait_until

pytestmark = pytest.mark.e2e


def test_quiet_then_stop_a_runjobs_process(sqlite_backend: Backend):
    backend = sqlite_backend
    worker = backend.spawn("--queue", "default")
    worker.wait_ready()
    marker = str(backend.markers)
    ((running,),) = backend.enqueue_specs(
        Spec("e2e.block", 1, args={"seconds": 3, "marker": marker})
    )
    backend.wait_markers(1)

    def listed() -> str | None:
        found = json.loads(backend.manage("jobs", "workers", "--json"))["workers"]
        return next((w["id"] for w in found if w["pid"] == worker.pid), None)

    worker_id = wait_until(listed, "the worker listed", timeout=10)
    seen = len(worker.output())
    backend.manage("jobs", "worker-quiet", worker_id)
    asked = time.monotonic()
    worker.wait_output("runjobs: quiet, asked by cli (cli)", timeout=5, since=seen)
    assert time.monotonic() - asked < 1.5  # honoured within about a second
    (waiting,) = backend.enqueue("e2e.noop")
    # The running job finishes; the worker, with free slots, claims nothing more.
    backend.wait_state([running], "completed", timeout=10)
    assert backend.jobs([waiting])[waiting]["state"] == "available"
    table = json.loads(backend.manage("jobs", "workers", "--json"))["workers"]
    (mine,) = [w for w in table if w["id"] == worker_id]
    assert mine["control"]["action"] == "quiet" and mine["control"]["by"] == "cli"

    backend.manage("jobs", "worker-stop", worker_id)
    assert worker.wait(timeout=10) == 0, worker.output()
    assert "a stop request from cli (cli)" in worker.output()
    assert backend.jobs([waiting])[waiting]["state"] == "available"
    audit = json.loads(backend.manage("jobs", "audit", "--json"))["entries"]
    assert [(e["action"], e["actor"], e["surface"]) for e in audit[:2]] == [
        ("worker_stop", "cli", "cli"),
        ("worker_quiet", "cli", "cli"),
    ]
    assert audit[0]["target"] == f"worker {worker_id}"
