"""The dashboard's workflow page (``dashboard/workflows/<id>/``): the workflow's state and
counts, its steps drawn as a graph (server-rendered SVG: one column per depth, an arrow from
each dependency to the step that waits for it, each step linking to its job page), the same
steps as a table, and a button that cancels what has not ended.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET, require_POST

from anole_jobs.dashboard.pages import dashboard_view, notice_of, redirect
from anole_jobs.dashboard.render import render
from anole_jobs.operations import workflows
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
    return render(
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
    )


@require_POST
@dashboard_view
def workflow_cancel(request: HttpRequest, workflow_id: str) -> HttpResponse:
    outcome = workflows.cancel(workflow_id)
    notice = "workflow_cancelled" if outcome.changed else "unchanged"
    return redirect(request, "workflow", outcome.record.id, notice=notice)
