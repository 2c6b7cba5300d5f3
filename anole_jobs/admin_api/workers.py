"""``GET /workers``: the worker processes alive now, what each runs, and the queues with waiting
jobs that no worker serves. Its OpenAPI schemas and its handler (its JSON shape is
`operations.payloads.workers`, shared with ``manage.py jobs workers --json``); `routes.ROUTES`
names the handler, `openapi.SCHEMAS` takes the schemas."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from anole_jobs.operations import audit
from anole_jobs.operations.payloads import workers
from anole_jobs.operations.problems import BadInput
from anole_jobs.operations.workers import control, overview


def list_workers(request: HttpRequest) -> tuple[int, Any]:
    return 200, workers(overview())


def _control(worker_id: str, action: str) -> tuple[int, Any]:
    control(worker_id, action)
    actor, surface = audit.current()
    return 200, {"worker": worker_id, "action": action, "by": actor, "surface": surface}


def quiet_worker(request: HttpRequest, worker_id: str) -> tuple[int, Any]:
    return _control(worker_id, "quiet")


def stop_worker(request: HttpRequest, worker_id: str) -> tuple[int, Any]:
    return _control(worker_id, "stop")


def list_audit(request: HttpRequest) -> tuple[int, Any]:
    """``GET /audit``: the operators' actions, newest first (``?action=``, ``?limit=``,
    ``?before=`` the previous page's ``next_before``)."""
    limit = _int(request, "limit", 100)
    before = _int(request, "before", None)
    action = request.GET.get("action") or None
    found = audit.entries(action=action, limit=limit, before=before)
    return 200, {
        "entries": [entry.as_json() for entry in found],
        "next_before": found[-1].id if len(found) == limit and found else None,
    }


def _int(request: HttpRequest, name: str, default: int | None) -> Any:
    text = request.GET.get(name)
    if text is None or text == "":
        return default
    if not text.isdigit() or len(text) > 18 or int(text) < 1:
        raise BadInput(name, f"{name} must be a positive whole number, got {text!r}")
    return min(int(text), 500) if name == "limit" else int(text)


_TIME = {"type": "string", "format": "date-time"}
SCHEMAS: dict[str, Any] = {
    "HeldJob": {
        "type": "object",
        "required": ["id", "kind", "queue", "attempt", "started_at", "running"],
        "properties": {
            "id": {"type": "integer"},
            "kind": {"type": "string"},
            "queue": {"type": "string"},
            "attempt": {"type": "integer"},
            "started_at": {"type": ["string", "null"], "format": "date-time"},
            "running": {
                "type": "boolean",
                "description": "False while the job waits in the worker for a free slot "
                "(claimed ahead).",
            },
        },
    },
    "Worker": {
        "type": "object",
        "required": [
            "id",
            "host",
            "pid",
            "version",
            "queues",
            "busy",
            "slots",
            "started_at",
            "last_seen",
            "expires_at",
            "late",
            "held",
            "jobs",
        ],
        "properties": {
            "id": {"type": "string", "description": "host:pid:random, one per runtime"},
            "host": {"type": "string"},
            "pid": {"type": "integer"},
            "version": {"type": "string", "description": "The anole_jobs version it runs."},
            "queues": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "busy", "total"],
                    "properties": {
                        "name": {"type": "string"},
                        "busy": {"type": "integer"},
                        "total": {"type": "integer"},
                    },
                },
            },
            "busy": {"type": "integer", "description": "Slots running a job, all queues."},
            "slots": {"type": "integer", "description": "Slots, all queues (concurrency)."},
            "started_at": _TIME,
            "last_seen": _TIME,
            "expires_at": _TIME,
            "late": {
                "type": "boolean",
                "description": "Its heartbeat is overdue: the process may be stuck or cut off "
                "from the store (it drops out of the list when its record expires).",
            },
            "held": {"type": "integer", "description": "Jobs it holds (claimed, not finished)."},
            "jobs": {
                "type": "array",
                "description": "Up to 100 of the jobs it holds, the running ones first.",
                "items": {"$ref": "#/components/schemas/HeldJob"},
            },
            "control": {"$ref": "#/components/schemas/WorkerControl"},
        },
    },
    "WorkerControl": {
        "type": "object",
        "required": ["action", "by", "at", "surface"],
        "description": "An operator's request to this worker: quiet (claim nothing more, finish "
        "the running jobs) or stop (drain and exit, as SIGTERM does).",
        "properties": {
            "action": {"type": "string", "enum": ["quiet", "stop"]},
            "by": {"type": "string", "description": "The user who asked, or cli."},
            "at": _TIME,
            "surface": {"type": "string", "description": "route, dashboard, cli or admin."},
        },
    },
    "WorkerControlAnswer": {
        "type": "object",
        "required": ["worker", "action", "by", "surface"],
        "properties": {
            "worker": {"type": "string"},
            "action": {"type": "string", "enum": ["quiet", "stop"]},
            "by": {"type": "string"},
            "surface": {"type": "string"},
        },
    },
    "AuditEntry": {
        "type": "object",
        "required": ["id", "at", "actor", "action", "target", "surface", "detail"],
        "properties": {
            "id": {"type": "integer", "description": "Higher is later."},
            "at": _TIME,
            "actor": {"type": "string", "description": "The user, or cli."},
            "action": {
                "type": "string",
                "description": "retry, cancel, delete, signal, trigger, pause, resume, limits, "
                "cancel_workflow, bulk_<action>, worker_quiet, worker_stop.",
            },
            "target": {"type": "string", "description": "What it acted on (job 12, queue mail)."},
            "surface": {"type": "string", "enum": ["route", "dashboard", "cli", "admin", "api"]},
            "detail": {"type": "string"},
        },
    },
    "AuditList": {
        "type": "object",
        "required": ["entries", "next_before"],
        "properties": {
            "entries": {"type": "array", "items": {"$ref": "#/components/schemas/AuditEntry"}},
            "next_before": {
                "type": ["integer", "null"],
                "description": "Pass as `before` for the next (older) page; null on the last.",
            },
        },
    },
    "WorkerList": {
        "type": "object",
        "required": ["workers", "busy", "slots", "queues_without_workers", "as_of"],
        "properties": {
            "workers": {"type": "array", "items": {"$ref": "#/components/schemas/Worker"}},
            "busy": {"type": "integer"},
            "slots": {"type": "integer"},
            "queues_without_workers": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Queues with jobs waiting to be claimed that no live worker "
                "runs (paused queues left out).",
            },
            "as_of": _TIME,
        },
    },
}
