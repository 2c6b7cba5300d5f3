"""The dashboard's routes, included under ``dashboard/`` by `anole_jobs.urls`.

Job ids are taken as any text and parsed by `anole_jobs.operations.ids` (a malformed or
too-large id is a "no such job" page, not a server error); queue and cron names use the
``anole_name`` converter, which takes any character the store accepts, ``/`` included.
"""

from __future__ import annotations

from django.urls import path

from anole_jobs.dashboard import (
    bulk_views,
    insight_views,
    queue_views,
    stats_page,
    views,
    workers,
    workflow_views,
)
from anole_jobs.operations import names  # noqa: F401 - registers the name converter

app_name = "dashboard"

urlpatterns = [
    path("", views.queues, name="queues"),
    path("live.js", views.live_js, name="live_js"),
    path("queues/<anole_name:name>/pause", views.pause, name="pause"),
    path("queues/<anole_name:name>/resume", views.resume, name="resume"),
    path("queues/<anole_name:name>/limits", queue_views.queue_limits, name="queue_limits"),
    path("queues/<anole_name:name>/", queue_views.queue_detail, name="queue"),
    path("jobs/", views.job_list, name="jobs"),
    path("jobs/<str:job_id>/", views.job_detail, name="job"),
    path("jobs/<str:job_id>/retry", views.retry, name="retry"),
    path("jobs/<str:job_id>/cancel", views.cancel, name="cancel"),
    path("jobs/<str:job_id>/delete", views.delete, name="delete"),
    path("bulk/<str:action>", bulk_views.bulk_action, name="bulk"),
    path("chosen", bulk_views.chosen_action, name="chosen"),
    path("workflows/", workflow_views.workflow_list, name="workflows"),
    path("workflows/<str:workflow_id>/", workflow_views.workflow_detail, name="workflow"),
    path(
        "workflows/<str:workflow_id>/cancel",
        workflow_views.workflow_cancel,
        name="workflow_cancel",
    ),
    path("cron/", views.cron, name="cron"),
    path("stats/", stats_page.stats, name="stats"),
    path("errors/", insight_views.errors, name="errors"),
    path("kinds/", insight_views.kinds, name="kinds"),
    path("workers/", workers.workers, name="workers"),
    path("workers/<path:worker_id>/quiet", workers.worker_quiet, name="worker_quiet"),
    path("workers/<path:worker_id>/stop", workers.worker_stop, name="worker_stop"),
    path("audit/", workers.audit_log, name="audit"),
    path("cron/<anole_name:name>/trigger", views.cron_trigger, name="cron_trigger"),
]
