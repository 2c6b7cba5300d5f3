"""URLs of the test project.

The jobs admin API (`anole_jobs.urls`) is mounted at /ops/jobs/ when the installed
anole_jobs provides it.
"""

from __future__ import annotations

from importlib.util import find_spec

from django.urls import URLPattern, URLResolver, include, path
from signups import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("signup", views.signup, name="signup"),
]

if find_spec("anole_jobs.urls") is not None:
    urlpatterns.append(path("ops/jobs/", include("anole_jobs.urls")))
