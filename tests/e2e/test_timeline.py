"""The job's timeline through a real `runjobs` process: each attempt keeps the worker that
ran it (its host and process id), its start, end and outcome, and the handler's log lines and
last progress report are stored with the job, as ``manage.py jobs show --json`` reads them;
a long attempt's log lines show there while it runs, and stay when its worker is killed or
the job is cancelled (with the lines the handler logs as it winds down)."""

from __future__ import annotations

import json
import socket

import pytest

from tests.e2e.conftest import BACKENDS, Backend, wait_until

pytestmark = pytest.mark.e2e


def test_a_worker_keeps_each_attempt_with_its_name_and_the_handlers_log(
    sqlite_backend: Backend,
) -> None:
    backend = sqlite_backend
    (job_id,) = backend.enqueue("e2e.timeline")
    worker = backend.spawn()
    backend.wait_state([job_id], "completed")
    shown = json.loads(backend.manage("jobs", "show", str(job_id), "--json"))
    worker.signal()
    assert worker.wait(timeout=10) == 0
    attempts = shown["attempts"]
    assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "failed"), (2, "completed")]
    for entry in attempts:
        assert entry["worker"].startswith(f"{socket.gethostname()}:{worker.pid}"), entry
        assert entry["started_at"] <= entry["finished_at"]
    assert [(line["attempt"], line["level"], line["message"]) for line in shown["logs"]] == [
        (1, "INFO", "attempt 1 starts"),
        (2, "INFO", "attempt 2 starts"),
        (2, "WARNING", "attempt 2 done"),
    ]
    assert {k: shown["progress"][k] for k in ("done", "total", "message")} == {
        "done": 2,
        "total": 2,
        "message": "attempt 2",
    }


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_running_jobs_log_shows_while_it_runs_and_stays_when_its_worker_is_killed(
    backend: Backend,
) -> None:
    (job_id,) = backend.enqueue(
        "asyncrt.hold", marker=str(backend.markers), seconds=60, say="waiting for the upstream"
    )
    worker = backend.spawn()
    backend.wait_markers(1, "started", job_id=job_id)

    def shown_with_logs() -> dict | None:
        shown = json.loads(backend.manage("jobs", "show", str(job_id), "--json"))
        return shown if shown["logs"] else None

    shown = wait_until(shown_with_logs, "the running job's log line in jobs show", 30)
    assert shown["state"] == "running"
    assert [line["message"] for line in shown["logs"]] == ["waiting for the upstream"]
    worker.kill()  # SIGKILL: the attempt never writes its end
    shown = json.loads(backend.manage("jobs", "show", str(job_id), "--json"))
    assert [(line["attempt"], line["message"]) for line in shown["logs"]] == [
        (1, "waiting for the upstream")
    ]


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_job_cancelled_while_it_runs_keeps_the_lines_it_logs_winding_down(
    backend: Backend,
) -> None:
    (job_id,) = backend.enqueue(
        "asyncrt.hold",
        marker=str(backend.markers),
        seconds=60,
        say="waiting for the upstream",
        say_on_cancel="cancelled: closing the upstream",
    )
    worker = backend.spawn()
    backend.wait_markers(1, "started", job_id=job_id)
    backend.manage("e2e_cancel", str(job_id))
    backend.wait_markers(1, "canceled", job_id=job_id)

    def shown_with_both_lines() -> dict | None:
        shown = json.loads(backend.manage("jobs", "show", str(job_id), "--json"))
        return shown if len(shown["logs"]) == 2 else None

    shown = wait_until(shown_with_both_lines, "the line logged after the cancel", 30)
    assert shown["state"] == "cancelled"
    assert [(line["attempt"], line["message"]) for line in shown["logs"]] == [
        (1, "waiting for the upstream"),
        (1, "cancelled: closing the upstream"),
    ]
    assert [a["outcome"] for a in shown["attempts"]] == ["cancelled"]
    worker.signal()
    assert worker.wait(timeout=15) == 0
