"""The dashboard's workflow page (``dashboard/workflows/<id>/``): the workflow's state and
counts, its steps drawn as a graph (server-rendered SVG: one column per depth, an arrow from
each dependency to the step that waits for it, each step linking to its job page), the same
steps as a table, and a button that cancels what has not ended.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_http_methods

from anole_jobs.dashboard.pages import (
    REFRESH_SECONDS,
    confirm_page,
    dashboard_view,
    notice_of,
    page_url,
    redirect,
)
from anole_jobs.dashboard.render import render_live
from anole_jobs.operations import insights, workflows
from anole_jobs.workflows import WorkflowRecord

#: The most steps drawn as a graph (the table lists them all).
GRAPH_MAX = 300
NODE_WIDTH, NODE_HEIGHT, COLUMN, ROW, MARGIN = 170, 36, 220, 52, 12


def layout(record: WorkflowRecord) -> dict[str, Any]:
    """Boxes (one per step, in the column of its depth) and arrows, in SVG coordinates."""
    depth: dict[str, int] = {}
    for name in record.steps:  # steps come in id order: each after its dependencies
        deps = [d for d in record.dependencies.get(name, ()) if d in record.steps]
        depth[name] = 1 + max((depth.get(d, 0) for d in deps), default=-1)
    rows: dict[int, int] = {}
    boxes: dict[str, dict[str, Any]] = {}
    for name, step in record.steps.items():
        column = depth[name]
        row = rows.get(column, 0)
        rows[column] = row + 1
        boxes[name] = {
            "name": name,
            "id": step.id,
            "state": step.state,
            "x": MARGIN + column * COLUMN,
            "y": MARGIN + row * ROW,
            "label": name if len(name) <= 20 else name[:19] + "…",
        }
    arrows = []
    for name, deps in record.dependencies.items():
        for dep in deps:
            if dep in boxes and name in boxes:
                start, end = boxes[dep], boxes[name]
                arrows.append(
                    {
                        "x1": start["x"] + NODE_WIDTH,
                        "y1": start["y"] + NODE_HEIGHT // 2,
                        "x2": end["x"] - 4,
                        "y2": end["y"] + NODE_HEIGHT // 2,
                    }
                )
    width = MARGIN * 2 + (max(depth.values(), default=0) + 1) * COLUMN
    height = MARGIN * 2 + max(rows.values(), default=1) * ROW
    return {
        "boxes": list(boxes.values()),
        "arrows": arrows,
        "width": width,
        "height": height,
        "node_width": NODE_WIDTH,
        "node_height": NODE_HEIGHT,
    }


@require_GET
@dashboard_view
def workflow_detail(request: HttpRequest, workflow_id: str) -> HttpResponse:
    record = workflows.get(workflow_id)
    steps = [
        {
            "name": name,
            "job": step,
            "after": record.dependencies.get(name, []),
        }
        for name, step in record.steps.items()
    ]
    return render_live(
        request,
        "workflow.html",
        {
            "title": f"Workflow {record.name}",
            "section": "jobs",
            "workflow": record,
            "steps": steps,
            "graph": layout(record) if len(steps) <= GRAPH_MAX else None,
            "graph_max": GRAPH_MAX,
            "can_cancel": record.state == "running",
            "notice": notice_of(request),
        },
        live=record.state == "running",
        refresh=REFRESH_SECONDS,
    )


@require_http_methods(["GET", "HEAD", "POST"])
@dashboard_view
def workflow_cancel(request: HttpRequest, workflow_id: str) -> HttpResponse:
    if request.method != "POST":
        record = workflows.get(workflow_id)
        return confirm_page(
            request,
            question=f"Cancel workflow {record.name}?",
            explanation=[
                f"Every step of workflow {record.name} ({record.id}) that has not ended is "
                "cancelled; steps that ended stay as they are.",
                "Nothing to cancel: the workflow has ended."
                if record.state != "running"
                else "It cannot be undone.",
            ],
            button="Cancel the workflow",
            danger=True,
            back=page_url("workflow", record.id),
            back_label="Back to the workflow",
            section="jobs",
        )
    outcome = workflows.cancel(workflow_id)
    notice = "workflow_cancelled" if outcome.changed else "unchanged"
    return redirect(request, "workflow", outcome.record.id, notice=notice)


WORKFLOW_STATES = ("running", "completed", "failed", "cancelled")


@require_GET
@dashboard_view
def workflow_list(request: HttpRequest) -> HttpResponse:
    """The workflows of the newest jobs: state, progress (steps ended of all), age."""
    state = request.GET.get("state") or None
    if state not in (None, *WORKFLOW_STATES):
        state = None
    report = insights.recent_workflows(state=state)
    return render_live(
        request,
        "workflows.html",
        {
            "title": "Workflows",
            "section": "workflows",
            "rows": report.rows,
            "looked": report.looked,
            "more": report.more,
            "state": state,
            "states": WORKFLOW_STATES,
            "shown": insights.WORKFLOWS_SHOWN,
        },
        live=True,
        refresh=REFRESH_SECONDS * 2,
    )
