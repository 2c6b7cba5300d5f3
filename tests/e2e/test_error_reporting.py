"""A real `runjobs` with ``ERROR_REPORTER`` set (docs/observability.md#error-reporting): each
failed attempt (sync, async, a timeout) is reported once, from the slot that ran it, with the
job's context and never its arguments; a completed job is not; a reporter path that does not
import stops `runjobs` at its start with `anole_jobs.E015`. On every shared store.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Backend, Spec, wait_until

pytestmark = pytest.mark.e2e

REPORTER = "tests.e2e.reporter.to_file"


def reports(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    # Only whole lines: a line being appended as this reads is read on the next call.
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines()]


def test_runjobs_reports_each_failed_attempt_once(backend: Backend) -> None:
    path = backend.tmp / "reports.jsonl"
    marker = str(backend.markers)
    (sync_id,), (async_id,), (timeout_id,), (noop_id,) = backend.enqueue_specs(
        Spec("raise_base", args={"what": "custom", "marker": marker}),
        Spec("raise_base_async", args={"what": "custom", "marker": marker}),
        Spec("timeout", args={"seconds": 30, "marker": ""}),
        Spec("noop", args={"marker": marker}),
    )
    worker = backend.spawn(ERROR_REPORTER=REPORTER, REPORTS=str(path))
    backend.wait_state([noop_id], "completed")
    seen = wait_until(lambda: len(reports(path)) >= 3 and reports(path), "3 reports", 30.0)
    backend.wait_state([timeout_id], "dead")
    worker.signal()
    assert worker.wait(timeout=15) == 0

    by_job = {line["job_id"]: line for line in reports(path)}
    assert len(reports(path)) == 3 and set(by_job) == {sync_id, async_id, timeout_id}
    assert [line["job_id"] for line in seen] == [line["job_id"] for line in reports(path)]
    for job_id, kind in ((sync_id, "e2e.raise_base"), (async_id, "e2e.raise_base_async")):
        line = by_job[job_id]
        assert (line["type"], line["message"], line["kind"]) == ("HandlerStop", "custom stop", kind)
        assert (line["attempt"], line["max_attempts"], line["outcome"]) == (1, 2, "retried")
        assert line["will_retry"] is True and line["next_run_at"]
        assert line["queue"] == "default" and line["args_bytes"] > 0
        # The slot thread that ran a sync handler; for an async one, a thread of the loop's
        # executor (a reporter may block: never on the loop).
        slot = "anole-default-" if job_id == sync_id else "anole-async-io"
        assert line["thread"].startswith(slot), line["thread"]
    timed_out = by_job[timeout_id]
    assert (timed_out["type"], timed_out["outcome"], timed_out["error_type"]) == (
        "TimedOut",
        "dead",
        "Timeout",
    )
    assert timed_out["message"].startswith("the run exceeded its timeout of 0:00:01")
    assert marker not in path.read_text(encoding="utf-8")  # in the arguments: never reported
    states = {job_id: r["state"] for job_id, r in backend.jobs([sync_id, async_id]).items()}
    assert states == {sync_id: "retrying", async_id: "retrying"}


def test_runjobs_refuses_to_start_with_a_reporter_that_does_not_import(backend: Backend) -> None:
    done = backend.run_command("runjobs", ERROR_REPORTER="tests.e2e.nowhere.report")

    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "anole_jobs.E015" in output
    assert "'tests.e2e.nowhere.report' cannot be imported" in output
