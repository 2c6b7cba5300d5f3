"""The bench project's URLs: the admin routes and the dashboard (the stats scenario renders
them, which reverses their URLs)."""

from django.urls import include, path

urlpatterns = [path("jobs/", include("anole_jobs.urls"))]
