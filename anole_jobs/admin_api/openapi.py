"""The OpenAPI 3.1 document of the admin routes, built from `routes.ROUTES` (the list the
URLconf is built from) and served at ``openapi.json`` beside them.

Each operation lists its success status and every error it may answer; a wrong method on a
path answers 405 with ``Allow`` (the path's ``x-allow`` lists the methods it answers).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from anole_jobs.admin_api import workers
from anole_jobs.admin_api.routes import COMMON_STATUSES, ROUTES, WRONG_METHOD, Param, Route
from anole_jobs.core import STATES
from anole_jobs.operations.stats import PERIODS
from anole_jobs.timeline import OUTCOMES

_TIME = {"type": ["string", "null"], "format": "date-time"}
_STATE = {"type": "string", "enum": list(STATES)}

SCHEMAS: dict[str, Any] = {
    "ErrorEntry": {
        "type": "object",
        "description": "One failed attempt.",
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "attempt": {"type": "integer"},
            "type": {"type": "string"},
            "message": {"type": "string"},
            "traceback": {"type": "string"},
        },
    },
    "Job": {
        "type": "object",
        "required": ["id", "kind", "display_kind", "queue", "state", "args", "meta", "errors"],
        "properties": {
            "id": {"type": "integer"},
            "kind": {"type": "string"},
            "display_kind": {
                "type": "string",
                "description": "The kind as people read it: a django.tasks job's is "
                "'django.tasks: <the task function's path>'; filters match `kind`.",
            },
            "queue": {"type": "string"},
            "state": _STATE,
            "args": {"type": "object"},
            "meta": {"type": "object"},
            "priority": {"type": "integer", "minimum": -100, "maximum": 100},
            "attempt": {"type": "integer"},
            "max_attempts": {"type": "integer"},
            "errors": {"type": "array", "items": {"$ref": "#/components/schemas/ErrorEntry"}},
            "created_at": {"type": "string", "format": "date-time"},
            "scheduled_at": {"type": "string", "format": "date-time"},
            "attempted_at": _TIME,
            "finished_at": _TIME,
            "unique_key": {"type": ["string", "null"]},
            "workflow_id": {
                "type": ["string", "null"],
                "description": "The workflow this job is a step of (null for a plain job)",
            },
            "step_name": {"type": ["string", "null"]},
            "result": {
                "description": "A completed job's result: its handler's JSON return value "
                "(null before completion, when it returned None, or when it ended otherwise)"
            },
            "waiting": {
                "description": "GET /jobs/<id> only: why the job waits (null when it runs or "
                "has finished): `reason` (scheduled, retry_backoff, queue_paused, "
                "concurrency_limit, rate_limit, sequence, dependencies, signal, debounce, "
                "no_worker, ready), `detail` for a person, `until` when known",
                "type": ["object", "null"],
                "properties": {
                    "reason": {"type": "string"},
                    "detail": {"type": "string"},
                    "until": _TIME,
                },
            },
        },
    },
    "JobDetail": {
        "description": "One job with its timeline (docs/timeline.md): what GET /jobs/{job_id} "
        "answers. Lists of jobs leave the timeline out.",
        "allOf": [
            {"$ref": "#/components/schemas/Job"},
            {
                "type": "object",
                "required": ["steps", "progress", "logs", "attempts"],
                "properties": {
                    "steps": {
                        "type": "object",
                        "description": "Durable steps by name, in the order recorded",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {
                                "result": {},
                                "at": {"type": "string", "format": "date-time"},
                            },
                        },
                    },
                    "progress": {
                        "type": ["object", "null"],
                        "description": "The handler's last job.progress report (null: none)",
                        "properties": {
                            "done": {"type": "number"},
                            "total": {"type": ["number", "null"]},
                            "message": {"type": ["string", "null"]},
                            "at": {"type": "string", "format": "date-time"},
                        },
                    },
                    "logs": {
                        "type": "array",
                        "description": "The handlers' log records of level INFO and above, "
                        "oldest first, the newest JOB_LOG_LINES kept",
                        "items": {
                            "type": "object",
                            "properties": {
                                "attempt": {"type": "integer"},
                                "at": {"type": "string", "format": "date-time"},
                                "level": {"type": "string"},
                                "logger": {"type": "string"},
                                "message": {"type": "string"},
                            },
                        },
                    },
                    "attempts": {
                        "type": "array",
                        "description": "One entry per attempt, oldest first; a running job's "
                        "last is the attempt running now (finished_at and outcome null)",
                        "items": {
                            "type": "object",
                            "properties": {
                                "attempt": {"type": "integer"},
                                "worker": {"type": ["string", "null"]},
                                "started_at": _TIME,
                                "finished_at": _TIME,
                                "outcome": {
                                    "type": ["string", "null"],
                                    "enum": [*OUTCOMES, None],
                                },
                            },
                        },
                    },
                },
            },
        ],
    },
    "Workflow": {
        "type": "object",
        "required": ["id", "name", "state", "counts", "steps", "dependencies"],
        "properties": {
            "id": {"type": "string"},
            "name": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "state": {"type": "string", "enum": ["running", "completed", "failed", "cancelled"]},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "steps": {
                "type": "object",
                "description": "Each step's job, by step name.",
                "additionalProperties": {"$ref": "#/components/schemas/Job"},
            },
            "dependencies": {
                "type": "object",
                "description": "The steps each step runs after, by step name.",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
    "JobPage": {
        "type": "object",
        "required": ["jobs", "next_after"],
        "properties": {
            "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}},
            "next_after": {
                "type": ["integer", "null"],
                "description": "Pass as `after` for the next page; null on the last page.",
            },
            "searched": {
                "type": "object",
                "description": "A search's page only: the ids it looked at (`from`, `to`). "
                "It may hold fewer jobs than asked and still have a `next_after`.",
                "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}},
            },
        },
    },
    "BulkPreview": {
        "type": "object",
        "required": ["count", "exact", "filters"],
        "properties": {
            "count": {"type": "integer", "description": "Jobs the filters match."},
            "exact": {
                "type": "boolean",
                "description": "False when counting stopped early: at least `count` match.",
            },
            "filters": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
    "BulkOutcome": {
        "type": "object",
        "required": ["action", "matched", "done", "filters"],
        "properties": {
            "action": {"type": "string", "enum": ["retry", "cancel", "delete"]},
            "matched": {"type": "integer", "description": "Jobs the filters matched."},
            "done": {
                "type": "integer",
                "description": "Jobs the action changed (a job that moved meanwhile, or that "
                "the action leaves as it is, is not counted).",
            },
            "filters": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
    "Counts": {
        "type": "object",
        "description": "Jobs per queue, then per state (states with none omitted).",
        "additionalProperties": {
            "type": "object",
            "additionalProperties": {"type": "integer"},
        },
    },
    "CronEntry": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "schedule": {"type": "string"},
            "timezone": {"type": "string"},
            "next_run_at": _TIME,
            "last_tick_at": _TIME,
            "last_job_id": {"type": ["integer", "null"]},
        },
    },
    "CronList": {
        "type": "object",
        "properties": {
            "cron": {"type": "array", "items": {"$ref": "#/components/schemas/CronEntry"}}
        },
    },
    "SignalStored": {
        "type": "object",
        "properties": {
            "stored": {
                "type": "boolean",
                "description": "False: the job already had a signal of this name, or finished.",
            }
        },
    },
    "SignalPayload": {"description": "The signal's payload: any JSON value (none: null)."},
    "Enqueued": {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "inserted": {"type": "boolean"}},
    },
    "Queue": {
        "type": "object",
        "required": ["name", "paused", "counts", "limits", "held"],
        "properties": {
            "name": {"type": "string"},
            "paused": {"type": "boolean"},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "limits": {"$ref": "#/components/schemas/QueueLimits"},
            "held": {
                "type": "integer",
                "description": "Available jobs the queue's limits hold back now.",
            },
            "oldest_available": {
                **_TIME,
                "description": "When its oldest available job became available (null: none).",
            },
        },
    },
    "QueueLimits": {
        "type": "object",
        "description": "The limits in force (docs/limits.md).",
        "properties": {
            "global_concurrency": {"type": ["integer", "null"]},
            "rate_limit": {"type": ["string", "null"], "description": 'e.g. "20/s"'},
            "partition": {"type": ["array", "null"], "items": {"type": "string"}},
            "source": {"type": "string", "enum": ["settings", "runtime"]},
        },
    },
    "QueueLimitsChange": {
        "type": "object",
        "additionalProperties": False,
        "description": "Omitted fields stay as stored; null returns a limit to the settings.",
        "properties": {
            "global_concurrency": {"type": ["integer", "null"], "minimum": 1},
            "rate_limit": {
                "oneOf": [
                    {"type": "string", "pattern": "^[0-9]+/[smh]$"},
                    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}]},
                    {"type": "null"},
                ],
                "description": '"N/s", "N/m", "N/h" or [N, seconds]',
            },
            "clear": {
                "type": "boolean",
                "description": "Return both limits to the settings.",
            },
            "create": {"type": "boolean", "default": False},
        },
    },
    "QueueList": {
        "type": "object",
        "properties": {
            "queues": {"type": "array", "items": {"$ref": "#/components/schemas/Queue"}}
        },
    },
    "QueueAction": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "create": {
                "type": "boolean",
                "default": False,
                "description": "Act on a queue that is neither in QUEUES nor known to the "
                'store (without it, such a name is refused with 404 and "did you mean").',
            }
        },
    },
    "StatsPoint": {
        "type": "object",
        "description": "One minute or hour (or the period's total). Failed = retried + dead; "
        "run times are of completed runs, in ms: a percentile is the upper bound of the "
        "histogram bucket holding it (never more than max); null without completed runs.",
        "required": ["at", "started", "completed", "failed", "retried", "dead", "runtime_ms"],
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            **{
                name: {"type": "integer"}
                for name in ("started", "completed", "failed", "retried", "dead")
            },
            "runtime_ms": {
                "type": "object",
                "properties": {
                    name: {"type": ["number", "null"]}
                    for name in ("p50", "p95", "p99", "mean", "max")
                },
            },
        },
    },
    "StatsSeries": {
        "type": "object",
        "properties": {
            "queue": {"type": ["string", "null"], "description": "null: every queue summed."},
            "total": {"$ref": "#/components/schemas/StatsPoint"},
            "points": {"type": "array", "items": {"$ref": "#/components/schemas/StatsPoint"}},
        },
    },
    "Stats": {
        "type": "object",
        "required": ["period", "resolution", "since", "until", "overall", "queues"],
        "properties": {
            "period": {"type": "string", "enum": list(PERIODS)},
            "resolution": {"type": "string", "enum": ["minute", "hour"]},
            "since": {"type": "string", "format": "date-time"},
            "until": {"type": "string", "format": "date-time"},
            "step_seconds": {"type": "integer"},
            "runtime_buckets_ms": {"type": "array", "items": {"type": "integer"}},
            "overall": {"$ref": "#/components/schemas/StatsSeries"},
            "queues": {"type": "array", "items": {"$ref": "#/components/schemas/StatsSeries"}},
        },
    },
    "OpenAPI": {"type": "object", "description": "This document."},
    "Error": {
        "type": "object",
        "required": ["error", "message"],
        "properties": {
            "error": {"type": "string", "description": "A short code, e.g. `not_found`."},
            "message": {"type": "string", "description": "What went wrong, for people."},
            "hint": {
                "type": "string",
                "description": "What to ask instead, e.g. the path without its trailing slash.",
            },
        },
    },
}

SCHEMAS.update(workers.SCHEMAS)

#: Every error status the routes answer, with its meaning.
ERRORS: dict[int, str] = {
    400: "A bad filter, body or name.",
    401: "Not logged in: ADMIN_PERMISSION refused a request with no authenticated user.",
    403: "Logged in, but ADMIN_PERMISSION refused the request (or the CSRF check failed).",
    404: "No such job, cron entry or route.",
    WRONG_METHOD: "This path does not answer that method; `Allow` lists those it answers.",
    503: "The jobs store did not answer; try again after `Retry-After` seconds.",
}
SUCCESS: dict[int, str] = {200: "OK", 204: "Done; no body."}
#: Django's CSRF check lets these through without a token.
SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
#: Every operation needs the session cookie; writes also need the CSRF token (the global
#: requirement), reads only the cookie. A custom ADMIN_PERMISSION may accept other
#: credentials (e.g. a token header); describe them in your own copy of this document.
READ_SECURITY: list[dict[str, list[str]]] = [{"sessionCookie": []}]


def _security_schemes() -> dict[str, Any]:
    from django.conf import settings

    header = str(settings.CSRF_HEADER_NAME)
    if header.startswith("HTTP_"):
        header = header[len("HTTP_") :].replace("_", "-").title().replace("Csrftoken", "CSRFToken")
    return {
        "sessionCookie": {
            "type": "apiKey",
            "in": "cookie",
            "name": str(settings.SESSION_COOKIE_NAME),
            "description": "Django's session cookie of a user ADMIN_PERMISSION accepts "
            "(by default an active staff user).",
        },
        "csrfToken": {
            "type": "apiKey",
            "in": "header",
            "name": header,
            "description": "Django's CSRF token (the value of the CSRF cookie) on POST and "
            "DELETE, as Django's docs show for scripts.",
        },
    }


def _parameter(param: Param) -> dict[str, Any]:
    return {
        "name": param.name,
        "in": param.location,
        "required": param.required,
        "description": param.description,
        "schema": dict(param.schema),
    }


def _response(status: int, body: str | None) -> dict[str, Any]:
    if status in SUCCESS:
        response: dict[str, Any] = {"description": SUCCESS[status]}
        if body is not None:
            response["content"] = {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}
            }
        return response
    response = {
        "description": ERRORS[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if status == 503:
        response["headers"] = {
            "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}
        }
    if status == WRONG_METHOD:
        response["headers"] = {
            "Allow": {"schema": {"type": "string"}, "description": "The methods answered."}
        }
    return response


def _path_item(route: Route) -> dict[str, Any]:
    item: dict[str, Any] = {"x-allow": list(route.methods)}
    if route.params:
        item["parameters"] = [_parameter(p) for p in route.params]
    for operation in route.operations:
        responses = {
            str(status): _response(status, operation.body) for status in operation.statuses
        }
        spec: dict[str, Any] = {
            "operationId": operation.handler,
            "summary": operation.summary,
            "responses": responses,
        }
        if operation.query:
            spec["parameters"] = [_parameter(p) for p in operation.query]
        if operation.request_body is not None:
            schema = {"$ref": f"#/components/schemas/{operation.request_body}"}
            spec["requestBody"] = {
                "required": False,
                "content": {"application/json": {"schema": schema}},
            }
        if operation.method in SAFE_METHODS:
            spec["security"] = READ_SECURITY
        item[operation.method.lower()] = spec
    return item


@functools.cache
def _document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "anole_jobs admin",
            "version": "1",
            "description": (
                "The operator's routes of anole_jobs: jobs, counts, cron entries and queues. "
                "Every request must pass ANOLE_JOBS['ADMIN_PERMISSION'] (default: an active "
                "staff user); with session authentication, POST and DELETE need Django's CSRF "
                "token. Every path answers 405 (with `Allow`) to a method it does not list."
            ),
        },
        "paths": {route.openapi_path: _path_item(route) for route in ROUTES},
        "components": {
            "schemas": SCHEMAS,
            "responses": {
                "MethodNotAllowed": _response(WRONG_METHOD, None),
                **{f"Status{status}": _response(status, None) for status in COMMON_STATUSES},
            },
        },
    }


def document(*, server_url: str = "/") -> dict[str, Any]:
    """The document, its server URL set to where the routes are mounted."""
    doc = copy.deepcopy(_document())
    doc["servers"] = [{"url": server_url}]
    doc["components"]["securitySchemes"] = _security_schemes()
    doc["security"] = [{"sessionCookie": [], "csrfToken": []}]
    return doc
