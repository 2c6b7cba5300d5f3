"""The admin routes' URLconf, built from `routes.ROUTES` (the OpenAPI document is built from
the same list). `anole_jobs.urls` re-exports it: mount it with
``path("ops/jobs/", include("anole_jobs.urls"))``.

`fallback` answers every other path under the mount with a 404 JSON; keep it last.
"""

from __future__ import annotations

from django.urls import URLPattern, path, re_path, register_converter

from anole_jobs.admin_api import views
from anole_jobs.admin_api.routes import FALLBACK, NAME_CONVERTER, ROUTES


class AnyName:
    """A queue or cron name: any characters, slashes and newlines included (Django's `path`
    converter stops at a newline)."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(AnyName, NAME_CONVERTER)

urlpatterns: list[URLPattern] = [
    path(route.path, views.endpoint(route), name=route.name) for route in ROUTES
]
fallback: list[URLPattern] = [re_path(r"^(?P<rest>[\s\S]*)\Z", views.not_found, name=FALLBACK)]
