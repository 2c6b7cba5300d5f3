"""``include("anole_jobs.urls")``: the operator's JSON routes (see docs/admin.md)."""

from __future__ import annotations

from anole_jobs.admin_api import urls as admin_api_urls

app_name = "anole_jobs"

urlpatterns = [
    *admin_api_urls.urlpatterns,
    # Last: any other path under the mount answers a 404 JSON.
    *admin_api_urls.fallback,
]
