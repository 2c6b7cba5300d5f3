"""`runjobs` start-up: the start-up line, the options, and refusals."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import Backend, Spec

pytestmark = pytest.mark.e2e


def test_the_start_up_line_comes_before_any_job_runs(backend: Backend) -> None:
    ids = backend.enqueue("noop", count=3, marker=str(backend.markers))
    worker = backend.spawn("--log-level", "DEBUG")
    backend.wait_state(ids, "completed", timeout=30)
    worker.signal()
    assert worker.wait(timeout=10) == 0
    lines = worker.output().splitlines()
    starting = [i for i, line in enumerate(lines) if "workers starting" in line]
    runs = [i for i, line in enumerate(lines) if re.search(r"job \d+ e2e\.noop attempt", line)]
    assert starting, "\n".join(lines)
    assert len(runs) == 3, "at DEBUG every outcome is logged"
    assert starting[0] < runs[0]
    line = lines[starting[0]]
    assert "default (concurrency 4)" in line and "other (concurrency 1)" in line
    assert re.search(r"store (sqlite|postgresql|redis)", line), line


def test_queue_and_concurrency_options(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    default_ids, other_ids = backend.enqueue_specs(Spec("noop", 2), Spec("noop", 2, queue="other"))
    worker = backend.spawn("--queue", "other", "--concurrency", "2")
    backend.wait_state(other_ids, "completed", timeout=30)
    worker.signal()
    assert worker.wait(timeout=10) == 0
    line = next(line for line in worker.output().splitlines() if "workers starting" in line)
    assert "other (concurrency 2)" in line and "default" not in line
    # The queue it was not asked to run is untouched.
    assert {r["state"] for r in backend.jobs(default_ids).values()} == {"available"}


def test_an_unknown_queue_is_refused(sqlite_backend: Backend) -> None:
    done = sqlite_backend.run_command("runjobs", "--queue", "nope")
    assert done.returncode != 0
    assert "nope" in done.stderr and "default" in done.stderr


def test_lambda_deployment_refuses_to_run_workers(sqlite_backend: Backend) -> None:
    (job_id,) = sqlite_backend.enqueue("noop")
    done = sqlite_backend.run_command("runjobs", DEPLOYMENT="lambda")
    assert done.returncode != 0
    assert "lambda" in done.stderr and "DEPLOYMENT" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert sqlite_backend.jobs([job_id])[job_id]["state"] == "available"
