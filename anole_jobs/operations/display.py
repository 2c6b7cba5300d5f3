"""How surfaces name a job's kind to people.

A ``django.tasks`` job is one call of a Django ``@task`` function, so its kind alone says
nothing about what runs: its display kind adds the function's path, stored in the job's
arguments (``django.tasks: myapp.tasks.send_report``). Every other kind is shown as it is.
The kind itself never changes (filters match it exactly); surfaces show `display_kind` beside
or instead of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from anole_jobs.core import TASK_KIND, JobRecord
from anole_jobs.encryption import SHOWN, is_sealed


def display_kind(kind: str, args: Mapping[str, Any] | Any) -> str:
    """`kind` as people read it: for a ``django.tasks`` job, with its task's path."""
    if kind == TASK_KIND and isinstance(args, Mapping):
        task = args.get("task")
        if isinstance(task, str) and task:
            return f"{TASK_KIND}: {task}"
    return kind


def for_operators(record: JobRecord) -> JobRecord:
    """`record` as operator surfaces show it: the args, result and step results of a job
    stored encrypted (docs/encryption.md) as ``{"encrypted": true}``, whether or not this
    process has the keys (the other fields are not encrypted)."""
    sealed_steps = any(is_sealed(step.get("result")) for step in record.steps.values())
    if not (record.encrypted or is_sealed(record.args) or is_sealed(record.result) or sealed_steps):
        return record
    return replace(
        record,
        args=dict(SHOWN),
        result=None if record.result is None else dict(SHOWN),
        # The steps' results are the kind's data too (stored encrypted with it).
        steps={name: {**step, "result": dict(SHOWN)} for name, step in record.steps.items()},
        encrypted=True,
    )
