"""A ``django.tasks`` job read back as Django's `TaskResult`, and what the job keeps for it.

A job's meta holds, under ``"django_task"``, what the `TaskResult` needs and the job row does
not: the `Task`'s `.using()` overrides (priority, queue_name, run_after, backend), so that
``get_result().task`` is the task that was enqueued, and, once an attempt has failed, the
first attempt's start (``started_at``; the row keeps only the latest attempt's).

States map as Django's contract reads them:

    scheduled, available, retrying -> READY      running -> RUNNING
    completed -> SUCCESSFUL (return value: the job's result)      dead, cancelled -> FAILED

The return value is the job's stored result; a job completed before results were stored
kept it in ``meta["output"]``, which is read when the job has no result.

A running attempt is not counted in ``attempts`` (Django: "if the task is currently running,
it does not count as an attempt").
"""

from __future__ import annotations

import builtins
import dataclasses
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from anole_jobs.core import JobRecord
from anole_jobs.tasks import compat

logger = logging.getLogger("anole_jobs.tasks")

META_KEY = "django_task"
#: `TaskResult.worker_ids` has one entry per attempt (Django counts attempts by it); the jobs
#: store does not keep which worker ran each attempt.
WORKER_ID = "anole_jobs"

STATUS = {
    "pending": "READY",
    "scheduled": "READY",
    "available": "READY",
    "retrying": "READY",
    "running": "RUNNING",
    "completed": "SUCCESSFUL",
    "dead": "FAILED",
    "cancelled": "FAILED",
}

#: The error entries anole_jobs writes itself, as the exception class each stands for.
_OWN_ERRORS = {
    "Timeout": "builtins.TimeoutError",
    "LeaseExpired": "anole_jobs.errors.Canceled",
    "Discarded": "anole_jobs.errors.Discard",
    "RetryIn": "anole_jobs.errors.RetryIn",
    "ResultTooLarge": "anole_jobs.errors.ResultTooLarge",
}


def task_meta(task: Any) -> dict[str, Any]:
    """What the job's meta keeps of `task` (see the module docstring)."""
    run_after = task.run_after
    return {
        "priority": task.priority,
        "queue_name": task.queue_name,
        "run_after": run_after.isoformat() if run_after is not None else None,
        "backend": task.backend,
    }


def first_started_at(meta: Mapping[str, Any]) -> datetime | None:
    """The first attempt's start, once a failed attempt recorded it."""
    kept = meta.get(META_KEY)
    value = kept.get("started_at") if isinstance(kept, Mapping) else None
    return _time(value)


def with_started_at(meta: Mapping[str, Any], started_at: datetime) -> dict[str, Any]:
    """The ``"django_task"`` meta entry with the first attempt's start added."""
    kept = meta.get(META_KEY)
    return {**(kept if isinstance(kept, Mapping) else {}), "started_at": started_at.isoformat()}


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def task_as_enqueued(task: Any, meta: Mapping[str, Any]) -> Any:
    """`task` (the module-level one) with the `.using()` overrides the job's meta keeps."""
    kept = meta.get(META_KEY)
    if not isinstance(kept, Mapping):
        return task
    changes: dict[str, Any] = {}
    priority = kept.get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool):
        changes["priority"] = priority
    for name in ("queue_name", "backend"):
        if isinstance(kept.get(name), str):
            changes[name] = kept[name]
    if "run_after" in kept:
        changes["run_after"] = _time(kept["run_after"])
    if all(getattr(task, name) == value for name, value in changes.items()):
        return task
    try:
        return dataclasses.replace(task, **changes)
    except (compat.InvalidTask, ImproperlyConfigured) as exc:
        # The TASKS setting changed since (a queue or backend removed): the task as declared
        # still reads the result.
        logger.warning(
            "task %s: its enqueue-time options %s are no longer valid (%s); reading its result "
            "with the task's declared options",
            task.module_path,
            changes,
            exc,
        )
        return task


def task_error(entry: Mapping[str, Any]) -> Any:
    """A stored error entry as a `TaskError` whose `exception_class_path` imports."""
    name = str(entry.get("type", ""))
    if "." not in name:
        name = _OWN_ERRORS.get(name) or (f"builtins.{name}" if hasattr(builtins, name) else name)
    return compat.TaskError(
        exception_class_path=name,
        traceback=str(entry.get("traceback") or entry.get("message") or ""),
    )


def task_result(task: Any, record: JobRecord, *, backend: str) -> Any:
    """The `TaskResult` of the ``django.tasks`` job `record`, for `task` as enqueued."""
    status = getattr(compat.TaskResultStatus, STATUS[record.state])
    attempts = record.attempt - 1 if record.state == "running" else record.attempt
    args = record.args
    result = compat.TaskResult(
        task=task,
        id=str(record.id),
        status=status,
        enqueued_at=record.created_at,
        started_at=first_started_at(record.meta) or record.attempted_at,
        finished_at=record.finished_at,
        last_attempted_at=record.attempted_at,
        args=list(args.get("args") or []),
        kwargs=dict(args.get("kwargs") or {}),
        backend=backend,
        errors=[task_error(entry) for entry in record.errors],
        worker_ids=[WORKER_ID] * max(attempts, 0),
    )
    if record.state == "completed":
        value = record.result
        if value is None:
            value = record.meta.get("output")  # kept there by earlier versions
        # TaskResult is frozen; Django's own backends set the return value the same way.
        object.__setattr__(result, "_return_value", value)
    return result
