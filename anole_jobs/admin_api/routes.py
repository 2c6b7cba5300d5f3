"""The one description of the admin routes: the URLconf (`urls`) and the OpenAPI document
(`openapi`) are both built from `ROUTES`, so they cannot drift apart.

Paths are Django `path()` patterns relative to where ``include("anole_jobs.urls")`` is mounted,
as docs/admin.md lists them: no trailing slash (a path with one answers 404 with a hint).
Handlers are named (functions of `views`), so this module imports nothing of Django's request
machinery.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from anole_jobs.core import LIST_LIMIT_MAX, MAX_JOB_ID, STATES
from anole_jobs.operations.stats import DEFAULT_PERIOD, PERIODS

#: Statuses every operation may answer: not logged in, not permitted, store unreachable.
COMMON_STATUSES = (401, 403, 503)
#: What a wrong method on a known path gets (with an ``Allow`` header), on every path.
WRONG_METHOD = 405


@dataclass(frozen=True, kw_only=True)
class Param:
    """A path or query parameter, with its JSON Schema."""

    name: str
    location: str  # "path" or "query"
    description: str
    schema: Mapping[str, Any]
    required: bool = False


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One method on one path: its handler (a function of `views`), its success status and
    body (a schema name of `openapi.SCHEMAS`, None for no body), and its other statuses."""

    method: str
    handler: str
    summary: str
    ok: int = 200
    body: str | None = None
    errors: tuple[int, ...] = ()
    query: tuple[Param, ...] = ()
    #: The schema name of an optional JSON request body, None for none.
    request_body: str | None = None

    @property
    def statuses(self) -> tuple[int, ...]:
        return tuple(sorted({self.ok, *self.errors, *COMMON_STATUSES}))


@dataclass(frozen=True, kw_only=True)
class Route:
    path: str  # a Django path() pattern
    name: str
    operations: tuple[Operation, ...]
    params: tuple[Param, ...] = field(default=())

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods this path answers; HEAD goes with GET, as everywhere in Django."""
        methods = [op.method for op in self.operations]
        if "GET" in methods:
            methods.append("HEAD")
        return tuple(methods)

    def operation(self, method: str) -> Operation | None:
        wanted = "GET" if method == "HEAD" else method
        return next((op for op in self.operations if op.method == wanted), None)

    @property
    def openapi_path(self) -> str:
        """``jobs/<str:job_id>`` as ``/jobs/{job_id}``."""
        return "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", self.path)


JOB_ID = Param(
    name="job_id",
    location="path",
    description="The job's id; an unknown or malformed id answers 404.",
    schema={"type": "integer", "minimum": 1, "maximum": MAX_JOB_ID},
    required=True,
)
SIGNAL_NAME = Param(
    name="name",
    location="path",
    description="The signal's name: 1 to 200 characters (another answers 400).",
    schema={"type": "string", "minLength": 1, "maxLength": 200},
    required=True,
)
CRON_NAME = Param(
    name="name",
    location="path",
    description="The name of a `CRON` entry.",
    schema={"type": "string", "minLength": 1},
    required=True,
)
QUEUE_NAME = Param(
    name="name",
    location="path",
    description=(
        "A queue name: up to 200 printable characters, `/` included (another answers 400). "
        "A name that is neither in QUEUES nor known to the store answers 404 with "
        '"did you mean", unless the body says create.'
    ),
    schema={"type": "string", "minLength": 1, "maxLength": 200},
    required=True,
)
WORKER_ID = Param(
    name="worker_id",
    location="path",
    description="The worker's id (`host:pid:random`, as `GET /workers` lists it); a worker "
    "not alive answers 404.",
    schema={"type": "string", "minLength": 1},
    required=True,
)
AUDIT_PARAMS = (
    Param(
        name="action",
        location="query",
        description="Only entries of this action (retry, delete, worker_stop ...).",
        schema={"type": "string", "minLength": 1},
    ),
    Param(
        name="limit",
        location="query",
        description="Entries per page (default 100, at most 500).",
        schema={"type": "integer", "minimum": 1, "default": 100},
    ),
    Param(
        name="before",
        location="query",
        description="The `next_before` of the previous page: only older entries.",
        schema={"type": "integer", "minimum": 1},
    ),
)
LIST_FILTERS = (
    Param(
        name="state",
        location="query",
        description="Only jobs in this state.",
        schema={"type": "string", "enum": list(STATES)},
    ),
    Param(
        name="queue",
        location="query",
        description="Only jobs of this queue.",
        schema={"type": "string", "minLength": 1},
    ),
    Param(
        name="kind",
        location="query",
        description="Only jobs of this kind.",
        schema={"type": "string", "minLength": 1},
    ),
    Param(
        name="workflow",
        location="query",
        description="Only the steps of this workflow (its id).",
        schema={"type": "string", "minLength": 1, "maxLength": 100},
    ),
    Param(
        name="limit",
        location="query",
        description=f"Jobs per page (default 100; more than {LIST_LIMIT_MAX} reads as "
        f"{LIST_LIMIT_MAX}).",
        schema={"type": "integer", "minimum": 1, "default": 100},
    ),
    Param(
        name="after",
        location="query",
        description="The `next_after` of the previous page: only jobs with a smaller id.",
        schema={"type": "integer", "minimum": 1, "maximum": MAX_JOB_ID},
    ),
)

STATS_PARAMS = (
    Param(
        name="queue",
        location="query",
        description="Only this queue (default: every queue, each and summed).",
        schema={"type": "string", "minLength": 1},
    ),
    Param(
        name="period",
        location="query",
        description="`hour`: one point per minute over the last hour (the default); `day`, "
        "`week`, `month`: one point per hour over the last day, 7 days or 30 days.",
        schema={"type": "string", "enum": list(PERIODS), "default": DEFAULT_PERIOD},
    ),
)


# -- search and bulk actions ---------------------------------------------------------------
SEARCH_FILTERS = (
    Param(
        name="kind_prefix",
        location="query",
        description="Only jobs whose kind starts with this text (`billing.` matches "
        "`billing.refund`). A search: each page looks at a bounded window of job ids.",
        schema={"type": "string", "minLength": 1, "maxLength": 1000},
    ),
    Param(
        name="error",
        location="query",
        description="Only jobs whose last error, written `<type>: <message>`, contains this "
        "text in any case. A search.",
        schema={"type": "string", "minLength": 1, "maxLength": 1000},
    ),
    Param(
        name="args",
        location="query",
        description='Only jobs whose arguments contain this JSON object (`{"customer_id": 7}`;'
        " nested objects and arrays are matched by containment). A search.",
        schema={"type": "string", "minLength": 2, "maxLength": 1000},
    ),
)
#: The filters of a bulk action: a listing's, without its page.
BULK_FILTERS = tuple(p for p in LIST_FILTERS if p.name not in ("limit", "after")) + SEARCH_FILTERS
BULK_ACTION = Param(
    name="action",
    location="path",
    description="What to do with every matching job: `retry` (not running or available ones), "
    "`cancel` (waiting and running ones) or `delete` (any).",
    schema={"type": "string", "enum": ["retry", "cancel", "delete"]},
    required=True,
)
BULK_ROUTES = (
    Route(
        path="bulk",
        name="bulk",
        operations=(
            Operation(
                method="GET",
                handler="bulk_preview",
                summary="Count the jobs a filter matches (before a bulk action)",
                body="BulkPreview",
                errors=(400,),
                query=BULK_FILTERS,
            ),
        ),
    ),
    Route(
        path="bulk/<str:action>",
        name="bulk-action",
        params=(BULK_ACTION,),
        operations=(
            Operation(
                method="POST",
                handler="bulk_action",
                summary="Retry, cancel or delete every job a filter matches, in batches",
                body="BulkOutcome",
                errors=(400,),
                query=BULK_FILTERS,
            ),
        ),
    ),
)


WORKFLOW_ID = Param(
    name="workflow_id",
    location="path",
    description="The workflow's id (`jobs.enqueue_workflow(...).id`); an unknown id answers 404.",
    schema={"type": "string", "minLength": 1, "maxLength": 100},
    required=True,
)
WORKFLOW_ROUTES = (
    Route(
        path="workflows/<str:workflow_id>",
        name="workflow",
        params=(WORKFLOW_ID,),
        operations=(
            Operation(
                method="GET",
                handler="get_workflow",
                summary="One workflow: its state, steps and dependencies",
                body="Workflow",
                errors=(404,),
            ),
        ),
    ),
    Route(
        path="workflows/<str:workflow_id>/cancel",
        name="workflow-cancel",
        params=(WORKFLOW_ID,),
        operations=(
            Operation(
                method="POST",
                handler="cancel_workflow",
                summary="Cancel every step of a workflow not ended yet",
                body="Workflow",
                errors=(404,),
            ),
        ),
    ),
)


ROUTES: tuple[Route, ...] = (
    Route(
        path="jobs",
        name="jobs",
        operations=(
            Operation(
                method="GET",
                handler="list_jobs",
                summary="List jobs, newest first, one page at a time",
                body="JobPage",
                errors=(400,),
                query=LIST_FILTERS + SEARCH_FILTERS,
            ),
        ),
    ),
    Route(
        path="jobs/<str:job_id>",
        name="job",
        params=(JOB_ID,),
        operations=(
            Operation(
                method="GET",
                handler="get_job",
                summary="One job, with its timeline",
                body="JobDetail",
                errors=(404,),
            ),
            Operation(
                method="DELETE",
                handler="delete_job",
                summary="Delete a job, whatever its state",
                ok=204,
                errors=(404,),
            ),
        ),
    ),
    Route(
        path="jobs/<str:job_id>/retry",
        name="job-retry",
        params=(JOB_ID,),
        operations=(
            Operation(
                method="POST",
                handler="retry_job",
                summary="Make a job available now (a running worker's later writes are fenced)",
                body="Job",
                errors=(404,),
            ),
        ),
    ),
    Route(
        path="jobs/<str:job_id>/signals/<anole_name:name>",
        name="job-signal",
        params=(JOB_ID, SIGNAL_NAME),
        operations=(
            Operation(
                method="POST",
                handler="signal_job",
                summary="Send a signal to a job (a job waiting for it wakes at once)",
                body="SignalStored",
                errors=(400, 404),
                request_body="SignalPayload",
            ),
        ),
    ),
    Route(
        path="jobs/<str:job_id>/cancel",
        name="job-cancel",
        params=(JOB_ID,),
        operations=(
            Operation(
                method="POST",
                handler="cancel_job",
                summary="Cancel a waiting or running job (a finished one is left as it is)",
                body="Job",
                errors=(404,),
            ),
        ),
    ),
    Route(
        path="counts",
        name="counts",
        operations=(
            Operation(
                method="GET",
                handler="get_counts",
                summary="Jobs counted per queue and state",
                body="Counts",
            ),
        ),
    ),
    Route(
        path="stats",
        name="stats",
        operations=(
            Operation(
                method="GET",
                handler="get_stats",
                summary="Jobs started, completed and failed, and run-time percentiles, per "
                "minute over the last hour or per hour over the last day",
                body="Stats",
                errors=(400,),
                query=STATS_PARAMS,
            ),
        ),
    ),
    Route(
        path="cron",
        name="cron",
        operations=(
            Operation(
                method="GET",
                handler="list_cron",
                summary="The CRON entries with their next and last ticks",
                body="CronList",
            ),
        ),
    ),
    Route(
        path="cron/<anole_name:name>/trigger",
        name="cron-trigger",
        params=(CRON_NAME,),
        operations=(
            Operation(
                method="POST",
                handler="trigger_cron",
                summary="Enqueue a CRON entry's job now, outside its schedule",
                body="Enqueued",
                errors=(404,),
            ),
        ),
    ),
    Route(
        path="queues",
        name="queues",
        operations=(
            Operation(
                method="GET",
                handler="list_queues",
                summary="Every known queue: paused or not, and its jobs per state",
                body="QueueList",
            ),
        ),
    ),
    Route(
        path="queues/<anole_name:name>/pause",
        name="queue-pause",
        params=(QUEUE_NAME,),
        operations=(
            Operation(
                method="POST",
                handler="pause_queue",
                summary="Pause a queue: no instance claims its jobs until it is resumed",
                body="Queue",
                request_body="QueueAction",
                errors=(400, 404),
            ),
        ),
    ),
    Route(
        path="queues/<anole_name:name>/resume",
        name="queue-resume",
        params=(QUEUE_NAME,),
        operations=(
            Operation(
                method="POST",
                handler="resume_queue",
                summary="Resume a paused queue; its workers are woken at once",
                body="Queue",
                request_body="QueueAction",
                errors=(400, 404),
            ),
        ),
    ),
    *BULK_ROUTES,
    Route(
        path="workers",
        name="workers",
        operations=(
            Operation(
                method="GET",
                handler="list_workers",
                summary="The worker processes alive now, what each runs, and queues no "
                "worker serves",
                body="WorkerList",
            ),
        ),
    ),
    Route(
        path="workers/<path:worker_id>/quiet",
        name="worker-quiet",
        params=(WORKER_ID,),
        operations=(
            Operation(
                method="POST",
                handler="quiet_worker",
                summary="Ask one worker process to claim nothing more and finish its running "
                "jobs (within about a second); recorded in the audit log",
                body="WorkerControlAnswer",
                errors=(404,),
            ),
        ),
    ),
    Route(
        path="workers/<path:worker_id>/stop",
        name="worker-stop",
        params=(WORKER_ID,),
        operations=(
            Operation(
                method="POST",
                handler="stop_worker",
                summary="Ask one worker process to drain and exit, as SIGTERM does (within "
                "about a second); recorded in the audit log",
                body="WorkerControlAnswer",
                errors=(404,),
            ),
        ),
    ),
    Route(
        path="audit",
        name="audit",
        operations=(
            Operation(
                method="GET",
                handler="list_audit",
                summary="The operators' actions (who, what, which target, when, from which "
                "surface), newest first",
                body="AuditList",
                errors=(400,),
                query=AUDIT_PARAMS,
            ),
        ),
    ),
    *WORKFLOW_ROUTES,
    Route(
        path="queues/<anole_name:name>/limits",
        name="queue-limits",
        params=(QUEUE_NAME,),
        operations=(
            Operation(
                method="POST",
                handler="set_queue_limits",
                summary="Change a queue's limits while workers run (stored; null: settings)",
                body="Queue",
                request_body="QueueLimitsChange",
                errors=(400, 404),
            ),
        ),
    ),
    Route(
        path="openapi.json",
        name="openapi",
        operations=(
            Operation(
                method="GET",
                handler="openapi_document",
                summary="This OpenAPI 3.1 document",
                body="OpenAPI",
            ),
        ),
    ),
)
#: The name of the catch-all route: any other path under the mount answers 404 JSON.
FALLBACK = "not-found"
