"""Durable sleeps and signals through real processes, on every durable store: a `runjobs`
worker parks a job (no slot held, no attempt counted), wakes it after its sleep, parks it
again for a signal, and `manage.py jobs signal` from another process wakes it at once."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Backend

pytestmark = pytest.mark.e2e


def test_a_worker_sleeps_waits_for_a_signal_and_finishes_with_its_payload(
    backend: Backend,
) -> None:
    (job_id,) = backend.enqueue("test.durable_wait", nap=0.5, timeout=120)
    worker = backend.spawn()
    backend.wait_jobs([job_id], lambda r: r["state"] == "scheduled", "the job parked")
    answer = backend.manage("jobs", "signal", str(job_id), "go", "--payload", '{"a": 1}', "--json")
    assert json.loads(answer) == {"stored": True}
    (record,) = backend.wait_jobs(
        [job_id], lambda r: r["state"] == "completed", "the job completed", timeout=30
    ).values()
    assert record["attempt"] == 1
    shown = json.loads(backend.manage("jobs", "show", str(job_id), "--json"))
    assert shown["result"] == {"a": 1}
    worker.signal()
    assert worker.wait(timeout=10) == 0
