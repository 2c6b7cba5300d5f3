from importlib.util import find_spec

from django.contrib import admin
from django.urls import include, path

urlpatterns = [path("admin/", admin.site.urls)]
if find_spec("anole_jobs.urls") is not None:
    urlpatterns.append(path("ops/jobs/", include("anole_jobs.urls")))
