"""Where Django's tasks framework lives: `django.tasks` on Django 6, else the `django-tasks`
backport (the `tasks` extra: ``pip install "/path/to/anole_jobs[tasks]"``). Everything else in
this package imports the framework from here, so the two differ in one place only.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.core.exceptions import ImproperlyConfigured


def _framework() -> tuple[str, Any]:
    try:
        return "django.tasks", importlib.import_module("django.tasks")
    except ImportError:
        pass
    try:
        return "django_tasks", importlib.import_module("django_tasks")
    except ImportError:
        raise ImproperlyConfigured(
            "anole_jobs.tasks.AnoleBackend needs Django's tasks framework: Django 6 has it "
            "built in; on Django 5.2 install the backport (the tasks extra: pip install "
            '"/path/to/anole_jobs[tasks]") and add "django_tasks" to INSTALLED_APPS'
        ) from None


FRAMEWORK, _tasks = _framework()
_base: Any = importlib.import_module(f"{FRAMEWORK}.base")
_backends: Any = importlib.import_module(f"{FRAMEWORK}.backends.base")
_exceptions: Any = importlib.import_module(f"{FRAMEWORK}.exceptions")
_signals: Any = importlib.import_module(f"{FRAMEWORK}.signals")
# The framework's system check runs every backend's `check()` (anole_jobs.E014, W101). The
# backport registers it only from its app's ready(), Django 6 when `django.tasks` is first
# imported: importing it here registers it whenever anole_jobs' backend is loaded.
importlib.import_module(f"{FRAMEWORK}.checks")

BaseTaskBackend: Any = _backends.BaseTaskBackend
Task: Any = _base.Task
TaskResult: Any = _base.TaskResult
TaskResultStatus: Any = _base.TaskResultStatus
TaskContext: Any = _base.TaskContext
TaskError: Any = _base.TaskError
TASK_MIN_PRIORITY: int = _base.TASK_MIN_PRIORITY
TASK_MAX_PRIORITY: int = _base.TASK_MAX_PRIORITY
task_backends: Any = _tasks.task_backends
# The backport renamed nothing but its exceptions' suffix.
InvalidTask: Any = getattr(_exceptions, "InvalidTask", None) or _exceptions.InvalidTaskError
TaskResultDoesNotExist: Any = _exceptions.TaskResultDoesNotExist
TaskResultMismatch: Any = _exceptions.TaskResultMismatch
task_enqueued: Any = _signals.task_enqueued
task_started: Any = _signals.task_started
task_finished: Any = _signals.task_finished

try:
    _json_utils: Any = importlib.import_module("django.utils.json")  # Django 6
except ImportError:  # Django 5.2: the backport ships it
    _json_utils = importlib.import_module("django_tasks.utils")
normalize_json: Any = _json_utils.normalize_json
