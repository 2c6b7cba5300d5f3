"""``path("ops/jobs/", include("anole_jobs.urls"))``: the admin routes (R31, R41)."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [
    path("dashboard/", include("anole_jobs.dashboard.urls")),
]
