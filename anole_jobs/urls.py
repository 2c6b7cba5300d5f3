"""``include("anole_jobs.urls")``: the operator's JSON routes (docs/admin.md) and the
dashboard pages under ``dashboard/`` (docs/dashboard.md)."""

from __future__ import annotations

from django.urls import include, path, re_path

from anole_jobs.admin_api import urls as admin_api_urls
from anole_jobs.dashboard import fallback as dashboard_fallback

app_name = "anole_jobs"

urlpatterns = [
    *admin_api_urls.urlpatterns,
    path("dashboard/", include("anole_jobs.dashboard.urls")),
    # The mount root and any other path of the dashboard: a redirect or an HTML 404 page.
    path("", dashboard_fallback.mount_root, name="root"),
    re_path(
        r"^dashboard(?:/[\s\S]*)?\Z", dashboard_fallback.not_found, name=dashboard_fallback.NAME
    ),
    # Last: any other path under the mount answers a 404 JSON.
    *admin_api_urls.fallback,
]
