"""The Django app: `ready()` autodiscovers each installed app's `jobs` module (like admin.py),
registers the system checks, the metrics (so a project's /metrics shows them from the start)
and, with the django.tasks backend configured, its job kind; it starts no thread, connects to
nothing and raises nothing."""

from __future__ import annotations

import contextlib
from importlib import import_module

from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import autodiscover_modules


class AnoleJobsConfig(AppConfig):
    name = "anole_jobs"
    label = "anole_jobs"
    verbose_name = "Jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from anole_jobs import checks  # noqa: F401 - registers the system checks

        autodiscover_modules("jobs")
        _register_task_kind()
        _register_metrics()


def _register_metrics() -> None:
    """Put the metrics in their registry now, not at the first job, so a web process that
    serves prometheus-client's registry shows them before anything is enqueued. Raises
    nothing: bad settings are the system checks' to report."""
    from anole_jobs import conf, metrics

    with contextlib.suppress(ImproperlyConfigured):
        metrics.register(conf.read_settings())


def _register_task_kind() -> None:
    """With `AnoleBackend` in ``TASKS``, register the ``django.tasks`` kind's handler, so a
    worker runs tasks even if nothing in it ever enqueues one. Raises nothing: a missing
    tasks framework is reported when the backend is used."""
    from django.conf import settings

    backends = getattr(settings, "TASKS", None)
    if not isinstance(backends, dict):
        return
    if not any(
        isinstance(params, dict) and str(params.get("BACKEND", "")).startswith("anole_jobs.")
        for params in backends.values()
    ):
        return
    with contextlib.suppress(ImproperlyConfigured):
        import_module("anole_jobs.tasks.calls")
