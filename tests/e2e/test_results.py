"""Results through real processes, on every durable store: a process waiting in
``jobs.result(id, timeout=10)`` gets the value a `runjobs` process's handler returned — woken
by the store's wake-up from the other process (PostgreSQL NOTIFY, Redis pub/sub) or, on
SQLite, by its poll."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.e2e.conftest import ROOT, Backend

pytestmark = pytest.mark.e2e

VALUE = {"rows": [1, 2, 3], "ok": True}


def waiter(backend: Backend, job_id: int, timeout: float) -> subprocess.Popen[str]:
    """``e2e_result`` in a process of its own, as a web process would call jobs.result."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "django", "e2e_result", str(job_id), "--timeout", str(timeout)],
        cwd=ROOT,
        env=backend.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "waiting"  # started, before any worker runs
    return proc


def test_a_process_waiting_for_a_result_gets_the_value_a_worker_returned(backend: Backend) -> None:
    (job_id,) = backend.enqueue("test.returns", value=json.dumps(VALUE))
    proc = waiter(backend, job_id, timeout=10)
    try:
        worker = backend.spawn()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert json.loads(out) == {"result": VALUE}
    assert backend.jobs([job_id])[job_id]["state"] == "completed"
    worker.signal()
    assert worker.wait(timeout=10) == 0


def test_a_result_that_is_not_json_or_too_large_fails_the_attempt_in_runjobs(
    backend: Backend,
) -> None:
    (not_json,) = backend.enqueue("test.returns", hook="not_json")
    (too_large,) = backend.enqueue("test.returns", value=json.dumps("x" * 200))
    (fits,) = backend.enqueue("test.returns", value=json.dumps("x" * 20))
    worker = backend.spawn(MAX_RESULT_BYTES="100")
    records = backend.wait_jobs(
        [not_json, too_large, fits],
        lambda r: r["state"] == "completed" or bool(r["errors"]),
        "each job completed or failed an attempt",
    )
    assert records[fits]["state"] == "completed"
    for job_id, error in ((not_json, "TypeError"), (too_large, "ResultTooLarge")):
        assert records[job_id]["state"] in ("retrying", "dead"), records[job_id]
        assert records[job_id]["errors"][0]["type"] == error, records[job_id]["errors"]
    worker.wait_ready()
    worker.signal()
    assert worker.wait(timeout=10) == 0
