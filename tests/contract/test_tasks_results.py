"""The django.tasks backend reads a task's return value from the job's result (the write that
completes the job stores it), and still from ``meta["output"]`` for jobs stored before results
were; a value the store refuses fails the attempt before the signals report a success."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from anole_jobs import jobs
from anole_jobs.errors import ResultTooLarge
from anole_jobs.stores.base import Finish
from anole_jobs.tasks.compat import TaskResultStatus, task_backends, task_finished
from anole_jobs.testing import drain
from tests.sampleapp import tasks


@pytest.fixture
def backend(env, anole_jobs):
    tasks.CALLS.clear()
    return task_backends["default"]


def test_the_return_value_is_the_jobs_result(backend, anole_jobs):
    result = tasks.add.enqueue(2, b=3)
    assert drain() == {"completed": 1}
    record = anole_jobs.get(int(result.id))
    assert record.result == 5 and "output" not in record.meta
    assert jobs.result(int(result.id)) == 5
    assert backend.get_result(result.id).return_value == 5


def test_a_job_completed_before_results_reads_its_output_from_meta(backend, env, anole_jobs):
    result = tasks.add.enqueue(1, b=1)
    now = env.clock()
    (claimed,) = env.store.claim(
        "default", kinds=None, limit=1, now=now, lease_until=now + timedelta(seconds=30), worker="w"
    )
    # What an earlier version wrote: the value in meta["output"], no result.
    assert env.store.update_meta(claimed.run, {**claimed.record.meta, "output": 99})
    assert env.store.finish([Finish(run=claimed.run, state="completed", at=now)]) == [True]
    assert anole_jobs.get(int(result.id)).result is None
    done = backend.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.return_value == 99


def test_a_return_value_over_max_result_bytes_fails_before_any_success_signal(env, anole_jobs):
    env.configure(MAX_RESULT_BYTES=2)
    statuses = []

    def record(sender, task_result, **kwargs):
        statuses.append(task_result.status)

    task_finished.connect(record)
    try:
        with override_settings(
            TASKS={
                "default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "OPTIONS": {"attempts": 2}}
            }
        ):
            backend = task_backends["default"]
            result = tasks.on_mail_queue.using(queue_name="default").enqueue()
            assert drain() == {"retried": 1, "dead": 1}
            failed = backend.get_result(result.id)
    finally:
        task_finished.disconnect(record)
    assert statuses == [TaskResultStatus.FAILED]  # the last attempt only; never SUCCESSFUL
    assert [e.exception_class for e in failed.errors] == [ResultTooLarge, ResultTooLarge]
    record_ = anole_jobs.get(int(result.id))
    assert [e["type"] for e in record_.errors] == ["ResultTooLarge", "ResultTooLarge"]
    assert record_.result is None
