"""The dashboard's workers page: which worker processes are alive, how busy each is, the jobs
they hold, and the queues with waiting jobs that no worker runs. Live like the queues and jobs
pages (`live.js` fetches its region again with ``?partial=1``); a plain page without scripts.
Thin over `anole_jobs.operations.workers`."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_http_methods

from anole_jobs.dashboard.pages import (
    REFRESH_SECONDS,
    confirm_page,
    dashboard_view,
    is_partial,
    notice_of,
    page_url,
    redirect,
)
from anole_jobs.dashboard.render import render, render_partial
from anole_jobs.operations import audit
from anole_jobs.operations.problems import NotFound
from anole_jobs.operations.workers import control, overview

#: What each control asks, for its confirmation page: (question, explanation, button).
CONTROLS = {
    "quiet": (
        "Quiet worker {name}?",
        "Within a second it claims nothing more: jobs it claimed ahead go back for other "
        "workers, and its running jobs finish. It stays up until it is stopped.",
        "Quiet the worker",
    ),
    "stop": (
        "Stop worker {name}?",
        "Within a second it drains and exits, as on SIGTERM: it claims nothing more, waits "
        "for its running jobs up to each queue's drain_timeout, then exits. A service "
        "manager or supervisor may start it again.",
        "Stop the worker",
    ),
}


def _worker_control(request: HttpRequest, worker_id: str, action: str) -> HttpResponse:
    if request.method != "POST":
        record = next((s.record for s in overview().workers if s.record.id == worker_id), None)
        if record is None:
            raise NotFound(f"no live worker with id {worker_id!r}", code="unknown_worker")
        question, explanation, button = CONTROLS[action]
        return confirm_page(
            request,
            question=question.format(name=f"{record.host} · pid {record.pid}"),
            explanation=[explanation, f"Worker id: {record.id}."],
            button=button,
            danger=action == "stop",
            back=page_url("workers"),
            back_label="Back to the workers",
            section="workers",
        )
    control(worker_id, action)
    return redirect(request, "workers", notice=f"worker_{action}")


@require_http_methods(["GET", "HEAD", "POST"])
@dashboard_view
def worker_quiet(request: HttpRequest, worker_id: str) -> HttpResponse:
    return _worker_control(request, worker_id, "quiet")


@require_http_methods(["GET", "HEAD", "POST"])
@dashboard_view
def worker_stop(request: HttpRequest, worker_id: str) -> HttpResponse:
    return _worker_control(request, worker_id, "stop")


#: Entries the audit page shows per page.
AUDIT_PAGE = 100
#: The actions the audit page's filter offers.
AUDIT_ACTIONS = (
    "retry",
    "cancel",
    "delete",
    "signal",
    "trigger",
    "pause",
    "resume",
    "limits",
    "cancel_workflow",
    "bulk_retry",
    "bulk_cancel",
    "bulk_delete",
    "worker_quiet",
    "worker_stop",
)


@require_GET
@dashboard_view
def audit_log(request: HttpRequest) -> HttpResponse:
    action = request.GET.get("action") or None
    if action is not None and action not in AUDIT_ACTIONS:
        action = None
    before_text = request.GET.get("before", "")
    before = int(before_text) if before_text.isdigit() and len(before_text) < 19 else None
    entries = audit.entries(action=action, limit=AUDIT_PAGE, before=before)
    view = overview()
    return render(
        request,
        "audit.html",
        {
            "title": "Audit",
            "section": "audit",
            "entries": entries,
            "action": action or "",
            "actions": AUDIT_ACTIONS,
            "next_before": entries[-1].id if len(entries) == AUDIT_PAGE else None,
            "now": view.now,
        },
    )


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
