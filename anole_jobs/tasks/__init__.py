"""Django's tasks framework on anole_jobs: ``"BACKEND": "anole_jobs.tasks.AnoleBackend"``
(docs/tasks.md).

Importing this package needs `django.tasks` (Django 6) or the `django-tasks` backport.
"""

from __future__ import annotations

from anole_jobs.tasks.backend import AnoleBackend, AnoleTask
from anole_jobs.tasks.calls import TASK_KIND, TaskArgumentsNotJSON, TaskCall

__all__ = ["TASK_KIND", "AnoleBackend", "AnoleTask", "TaskArgumentsNotJSON", "TaskCall"]
