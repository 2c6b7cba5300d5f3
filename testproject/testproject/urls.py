"""URLs of the test project.

The jobs admin API (`anole_jobs.urls`) is mounted at /ops/jobs/ when the installed
anole_jobs provides it. /metrics serves the jobs' Prometheus metrics (put it behind your own
protection in a real project, or serve it from `runjobs --metrics-port` instead).
"""

from __future__ import annotations

from importlib.util import find_spec

from django.urls import URLPattern, URLResolver, include, path
from signups import views

import anole_jobs.views

urlpatterns: list[URLPattern | URLResolver] = [
    path("signup", views.signup, name="signup"),
    path("metrics", anole_jobs.views.metrics, name="metrics"),
]

if find_spec("anole_jobs.urls") is not None:
    urlpatterns.append(path("ops/jobs/", include("anole_jobs.urls")))
