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
    """With ``TASKS`` configured, load each backend's class: an `AnoleBackend` (or a subclass
    under any path) brings the ``django.tasks`` kind's handler, so a worker runs tasks even if
    nothing in it ever enqueues one, and the tasks framework's own system check (which asks
    every backend, so reports anole_jobs.E014 and W101) is registered whatever else the
    project imports: Django 6 registers it only once something imports ``django.tasks``.
    Raises nothing: a backend that cannot be loaded is the framework's to report."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    backends = getattr(settings, "TASKS", None)
    if not isinstance(backends, dict):
        return
    for params in backends.values():
        path = params.get("BACKEND") if isinstance(params, dict) else None
        if not isinstance(path, str):
            continue
        with contextlib.suppress(Exception):  # noqa: BLE001 - reported by the checks instead
            backend_class = import_string(path)
            if _is_anole_backend(backend_class):
                import_module("anole_jobs.tasks.calls")


def _is_anole_backend(backend_class: object) -> bool:
    from anole_jobs.tasks.backend import AnoleBackend

    return isinstance(backend_class, type) and issubclass(backend_class, AnoleBackend)
