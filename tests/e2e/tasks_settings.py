"""The end-to-end settings plus the django.tasks backend: `runjobs` runs `@task`
functions of tests/sampleapp/tasks.py that a test enqueued through `AnoleBackend`, retried
after 0.2 s (tests/e2e/tasks_backoff.py)."""

import django

from tests.e2e.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.e2e.tasks_backoff.TasksBackoffConfig"]  # noqa: F405
if django.VERSION < (6,):
    INSTALLED_APPS.append("django_tasks")
TASKS = {"default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "QUEUES": ["default", "mail"]}}
