"""The dashboard's workers page: which worker processes are alive, how busy each is, the jobs
they hold, and the queues with waiting jobs that no worker runs. Live like the queues and jobs
pages (`live.js` fetches its region again with ``?partial=1``); a plain page without scripts.
Thin over `anole_jobs.operations.workers`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from anole_jobs.dashboard.pages import REFRESH_SECONDS, dashboard_view, is_partial, notice_of
from anole_jobs.dashboard.render import render, render_partial
from anole_jobs.operations.workers import overview


@require_GET
@dashboard_view
def workers(request: HttpRequest) -> HttpResponse:
    view = overview()
    context = {
        "title": "Workers",
        "section": "workers",
        "workers": view.workers,
        "busy": view.busy,
        "slots": view.slots,
        "held": view.held,
        "late": sum(1 for status in view.workers if status.late),
        "jobs_held": [
            (job, status.record) for status in view.workers for job in status.record.jobs
        ],
        "more_held": view.held - sum(len(status.record.jobs) for status in view.workers),
        "queues_without_workers": view.queues_without_workers,
        "now": view.now,
        "refresh": REFRESH_SECONDS,
        "notice": notice_of(request),
    }
    if is_partial(request):
        return render_partial(request, "workers_live.html", context)
    return render(request, "workers.html", context)
