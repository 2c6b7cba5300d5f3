"""The garbage collector of real `runjobs` worker processes: once the workers are up, the
start-up's objects are frozen out of the collector's walks and the young generation is collected
less often (`--gc-threshold`, default 20,000; 0 leaves the collector as Python set it). A
handler reports its own process's settings, so what is checked is the process that runs jobs,
a supervised worker included."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from anole_jobs.worker.gctune import DEFAULT_THRESHOLD
from tests.e2e.conftest import Backend, Worker, wait_until

pytestmark = pytest.mark.e2e


def collector_of(backend: Backend, worker: Worker, processes: int = 1) -> dict[str, Any]:
    """The collector settings of the process that ran a job, as its handler saw them. The job
    is enqueued once every worker process says it runs: a worker tunes its collector just
    before, once its runtime is up, so a job claimed at once may run before that."""
    wait_until(
        lambda: worker.output().count("runjobs running") >= processes,
        f"{processes} worker process(es) running",
        30,
    )
    (job_id,) = backend.enqueue("test.returns", hook="gc")
    done = backend.run_command("e2e_result", str(job_id), "--timeout", "30")
    assert done.returncode == 0, done.stderr + worker.output()
    waiting, result = done.stdout.split("\n", 1)
    assert waiting == "waiting"
    worker.signal()
    assert worker.wait(timeout=30) == 0, worker.output()
    return dict(json.loads(result)["result"])


def fresh_interpreter() -> dict[str, Any]:
    """The collector of a fresh interpreter like the workers': its thresholds (the young
    generation's is 700, or 2,000 from Python 3.13) and what it froze itself (a few hundred
    objects on Python 3.12, none on 3.11 or 3.13)."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc, json; print(json.dumps({'thresholds': gc.get_threshold(),"
            " 'frozen': gc.get_freeze_count()}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(json.loads(out))


def test_a_worker_freezes_its_start_up_and_collects_the_young_generation_less_often(
    sqlite_backend: Backend,
) -> None:
    worker = sqlite_backend.spawn()
    found = collector_of(sqlite_backend, worker)
    fresh = fresh_interpreter()
    assert found["thresholds"] == [DEFAULT_THRESHOLD, *fresh["thresholds"][1:]]
    # Django, the app and its kinds: tens of thousands of objects, none walked again.
    assert found["frozen"] > fresh["frozen"] + 10_000


def test_gc_threshold_0_leaves_the_collector_as_python_set_it(sqlite_backend: Backend) -> None:
    worker = sqlite_backend.spawn("--gc-threshold", "0")
    found = collector_of(sqlite_backend, worker)
    assert found == fresh_interpreter()


def test_the_workers_of_a_supervisor_get_its_threshold(sqlite_backend: Backend) -> None:
    worker = sqlite_backend.spawn("--processes", "2", "--gc-threshold", "5000")
    found = collector_of(sqlite_backend, worker, processes=2)
    assert found["thresholds"][0] == 5000
    assert found["frozen"] > fresh_interpreter()["frozen"] + 10_000


def test_a_negative_gc_threshold_is_refused_with_the_option_named(
    sqlite_backend: Backend,
) -> None:
    done = sqlite_backend.run_command("runjobs", "--gc-threshold", "-1")
    assert done.returncode == 2
    assert "--gc-threshold must be at least 0, not -1" in done.stderr
