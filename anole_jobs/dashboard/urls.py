"""The dashboard's routes, included under ``dashboard/`` by `anole_jobs.urls`."""

from __future__ import annotations

from django.urls import path

from anole_jobs.dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.queues, name="queues"),
    path("queues/<str:name>/pause", views.pause, name="pause"),
    path("queues/<str:name>/resume", views.resume, name="resume"),
    path("jobs/", views.job_list, name="jobs"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/retry", views.retry, name="retry"),
    path("jobs/<int:job_id>/cancel", views.cancel, name="cancel"),
    path("jobs/<int:job_id>/delete", views.delete, name="delete"),
    path("cron/", views.cron, name="cron"),
    path("cron/<str:name>/trigger", views.cron_trigger, name="cron_trigger"),
]
