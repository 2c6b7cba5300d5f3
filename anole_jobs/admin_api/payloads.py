"""The JSON shapes of the admin routes, shared with ``manage.py jobs --json``: one
function per answer, so the command prints exactly what the matching route answers.

Datetimes are ISO 8601 in UTC. Imports only record types, never Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from anole_jobs.operations.display import display_kind
from anole_jobs.operations.listing import Page
from anole_jobs.records import Enqueued, QueueRecord
from anole_jobs.schedules import CronRecord
from anole_jobs.stores.base import JobRecord


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
        "result": record.result,
    }


def job_page(page: Page) -> dict[str, Any]:
    """One page of a listing: the jobs, newest first, and `next_after`, the ``after`` value
    that asks for the next page (None when this page is the last)."""
    return {"jobs": [job(record) for record in page.records], "next_after": page.next_after}


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
