"""The JSON shapes of what the surfaces answer: the admin routes build their bodies with these
functions and ``manage.py jobs --json`` prints them, so the command prints exactly what the
matching route answers. One function per answer.

Datetimes are ISO 8601 in UTC. Imports only record types, never Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from anole_jobs.core import JobRecord
from anole_jobs.operations.display import display_kind
from anole_jobs.operations.listing import Page
from anole_jobs.operations.workers import Overview, WorkerStatus
from anole_jobs.records import Enqueued, QueueRecord, Waiting
from anole_jobs.schedules import CronRecord
from anole_jobs.workflows import WorkflowRecord


def iso(moment: datetime | None) -> str | None:
    """`moment` as ISO 8601 in UTC (``2026-01-02T03:04:05.123456+00:00``), or None."""
    return None if moment is None else moment.astimezone(UTC).isoformat()


def job(record: JobRecord) -> dict[str, Any]:
    """A job as every route and ``--json`` show it: every field of `jobs.get`'s record, and
    `display_kind`, the kind as people read it (a ``django.tasks`` job's with its task's
    path, ``django.tasks: myapp.tasks.send_report``; `kind` is what filters match)."""
    return {
        "id": record.id,
        "kind": record.kind,
        "display_kind": display_kind(record.kind, record.args),
        "queue": record.queue,
        "state": record.state,
        "args": record.args,
        "meta": record.meta,
        "priority": record.priority,
        "attempt": record.attempt,
        "max_attempts": record.max_attempts,
        "errors": [dict(entry) for entry in record.errors],
        "created_at": iso(record.created_at),
        "scheduled_at": iso(record.scheduled_at),
        "attempted_at": iso(record.attempted_at),
        "finished_at": iso(record.finished_at),
        "unique_key": record.unique_key,
        "workflow_id": record.workflow_id,
        "step_name": record.step_name,
        "result": record.result,
    }


def waiting(value: Waiting | None) -> dict[str, Any] | None:
    """Why a job waits (`jobs.why`): ``{reason, detail, until}``, or None."""
    if value is None:
        return None
    return {"reason": value.reason, "detail": value.detail, "until": iso(value.until)}


def job_detail(record: JobRecord, why: Waiting | None = None) -> dict[str, Any]:
    """One job as ``GET /jobs/<id>`` and ``jobs show --json`` show it: `job`, its timeline
    (docs/timeline.md) — its durable steps, last progress report, log lines and attempts,
    times in ISO 8601 (lists leave these out: a page of jobs would carry every job's log) —
    and `waiting`, why it waits (`jobs.why`)."""
    return {**job(record), **timeline(record), "waiting": waiting(why)}


def timeline(record: JobRecord) -> dict[str, Any]:
    """The job's steps, progress, log and attempts, as JSON."""
    progress = record.progress
    return {
        "steps": {
            name: {"result": step.get("result"), "at": _iso_value(step.get("at"))}
            for name, step in record.steps.items()
        },
        "progress": None
        if progress is None
        else {**progress, "at": _iso_value(progress.get("at"))},
        "logs": [{**line, "at": _iso_value(line.get("at"))} for line in record.logs],
        "attempts": [
            {
                **entry,
                "started_at": _iso_value(entry.get("started_at")),
                "finished_at": _iso_value(entry.get("finished_at")),
            }
            for entry in record.attempts
        ],
    }


def _iso_value(value: Any) -> Any:
    return iso(value) if isinstance(value, datetime) else value


def workflow(record: WorkflowRecord) -> dict[str, Any]:
    """A workflow: its state, counts, each step's job by name and what each runs after."""
    return {
        "id": record.id,
        "name": record.name,
        "created_at": iso(record.created_at),
        "state": record.state,
        "counts": dict(record.counts),
        "steps": {name: job(step) for name, step in record.steps.items()},
        "dependencies": {name: list(deps) for name, deps in record.dependencies.items()},
    }


def job_page(page: Page) -> dict[str, Any]:
    """One page of a listing: the jobs, newest first, and `next_after`, the ``after`` value
    that asks for the next page (None when this page is the last)."""
    body: dict[str, Any] = {
        "jobs": [job(record) for record in page.records],
        "next_after": page.next_after,
    }
    if page.searched is not None:  # a search says which ids it looked at
        body["searched"] = {"from": page.searched[0], "to": page.searched[1]}
    return body


def counts(values: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """``{queue: {state: n}}``, queues and states sorted."""
    return {queue: dict(sorted(values[queue].items())) for queue in sorted(values)}


def queue(record: QueueRecord) -> dict[str, Any]:
    limits = record.limits
    return {
        "name": record.name,
        "paused": record.paused,
        "counts": dict(record.counts),
        "limits": {
            "global_concurrency": limits.global_concurrency,
            "rate_limit": limits.rate_limit,
            "partition": list(limits.partition) or None,
            "source": limits.source,
        },
        "held": record.held,
        "oldest_available": iso(record.oldest_available),
    }


def queues(records: Sequence[QueueRecord]) -> dict[str, Any]:
    return {"queues": [queue(record) for record in records]}


def cron_entry(record: CronRecord) -> dict[str, Any]:
    return {
        "name": record.name,
        "schedule": record.schedule,
        "timezone": record.timezone,
        "next_run_at": iso(record.next_run_at),
        "last_tick_at": iso(record.last_tick_at),
        "last_job_id": record.last_job_id,
    }


def cron(records: Sequence[CronRecord]) -> dict[str, Any]:
    return {"cron": [cron_entry(record) for record in records]}


def enqueued(result: Enqueued) -> dict[str, Any]:
    return {"id": result.id, "inserted": result.inserted}


def error(code: str, message: str) -> dict[str, Any]:
    """Every error answer: a short machine-readable `error` code and a sentence for people."""
    return {"error": code, "message": message}


def worker(status: WorkerStatus) -> dict[str, Any]:
    record = status.record
    return {
        "id": record.id,
        "host": record.host,
        "pid": record.pid,
        "version": record.version,
        "queues": [{"name": q.name, "busy": q.busy, "total": q.total} for q in record.queues],
        "busy": record.busy,
        "slots": record.slots,
        "started_at": iso(record.started_at),
        "last_seen": iso(record.last_seen),
        "expires_at": iso(record.expires_at),
        "late": status.late,
        "held": record.held,
        "jobs": [
            {
                "id": job.id,
                "kind": job.kind,
                "queue": job.queue,
                "attempt": job.attempt,
                "started_at": iso(job.started_at),
                "running": job.running,
            }
            for job in record.jobs
        ],
        **(
            {}
            if record.control is None
            else {
                "control": {
                    "action": record.control.action,
                    "by": record.control.by,
                    "at": iso(record.control.at),
                    "surface": record.control.surface,
                }
            }
        ),
    }


def workers(view: Overview) -> dict[str, Any]:
    """The worker processes alive now, what ``GET /workers`` answers."""
    return {
        "workers": [worker(status) for status in view.workers],
        "busy": view.busy,
        "slots": view.slots,
        "queues_without_workers": list(view.queues_without_workers),
        "as_of": iso(view.now),
    }
