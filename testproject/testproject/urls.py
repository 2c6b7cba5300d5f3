"""URLs of the test project.

- ``/signup``: the demo's view, which enqueues a welcome email.
- ``/ops/jobs/``: the jobs admin routes (JSON, OpenAPI at ``/ops/jobs/openapi.json``), for
  active staff users (``ANOLE_JOBS["ADMIN_PERMISSION"]`` changes who).
- ``/admin/``: the Django admin, with the jobs table.
- ``/metrics``: the jobs' Prometheus metrics (put it behind your own protection in a real
  project, or serve it from ``runjobs --metrics-port`` instead).
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import URLPattern, URLResolver, include, path
from signups import views

import anole_jobs.views

urlpatterns: list[URLPattern | URLResolver] = [
    path("signup", views.signup, name="signup"),
    path("metrics", anole_jobs.views.metrics, name="metrics"),
    path("ops/jobs/", include("anole_jobs.urls")),
    path("admin/", admin.site.urls),
]
# The admin's static files while DEBUG is on, whatever server runs the project (runserver
# serves them on its own; gunicorn or the test client do not).
urlpatterns += staticfiles_urlpatterns()
