"""A handler that calls `sys.exit(1)` (or raises `KeyboardInterrupt`) in a real `runjobs`:
its attempt fails with the error recorded, the worker's only slot (`--concurrency 1`) runs the
next job, and SIGINT to the process still drains it and exits 0 — sync and async handlers, on
every shared store.
"""

from __future__ import annotations

import signal

import pytest

from tests.e2e.conftest import Backend, Spec

pytestmark = pytest.mark.e2e

KINDS = {"sync": "raise_base", "async": "raise_base_async"}


def run_and_check(backend: Backend, kind: str, what: str, error: tuple[str, str]) -> None:
    marker = str(backend.markers)
    (raising,), (after,) = backend.enqueue_specs(
        Spec(kind, args={"what": what, "marker": marker}),
        Spec("noop", args={"marker": marker}),
    )
    worker = backend.spawn("--concurrency", "1")
    worker.wait_ready()
    # The only slot ran the raising job, then the next one.
    backend.wait_state([after], "completed")
    record = backend.jobs([raising])[raising]
    # attempts=2: the kind's backoff schedules the second attempt.
    assert (record["state"], record["attempt"]) == ("retrying", 1), record
    (entry,) = record["errors"]
    assert (entry["type"], entry["message"]) == error
    assert (backend.markers / f"{raising}.1.started").exists()
    assert f"job {raising} e2e.{kind} attempt 1/2 on default: failed, {error[0]}" in (
        worker.output()
    )
    # The process goes on: SIGINT still means "drain and stop", with status 0.
    worker.signal(signal.SIGINT)
    assert worker.wait(timeout=15) == 0, worker.output()
    assert "runjobs: SIGINT received; draining" in worker.output()


@pytest.mark.parametrize("style", list(KINDS))
def test_a_handler_calling_sys_exit_fails_its_attempt_and_the_next_job_runs(
    backend: Backend, style: str
) -> None:
    run_and_check(backend, KINDS[style], "sys.exit", ("SystemExit", "1"))


@pytest.mark.parametrize("style", list(KINDS))
def test_a_handler_raising_keyboard_interrupt_is_not_a_signal(
    sqlite_backend: Backend, style: str
) -> None:
    run_and_check(
        sqlite_backend,
        KINDS[style],
        "KeyboardInterrupt",
        ("KeyboardInterrupt", "from the handler"),
    )
