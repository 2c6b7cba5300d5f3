"""A Django `@task` enqueued through `AnoleBackend` runs on a real `runjobs` process, with
retries, and ends SUCCESSFUL with its result readable from another process."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Worker, manage

pytestmark = pytest.mark.e2e


def test_a_task_runs_on_runjobs_with_retries_and_its_result_is_readable(sqlite_backend):
    # One store is enough here: the contract suite runs the backend on every store, and what
    # this adds is the real worker process. (Each extra store costs ~20 s of CI.)
    backend = sqlite_backend
    # Retries come after 0.2 s with these settings (tests/e2e/tasks_backoff.py).
    env = {**backend.env, "DJANGO_SETTINGS_MODULE": "tests.e2e.tasks_settings"}
    result_id = manage(env, "e2e_tasks", "enqueue", "flaky_sum", "[[1, 2, 3], 2]").strip()
    ready = json.loads(manage(env, "e2e_tasks", "result", result_id))
    assert ready == {"status": "READY", "return_value": None, "attempts": 0, "errors": []}

    worker = Worker(env, ("--queue", "default"), backend.tmp / "runjobs-tasks.log")
    backend.workers.append(worker)
    (record,) = backend.wait_state([int(result_id)], "completed", timeout=60).values()
    assert record["attempt"] == 3

    result = json.loads(manage(env, "e2e_tasks", "result", result_id))
    assert result == {
        "status": "SUCCESSFUL",
        "return_value": {"sum": 6, "attempt": 3, "id": result_id},
        "attempts": 3,
        "errors": ["builtins.ConnectionError", "builtins.ConnectionError"],
    }
