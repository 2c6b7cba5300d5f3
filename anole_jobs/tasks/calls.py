"""The job kind ``django.tasks``: one call of a Django `@task` function, and its handler.

A job holds the task's module path, the call's JSON arguments, the backend alias and the
per-task options. The handler finds the function from the path — importing only modules of
installed apps (or already imported), and running only an object that *is* a `Task` whose
path is the one stored — never an arbitrary name from a payload: a job's arguments never
choose code to run.

It sends `task_started` before the call and `task_finished` when the task is finished:
after a success, or from inside the ``except`` block of the last attempt's failure (so
receivers can read `sys.exc_info()`, as Django's own do) — a failure by any exception the
runtime counts as one, `SystemExit` included, but not `KeyboardInterrupt` (a real Ctrl-C on
`jobs.step()` arrives as one and gives the job back). A failure with attempts left is
not the end of the task: its result reads READY until the retry runs. The return value is
the job's result (docs/results.md), stored by the write that completes the job; one that is
not JSON fails the attempt with `TypeError`, as Django's own backends fail the task, and one
over ``MAX_RESULT_BYTES`` with `ResultTooLarge` — both before `task_finished` reports a
success.
"""

from __future__ import annotations

import importlib
import logging
import sys
import traceback
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.apps import apps

from anole_jobs.api import jobs
from anole_jobs.core import TASK_KIND
from anole_jobs.errors import Canceled, ControlFlow, InvalidJob
from anole_jobs.job import Job
from anole_jobs.kinds import kind, set_job_options
from anole_jobs.records import encode_result
from anole_jobs.tasks import compat
from anole_jobs.tasks.results import (
    META_KEY,
    WORKER_ID,
    first_started_at,
    task_as_enqueued,
    with_started_at,
)

logger = logging.getLogger("anole_jobs.tasks")


class TaskArgumentsNotJSON(InvalidJob, TypeError):  # noqa: N818 - reads as what went wrong
    """A task's arguments are not JSON values. A `TypeError`, as Django's tasks framework
    documents for arguments it cannot serialise, and an `InvalidJob`, as anole_jobs raises
    for any job it cannot enqueue."""


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


def exception_error(exc: BaseException) -> Any:
    error_type = type(exc)
    return compat.TaskError(
        exception_class_path=f"{error_type.__module__}.{error_type.__qualname__}",
        traceback="".join(traceback.format_exception(exc)),
    )


def json_return_value(task_path: str, value: Any) -> Any:
    """`value` as JSON; `TypeError` (which fails the attempt) when it is not JSON."""
    try:
        return compat.normalize_json(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"task {task_path} returned a {type(value).__name__}, which is not a JSON value "
            f"({exc}); return ids, strings, numbers, lists or dicts"
        ) from None


def _set(result: Any, **values: Any) -> None:
    # TaskResult is frozen; Django's own backends update it the same way.
    for name, value in values.items():
        object.__setattr__(result, name, value)


def _keep_first_start(job: Job, started_at: Any) -> None:
    """Record this attempt's start as the task's first, unless an earlier one is kept."""
    if first_started_at(job.meta) is not None:
        return
    try:
        job.record_meta(META_KEY, with_started_at(job.meta, started_at))
    except (Exception, Canceled) as exc:  # noqa: BLE001 - the attempt's own outcome matters more
        logger.warning(
            "job %s: could not keep its first attempt's start (%s: %s); its TaskResult shows "
            "a later attempt's start",
            job.id,
            type(exc).__name__,
            exc,
        )


@jobs.handler(TaskCall)
def run_task(job: Job, call: TaskCall) -> Any:
    try:
        task = task_as_enqueued(resolve_task(call.task), job.meta)
    except NotATask as exc:
        job.discard(str(exc))
    # (A TaskNotFound is a failed attempt: a worker that misses the module during a deploy
    # may have it on a retry.)
    sender = type(compat.task_backends[call.backend])
    clock = jobs.now
    started_at = clock()
    # What the task and the signals see while it runs: this attempt counts (the context's
    # `attempt` starts at 1), as in Django's own backends.
    result = compat.TaskResult(
        task=task,
        id=str(job.id),
        status=compat.TaskResultStatus.RUNNING,
        enqueued_at=job.created_at,
        started_at=first_started_at(job.meta) or started_at,
        finished_at=None,
        last_attempted_at=started_at,
        args=list(call.args),
        kwargs=dict(call.kwargs),
        backend=call.backend,
        errors=[],
        worker_ids=[WORKER_ID] * job.attempt,
    )
    compat.task_started.send(sender=sender, task_result=result)
    try:
        if task.takes_context:
            value = task.call(compat.TaskContext(task_result=result), *call.args, **call.kwargs)
        else:
            value = task.call(*call.args, **call.kwargs)
        output = json_return_value(call.task, value)
        # What the runtime will store, checked here so a value it refuses fails the attempt
        # before the signals call it a success (JSON to Django may still be refused by the
        # store: a NUL in a string, a result over MAX_RESULT_BYTES).
        encode_result(
            output,
            limit=jobs.settings.max_result_bytes,
            where=f"task {call.task}",
        )
    except (Canceled, ControlFlow, KeyboardInterrupt):
        # A timeout, a cancellation or a decision (snooze, discard, retry-in) is the
        # runtime's to settle; a KeyboardInterrupt may be a real Ctrl-C on `jobs.step()`,
        # which gives the job back instead of failing it. The attempt still started.
        _keep_first_start(job, started_at)
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit and the like fail like errors
        # The runtime fails the attempt for any other exception (`SystemExit`,
        # `GeneratorExit`, a user's own `BaseException`), so the last one ends the task:
        # Django's backends send `task_finished` for these too.
        _keep_first_start(job, started_at)
        if job.attempt >= job.max_attempts:
            result.errors.append(exception_error(exc))
            _set(result, status=compat.TaskResultStatus.FAILED, finished_at=clock())
            compat.task_finished.send(sender=sender, task_result=result)
        raise
    _set(
        result,
        status=compat.TaskResultStatus.SUCCESSFUL,
        finished_at=clock(),
        _return_value=output,
    )
    compat.task_finished.send(sender=sender, task_result=result)
    return output
