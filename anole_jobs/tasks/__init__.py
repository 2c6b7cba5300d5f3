"""Django's tasks framework on anole_jobs (R39): ``"BACKEND": "anole_jobs.tasks.AnoleBackend"``.

Importing this package needs `django.tasks` (Django 6) or the `django-tasks` backport.
"""

from __future__ import annotations

from anole_jobs.tasks.backend import AnoleBackend, AnoleTask
from anole_jobs.tasks.calls import TASK_KIND, TaskCall

__all__ = ["TASK_KIND", "AnoleBackend", "AnoleTask", "TaskCall"]
