"""``include("anole_jobs.urls")``: the operator's JSON routes (docs/admin.md) and the
dashboard pages under ``dashboard/`` (docs/dashboard.md)."""

from __future__ import annotations

from django.urls import include, path

from anole_jobs.admin_api import urls as admin_api_urls

app_name = "anole_jobs"

urlpatterns = [
    *admin_api_urls.urlpatterns,
    path("dashboard/", include("anole_jobs.dashboard.urls")),
    # Last: any other path under the mount answers a 404 JSON.
    *admin_api_urls.fallback,
]
