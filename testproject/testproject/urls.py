"""URLs of the test project.

- ``/signup``: the demo's view, which enqueues a welcome email.
- ``/ops/jobs/``: the jobs admin routes (JSON, OpenAPI at ``/ops/jobs/openapi.json``), for
  active staff users (``ANOLE_JOBS["ADMIN_PERMISSION"]`` changes who).
- ``/admin/``: the Django admin, with the jobs table.
"""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from signups import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("signup", views.signup, name="signup"),
    path("ops/jobs/", include("anole_jobs.urls")),
    path("admin/", admin.site.urls),
]
