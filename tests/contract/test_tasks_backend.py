"""The django.tasks backend on every store, in manual mode: enqueue through Django's
`Task.enqueue`, run with `jobs.step()` / `drain()`, read back with `get_result`.

Where a test checks Django's tasks contract, it follows Django's reference (docs/ref/tasks.txt)
and what Django's and django-tasks' own backend tests expect of a backend (for instance
``self.assertEqual(result, backend.get_result(result.id))`` right after enqueueing).

The tasks live in tests/sampleapp/tasks.py on the "default" TASKS backend (tests/settings.py).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.test import override_settings

from anole_jobs import InvalidJob
from anole_jobs.tasks import TASK_KIND, AnoleBackend, TaskCall
from anole_jobs.tasks.compat import (
    FRAMEWORK,
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    task_backends,
    task_enqueued,
    task_finished,
    task_started,
)
from anole_jobs.testing import FakeClock, all_enqueued, assert_enqueued, drain
from anole_jobs.testing.mode import using_clock
from tests.sampleapp import tasks

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def signals():
    """Every task signal sent, as (signal name, sender, status, exc_info present)."""
    seen = []

    def receiver(name):
        def record(sender, task_result, **kwargs):
            seen.append((name, sender, task_result.status, sys.exc_info()[0] is not None))

        return record

    receivers = {
        "enqueued": receiver("enqueued"),
        "started": receiver("started"),
        "finished": receiver("finished"),
    }
    task_enqueued.connect(receivers["enqueued"])
    task_started.connect(receivers["started"])
    task_finished.connect(receivers["finished"])
    yield seen
    task_enqueued.disconnect(receivers["enqueued"])
    task_started.disconnect(receivers["started"])
    task_finished.disconnect(receivers["finished"])


@pytest.fixture
def backend(env, anole_jobs):
    tasks.CALLS.clear()
    return task_backends["default"]


def test_the_backend_says_what_it_supports():
    backend = task_backends["default"]
    assert isinstance(backend, AnoleBackend)
    assert backend.supports_defer and backend.supports_priority
    assert backend.supports_get_result and backend.supports_async_task


def test_the_constructor_touches_no_database():
    # No django_db mark: pytest-django refuses any query, so building must make none.
    backend = AnoleBackend("other", {"QUEUES": ["default"], "OPTIONS": {"attempts": 3}})
    assert backend.attempts == 3 and backend.timeout is None


def test_enqueue_stores_a_job_that_runs_and_keeps_its_return_value(backend, anole_jobs, signals):
    result = tasks.add.enqueue(2, b=3)
    assert result.status == TaskResultStatus.READY and result.backend == "default"

    record = assert_enqueued(TASK_KIND)
    assert result.id == str(record.id)
    assert record.queue == "default" and record.priority == 0
    assert record.args["task"] == "tests.sampleapp.tasks.add"
    assert (record.args["args"], record.args["kwargs"]) == ([2], {"b": 3})

    assert drain() == {"completed": 1}
    done = backend.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == 5 and done.attempts == 1 and done.errors == []
    assert done.finished_at is not None and done.enqueued_at == record.created_at
    result.refresh()
    assert result.return_value == 5
    assert tasks.add.get_result(result.id).return_value == 5
    assert [(name, sender) for name, sender, _, _ in signals] == [
        ("enqueued", AnoleBackend),
        ("started", AnoleBackend),
        ("finished", AnoleBackend),
    ]
    assert signals[-1][2] == TaskResultStatus.SUCCESSFUL


def test_queue_priority_and_run_after_map_onto_the_job(backend, anole_jobs, anole_clock):
    later = anole_clock() + timedelta(hours=1)
    result = tasks.on_mail_queue.using(run_after=later).enqueue()
    record = anole_jobs.get(int(result.id))
    assert (record.queue, record.priority, record.state) == ("mail", 7, "scheduled")
    assert record.scheduled_at == later
    assert backend.get_result(result.id).status == TaskResultStatus.READY
    assert drain() == {"completed": 1}
    assert backend.get_result(result.id).return_value == "mailed"


def test_a_queue_the_tasks_backend_lists_is_used_though_anole_jobs_does_not_declare_it(
    backend, anole_jobs, settings
):
    """Django checks ``queue_name`` against the backend's own ``QUEUES``: such a queue is
    used on purpose, not refused as a typo by anole_jobs' rule for undeclared queues."""
    settings.TASKS = {
        "default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "QUEUES": ["default", "reports"]}
    }
    result = tasks.on_mail_queue.using(queue_name="reports").enqueue()
    assert anole_jobs.get(int(result.id)).queue == "reports"


def test_retries_then_success_with_the_attempt_in_the_context(backend, anole_jobs, signals):
    result = tasks.flaky_sum.enqueue([1, 2, 3], fail_times=1)

    assert anole_jobs.step().outcomes() == {int(result.id): "retried"}
    waiting = backend.get_result(result.id)
    assert waiting.status == TaskResultStatus.READY and waiting.attempts == 1
    (error,) = waiting.errors
    assert error.exception_class_path == "builtins.ConnectionError"
    assert error.exception_class is ConnectionError
    assert "upstream down (attempt 1)" in error.traceback

    assert drain() == {"completed": 1}
    done = backend.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL and done.attempts == 2
    assert done.return_value == {"sum": 6, "attempt": 2, "id": result.id}
    assert [call["attempt"] for call in tasks.CALLS] == [1, 2]
    # A failure with attempts left does not finish the task: one task_finished, at the end.
    assert [name for name, *_ in signals] == ["enqueued", "started", "started", "finished"]


def test_a_task_that_runs_out_of_attempts_fails_with_its_errors(env, anole_jobs, signals):
    tasks_setting = {"default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "OPTIONS": {}}}
    tasks_setting["default"]["OPTIONS"]["attempts"] = 2
    with override_settings(TASKS=tasks_setting):
        backend = task_backends["default"]
        result = tasks.always_fails.enqueue()
        assert anole_jobs.get(int(result.id)).max_attempts == 2
        assert drain() == {"retried": 1, "dead": 1}
        failed = backend.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED and failed.attempts == 2
    assert [e.exception_class_path for e in failed.errors] == ["builtins.ValueError"] * 2
    assert "this task always fails" in failed.errors[-1].traceback
    with pytest.raises(ValueError, match="Task failed"):
        failed.return_value  # noqa: B018 - Django raises for a failed task
    # task_finished once, FAILED, sent from inside the except block (exc_info available).
    finished = [entry for entry in signals if entry[0] == "finished"]
    assert finished == [("finished", AnoleBackend, TaskResultStatus.FAILED, True)]


def test_per_task_options_through_the_task_class(backend, anole_jobs):
    from anole_jobs.tasks import AnoleTask

    assert isinstance(tasks.once, AnoleTask)
    assert (tasks.once.attempts, tasks.once.timeout) == (1, 5)
    result = tasks.once.enqueue()
    record = anole_jobs.get(int(result.id))
    assert record.max_attempts == 1 and record.args["timeout"] == 5
    spec = anole_jobs.service.registry.kind(TASK_KIND)
    assert spec.timeout_for(record.args) == timedelta(seconds=5)
    assert drain() == {"dead": 1}
    assert backend.get_result(result.id).status == TaskResultStatus.FAILED


def test_options_set_attempts_and_timeout_for_every_task(env, anole_jobs):
    options = {"attempts": 4, "timeout": timedelta(seconds=30)}
    with override_settings(
        TASKS={"default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "OPTIONS": options}}
    ):
        result = tasks.add.enqueue(1, 1)
    record = anole_jobs.get(int(result.id))
    assert record.max_attempts == 4 and record.args["timeout"] == 30


def test_bad_options_are_refused_naming_the_option():
    with pytest.raises(ImproperlyConfigured, match="unknown option.*'retries'"):
        AnoleBackend("x", {"OPTIONS": {"retries": 3}})
    with pytest.raises(ImproperlyConfigured, match="attempts must be a positive int"):
        AnoleBackend("x", {"OPTIONS": {"attempts": 0}})
    with pytest.raises(ImproperlyConfigured, match="timeout must be positive"):
        AnoleBackend("x", {"OPTIONS": {"timeout": 0}})


def test_validate_task_keeps_djangos_rules_and_adds_its_own(backend):
    with pytest.raises(InvalidTask, match="Queue 'reports' is not valid"):
        tasks.add.using(queue_name="reports")
    with pytest.raises(InvalidTask, match="priority"):
        tasks.add.using(priority=101)


def test_arguments_that_are_not_json_raise_type_error_and_store_nothing(
    backend, anole_jobs, caplog
):
    # Django documents `except TypeError` for arguments it cannot serialise; anole_jobs'
    # own callers catch InvalidJob. The error is both.
    with pytest.raises(TypeError, match="arguments must be JSON values"):
        tasks.add.enqueue(object(), 1)
    with pytest.raises(InvalidJob, match="pass ids, not model instances"):
        tasks.add.enqueue(1, b={1, 2})
    assert all_enqueued() == []
    assert any("tests.sampleapp.tasks.add refused" in r.getMessage() for r in caplog.records), (
        caplog.text
    )


def test_a_return_value_that_is_not_json_fails_the_attempt_with_type_error(env, anole_jobs):
    # Django's backends fail such a task with a TypeError whose traceback says
    # "Unsupported type"; here each attempt fails that way, retried while attempts remain.
    options = {"attempts": 2}
    with override_settings(
        TASKS={"default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "OPTIONS": options}}
    ):
        backend = task_backends["default"]
        result = tasks.returns_a_set.enqueue()
        assert drain() == {"retried": 1, "dead": 1}
        failed = backend.get_result(result.id)
    assert failed.status == TaskResultStatus.FAILED
    assert [e.exception_class for e in failed.errors] == [TypeError, TypeError]
    assert "Unsupported type" in failed.errors[-1].traceback
    assert "returned a set" in failed.errors[-1].traceback
    with pytest.raises(ValueError, match="Task failed"):
        failed.return_value  # noqa: B018
    assert "output" not in anole_jobs.get(int(result.id)).meta


class TickingClock(FakeClock):
    """A fake clock that moves 1 ms on every read, as a real one would between two reads."""

    def __call__(self):
        return self.advance(timedelta(milliseconds=1))


def test_enqueue_returns_the_result_get_result_reads_right_after(backend, anole_jobs):
    with using_clock(TickingClock()):
        result = tasks.add.enqueue(2, b=3)
        assert result == backend.get_result(result.id)
        assert result.enqueued_at == anole_jobs.get(int(result.id)).created_at
        assert result.started_at is None and result.finished_at is None
        assert result.last_attempted_at is None and result.attempts == 0
        async_result = async_to_sync(tasks.add.aenqueue)(1, 1)
        assert async_result == async_to_sync(backend.aget_result)(async_result.id)


def test_get_result_keeps_the_using_overrides(env, anole_jobs, anole_clock):
    tasks_setting = {
        "default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "QUEUES": ["default", "mail"]},
        "other": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "QUEUES": ["default", "mail"]},
    }
    later = anole_clock() + timedelta(minutes=5, microseconds=123)
    with override_settings(TASKS=tasks_setting):
        variants = [
            tasks.add.using(priority=-40),
            tasks.add.using(queue_name="mail"),
            tasks.add.using(run_after=later),
            tasks.add.using(backend="other"),
            tasks.on_mail_queue.using(priority=3, queue_name="default", run_after=later),
        ]
        for task in variants:
            result = task.enqueue() if task.name == "on_mail_queue" else task.enqueue(1, 2)
            read = task_backends[task.backend].get_result(result.id)
            assert read.task == task, task
            assert (read.task.priority, read.task.queue_name) == (task.priority, task.queue_name)
            assert read.task.run_after == task.run_after and read.task.backend == task.backend
            assert result == read
        assert drain() == {"completed": len(variants)}
        done = task_backends["default"].get_result(result.id)
    assert done.task == variants[-1] and done.return_value == "mailed"


def test_a_running_attempt_is_not_counted_in_attempts(backend, anole_jobs):
    tasks.SEEN_WHILE_RUNNING.clear()
    result = tasks.reads_its_own_result.enqueue(fail_times=1)
    assert drain() == {"retried": 1, "completed": 1}
    # Django: "If the task is currently running, it does not count as an attempt."
    assert tasks.SEEN_WHILE_RUNNING == [
        {"status": "RUNNING", "attempts": 0, "context_attempt": 1},
        {"status": "RUNNING", "attempts": 1, "context_attempt": 2},
    ]
    done = backend.get_result(result.id)
    assert done.attempts == 2 and done.return_value == 2


def test_started_at_is_the_first_attempts_start(backend, anole_jobs, anole_clock):
    result = tasks.flaky_sum.enqueue([1, 2], fail_times=2)
    first = anole_clock()
    assert anole_jobs.step().outcomes() == {int(result.id): "retried"}
    after_one = backend.get_result(result.id)
    assert after_one.started_at == first and after_one.last_attempted_at == first
    assert drain() == {"retried": 1, "completed": 1}  # advances the clock to each retry
    done = backend.get_result(result.id)
    assert done.attempts == 3
    assert done.started_at == first
    assert done.last_attempted_at == anole_clock() > first
    assert done.enqueued_at <= done.started_at <= done.last_attempted_at <= done.finished_at


def test_check_reports_anole_jobs_missing_from_installed_apps(settings):
    backend = AnoleBackend("default", {"QUEUES": ["default"]})
    assert [m.id for m in backend.check()] == []
    without = [app for app in settings.INSTALLED_APPS if app not in ("anole_jobs",)]
    with override_settings(INSTALLED_APPS=without):
        (error,) = backend.check()
    assert error.id == "anole_jobs.E014" and error.level == checks.ERROR
    assert "'anole_jobs' is not in INSTALLED_APPS" in error.msg
    assert "INSTALLED_APPS" in error.hint


def test_async_tasks_run(backend):
    result = tasks.async_double.enqueue(21)
    assert drain() == {"completed": 1}
    assert backend.get_result(result.id).return_value == 42


def test_aenqueue_and_aget_result(backend):
    result = async_to_sync(tasks.add.aenqueue)(20, 22)
    drain()
    assert async_to_sync(backend.aget_result)(result.id).return_value == 42


def test_unknown_results_do_not_exist(backend, anole_jobs):
    from tests.sampleapp.jobs import Work

    other = anole_jobs.enqueue(Work())
    first = tasks.add.enqueue(1, 2)
    assert first.id.isascii()
    # Only plain ASCII digits name a job: a superscript or another script's digit for the
    # task's own id names nothing (int() would read "٣" as 3), nor does a number too large.
    lookalikes = [
        "".join(chr(0x0660 + int(d)) for d in first.id),  # Arabic-Indic digits
        "²",
        " " + first.id,
        str(2**63),
        "0",
    ]
    for result_id in ("999999", "abc", "-1", str(other.id), *lookalikes):
        with pytest.raises(TaskResultDoesNotExist):
            backend.get_result(result_id)


@pytest.mark.parametrize(
    "path",
    [
        "tests.sampleapp.tasks.not_a_task",  # a module-level function, not a task
        "os.system",  # not an installed app's module
        "antigravity.fly",  # never imported at all
        "tests.sampleapp.tasks",
    ],
)
def test_only_tasks_run_from_a_stored_path(backend, anole_jobs, path):
    job = anole_jobs.enqueue(TaskCall(task=path, args=["echo hi"]))
    assert anole_jobs.step().outcomes() == {job.id: "dead"}
    (error,) = anole_jobs.get(job.id).errors
    assert error["type"] == "Discarded"
    assert "antigravity" not in sys.modules


def test_enqueue_joins_the_transaction_on_stores_with_transactions(env, backend, anole_jobs):
    env.require("supports_transactions")
    with pytest.raises(RuntimeError), transaction.atomic(using=env.alias):
        rolled_back = tasks.add.enqueue(1, 2)
        raise RuntimeError("rolled back")
    with pytest.raises(TaskResultDoesNotExist):
        backend.get_result(rolled_back.id)
    with transaction.atomic(using=env.alias):
        committed = tasks.add.enqueue(1, 2)
    assert backend.get_result(committed.id).status == TaskResultStatus.READY


# -- Django's own backend tests (tests/tasks/test_immediate_backend.py in Django 6.1), adapted:
# the task runs on a worker step instead of inside enqueue, and has one attempt, so its first
# failure is its last, as with Django's backends, which never retry.


@pytest.mark.parametrize(
    ("task", "exception", "message"),
    [
        (tasks.value_error, ValueError, "This Task failed due to ValueError"),
        (tasks.exits, SystemExit, "This Task failed due to SystemExit"),
    ],
    ids=["ValueError", "SystemExit"],
)
def test_catches_exception(backend, anole_jobs, signals, caplog, task, exception, message):
    result = task.enqueue()
    with caplog.at_level("ERROR", logger=FRAMEWORK):
        assert drain() == {"dead": 1}
    # Django's receiver logs the failure once, from inside the except block.
    logged = [r for r in caplog.records if r.name == FRAMEWORK and r.levelname == "ERROR"]
    assert len(logged) == 1 and logged[0].exc_info[0] is exception
    assert [entry for entry in signals if entry[0] == "finished"] == [
        ("finished", AnoleBackend, TaskResultStatus.FAILED, True)
    ]
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value  # noqa: B018 - Django raises for a failed task
    assert result.is_finished is True
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at is not None
    assert result.errors[0].exception_class is exception
    assert result.errors[0].traceback.endswith(f"{exception.__name__}: {message}\n")
    assert (result.task, result.args, result.kwargs) == (task, [], {})


def test_complex_exception(backend, anole_jobs, signals):
    result = tasks.complex_exception.enqueue()
    assert drain() == {"dead": 1}
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is ValueError
    assert 'ValueError(ValueError("This task failed"))' in result.errors[0].traceback
    assert [entry[0] for entry in signals] == ["enqueued", "started", "finished"]


def test_a_keyboard_interrupt_fails_the_attempt_without_task_finished(backend, anole_jobs, signals):
    """Django's backends let a task's `KeyboardInterrupt` through (it stops the process); a
    worker fails the attempt instead and runs on. No `task_finished`: on `jobs.step()` a real
    Ctrl-C arrives the same way and gives the job back, so the task cannot tell it ended."""
    result = tasks.interrupts.enqueue()
    assert drain() == {"dead": 1}
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class is KeyboardInterrupt
    assert [entry[0] for entry in signals] == ["enqueued", "started"]


def test_enqueue_without_the_app_is_refused_as_e014_says(settings):
    backend = AnoleBackend("default", {"QUEUES": ["default"]})
    without = [app for app in settings.INSTALLED_APPS if app != "anole_jobs"]
    with override_settings(INSTALLED_APPS=without), pytest.raises(ImproperlyConfigured) as raised:
        backend.enqueue(tasks.add, [1, 2], {})
    assert "'anole_jobs' is not in INSTALLED_APPS" in str(raised.value)
    assert "add 'anole_jobs' to INSTALLED_APPS" in str(raised.value)


CHECK_SETTINGS = """\
from tests.settings import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "django_tasks"]  # noqa: F405
TASKS = {{"default": {{"BACKEND": {backend!r}, "QUEUES": ["default", "not-configured"]}}}}
"""


@pytest.mark.parametrize(
    "backend_path",
    ["anole_jobs.tasks.AnoleBackend", "tests.sampleapp.task_backends.ProjectBackend"],
)
def test_plain_manage_py_check_runs_the_backends_check(tmp_path, backend_path):
    """Nothing else imports the tasks framework here (no backport app, no @task module): the
    app's ready() still gets the framework's check registered, so W101 (and E014) show."""
    (tmp_path / "check_settings.py").write_text(CHECK_SETTINGS.format(backend=backend_path))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]),
        "DJANGO_SETTINGS_MODULE": "check_settings",
    }
    # `manage.py check`, then whether a worker of that project would run tasks.
    code = (
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('check'); from anole_jobs.kinds import registry; "
        "print('task handler:', registry.handler('django.tasks') is not None)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert "anole_jobs.W101" in result.stderr, result.stderr + result.stdout
    assert "'not-configured'" in result.stderr
    assert "task handler: True" in result.stdout


# -- from Django's tests/tasks/test_tasks.py: what a backend that keeps results must do.


def test_refresh_right_after_enqueue_changes_nothing(backend, anole_jobs):
    result = tasks.add.enqueue(1, 2)
    before = dataclasses.asdict(result)
    result.refresh()
    assert dataclasses.asdict(result) == before
    async_to_sync(result.arefresh)()
    assert dataclasses.asdict(result) == before


def test_get_result_through_another_task_is_a_mismatch(backend, anole_jobs):
    result = tasks.async_double.enqueue(2)
    assert tasks.async_double.get_result(result.id) == result
    with pytest.raises(TaskResultMismatch, match="Task does not match"):
        tasks.add.get_result(result.id)


@pytest.mark.skipif(
    FRAMEWORK != "django.tasks",
    reason="the backport's Task does not pickle (Django 6 gave Task a __reduce__)",
)
def test_a_result_pickles(backend, anole_jobs):
    result = tasks.add.enqueue(1, 2)
    drain()
    result.refresh()
    assert pickle.loads(pickle.dumps(result)) == result
