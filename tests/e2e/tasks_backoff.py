"""An app for the end-to-end tasks settings: retry ``django.tasks`` jobs after 0.2 s rather
than the default backoff (15 s for a first retry), so a test's retry rounds take well under a
second. Applied in `ready()`, before `runjobs` claims anything."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from django.apps import AppConfig

RETRY_AFTER = timedelta(seconds=0.2)


class TasksBackoffConfig(AppConfig):
    name = "tests.e2e.tasks_backoff"
    label = "e2e_tasks_backoff"

    def ready(self) -> None:
        from anole_jobs.kinds import KIND_ATTRIBUTE, registry
        from anole_jobs.tasks.calls import TaskCall, run_task

        spec = dataclasses.replace(
            getattr(TaskCall, KIND_ATTRIBUTE), backoff=lambda attempt: RETRY_AFTER
        )
        registry.add_kind(spec)
        setattr(TaskCall, KIND_ATTRIBUTE, spec)
        registry.add_handler(spec, run_task)
