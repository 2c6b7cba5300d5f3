"""The Django app: `ready()` autodiscovers each installed app's `jobs` module (like admin.py),
registers the system checks, and starts no thread and raises nothing."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class AnoleJobsConfig(AppConfig):
    name = "anole_jobs"
    label = "anole_jobs"
    verbose_name = "Jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from anole_jobs import checks  # noqa: F401 - registers the system checks

        autodiscover_modules("jobs")
