"""How surfaces name a job's kind to people.

A ``django.tasks`` job is one call of a Django ``@task`` function, so its kind alone says
nothing about what runs: its display kind adds the function's path, stored in the job's
arguments (``django.tasks: myapp.tasks.send_report``). Every other kind is shown as it is.
The kind itself never changes (filters match it exactly); surfaces show `display_kind` beside
or instead of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anole_jobs.core import TASK_KIND


def display_kind(kind: str, args: Mapping[str, Any] | Any) -> str:
    """`kind` as people read it: for a ``django.tasks`` job, with its task's path."""
    if kind == TASK_KIND and isinstance(args, Mapping):
        task = args.get("task")
        if isinstance(task, str) and task:
            return f"{TASK_KIND}: {task}"
    return kind
