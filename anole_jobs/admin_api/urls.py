"""The admin routes' URLconf, built from `routes.ROUTES` (the OpenAPI document is built from
the same list). `anole_jobs.urls` re-exports it: mount it with
``path("ops/jobs/", include("anole_jobs.urls"))``.

Queue and cron names use the ``anole_name`` converter of `anole_jobs.operations.names` (any
character the store accepts, ``/`` included). `fallback` answers every other path under the
mount with a 404 JSON; keep it last.
"""

from __future__ import annotations

from django.urls import URLPattern, path, re_path

from anole_jobs.admin_api import views
from anole_jobs.admin_api.routes import FALLBACK, ROUTES
from anole_jobs.operations import names  # noqa: F401 - registers the name converter

urlpatterns: list[URLPattern] = [
    path(route.path, views.endpoint(route), name=route.name) for route in ROUTES
]
fallback: list[URLPattern] = [re_path(r"^(?P<rest>[\s\S]*)\Z", views.not_found, name=FALLBACK)]
