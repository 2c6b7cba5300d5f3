"""The job kind ``django.tasks``: one call of a Django `@task` function, and its handler (R39).

A job holds the task's module path, the call's JSON arguments, the backend alias and the
per-task options. The handler finds the function from the path — importing only modules of
installed apps (or already imported), and running only an object that *is* a `Task` whose
path is the one stored — never an arbitrary name from a payload (R3).

It sends `task_started` before the call and `task_finished` when the task is finished:
after a success, or from inside the ``except`` block of the last attempt's failure (so
receivers can read `sys.exc_info()`, as Django's own do). A failure with attempts left is
not the end of the task: its result reads READY until the retry runs.
"""

from __future__ import annotations

import importlib
import logging
import sys
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps

from anole_jobs.api import jobs
from anole_jobs.errors import InvalidJob
from anole_jobs.job import Job
from anole_jobs.kinds import kind, set_job_options
from anole_jobs.tasks import compat

logger = logging.getLogger("anole_jobs.tasks")

TASK_KIND = "django.tasks"
#: `TaskResult.worker_ids` has one entry per attempt (Django counts attempts by it); the jobs
#: store does not keep which worker ran each attempt.
WORKER_ID = "anole_jobs"


@kind(TASK_KIND)
@dataclass
class TaskCall:
    """The arguments of a ``django.tasks`` job."""

    task: str  # the Task's module path, e.g. "myapp.tasks.send_report"
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    backend: str = "default"  # the TASKS alias it was enqueued through
    attempts: int | None = None  # None: the kind's default
    timeout: float | None = None  # seconds; None: the kind's default


def _attempts_of(args: Any) -> int | None:
    value = args.get("attempts")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _timeout_of(args: Any) -> timedelta | None:
    value = args.get("timeout")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return timedelta(seconds=value)
    return None


set_job_options(TaskCall, attempts_of=_attempts_of, timeout_of=_timeout_of)


class TaskNotFound(LookupError):
    """The stored module path names no `Task` this process can run."""


class NotATask(TaskNotFound):
    """The stored path can never name a runnable `Task` (the job is discarded)."""


def _importable(module_name: str) -> bool:
    """Modules of installed apps, or already imported ones: nothing else is imported."""
    if module_name in sys.modules:
        return True
    return any(
        module_name == config.name or module_name.startswith(config.name + ".")
        for config in apps.get_app_configs()
    )


def resolve_task(path: object) -> Any:
    """The `Task` whose module path is `path`; `TaskNotFound` when there is none."""
    if not isinstance(path, str):
        raise NotATask(f"a task path is a string, got {path!r}")
    module_name, _, name = path.rpartition(".")
    if not module_name or not name.isidentifier():
        raise NotATask(f"{path!r} is not a module path like 'myapp.tasks.send_report'")
    if not _importable(module_name):
        raise NotATask(
            f"{path!r}: module {module_name!r} is not part of an installed app; define tasks "
            "in an installed app's modules"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TaskNotFound(f"{path!r}: cannot import {module_name!r} ({exc})") from exc
    task = getattr(module, name, None)
    if not isinstance(task, compat.Task) or task.module_path != path:
        raise NotATask(
            f"{path!r} is not a task: only module-level functions decorated with @task run"
        )
    return task


def task_error(exc: BaseException) -> Any:
    error_type = type(exc)
    return compat.TaskError(
        exception_class_path=f"{error_type.__module__}.{error_type.__qualname__}",
        traceback="".join(traceback.format_exception(exc)),
    )


def make_result(
    task: Any,
    *,
    job_id: int,
    status: Any,
    call: TaskCall,
    enqueued_at: datetime | None,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    attempts: int = 0,
    errors: list[Any] | None = None,
) -> Any:
    return compat.TaskResult(
        task=task,
        id=str(job_id),
        status=status,
        enqueued_at=enqueued_at,
        started_at=started_at,
        finished_at=finished_at,
        last_attempted_at=started_at,
        args=list(call.args),
        kwargs=dict(call.kwargs),
        backend=call.backend,
        errors=list(errors or []),
        worker_ids=[WORKER_ID] * attempts,
    )


def json_output(value: Any) -> tuple[bool, Any]:
    """(True, the JSON form of `value`) or (False, None) when it is not JSON."""
    try:
        return True, compat.normalize_json(value)
    except (TypeError, ValueError):
        return False, None


def _set(result: Any, **values: Any) -> None:
    # TaskResult is frozen; Django's own backends update it the same way.
    for name, value in values.items():
        object.__setattr__(result, name, value)


@jobs.handler(TaskCall)
def run_task(job: Job, call: TaskCall) -> None:
    try:
        task = resolve_task(call.task)
    except NotATask as exc:
        job.discard(str(exc))
    # (A TaskNotFound is a failed attempt: a worker that misses the module during a deploy
    # may have it on a retry.)
    sender = type(compat.task_backends[call.backend])
    clock = jobs.service.clock
    result = make_result(
        task,
        job_id=job.id,
        status=compat.TaskResultStatus.RUNNING,
        call=call,
        enqueued_at=job.created_at,
        started_at=clock(),
        attempts=job.attempt,
    )
    compat.task_started.send(sender=sender, task_result=result)
    try:
        if task.takes_context:
            value = task.call(compat.TaskContext(task_result=result), *call.args, **call.kwargs)
        else:
            value = task.call(*call.args, **call.kwargs)
    except Exception as exc:
        if job.attempt >= job.max_attempts:
            result.errors.append(task_error(exc))
            _set(result, status=compat.TaskResultStatus.FAILED, finished_at=clock())
            compat.task_finished.send(sender=sender, task_result=result)
        raise
    is_json, output = json_output(value)
    if is_json and output is not None:
        try:
            job.record_output(output)
        except InvalidJob:
            is_json = False  # JSON to Django, not to the store (a NUL in a string, say)
    if not is_json:
        logger.info(
            "task %s (job %s) returned a %s, which is not JSON: its return value is not kept",
            call.task,
            job.id,
            type(value).__name__,
        )
    _set(
        result,
        status=compat.TaskResultStatus.SUCCESSFUL,
        finished_at=clock(),
        _return_value=output,
    )
    compat.task_finished.send(sender=sender, task_result=result)
