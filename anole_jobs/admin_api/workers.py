"""``GET /workers``: the worker processes alive now, what each runs, and the queues with waiting
jobs that no worker serves. Its OpenAPI schemas and its handler (its JSON shape is
`operations.payloads.workers`, shared with ``manage.py jobs workers --json``); `routes.ROUTES`
names the handler, `openapi.SCHEMAS` takes the schemas."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from anole_jobs.operations.payloads import workers
from anole_jobs.operations.workers import overview


def list_workers(request: HttpRequest) -> tuple[int, Any]:
    return 200, workers(overview())


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
