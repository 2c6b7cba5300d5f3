"""Enqueueing and reading workflows: `Workflow` steps into `NewStep`s, store calls, records.

Called by the `jobs` facade; uses the `JobService`'s builder so a step's arguments and options
are checked exactly as `jobs.enqueue` checks them.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from dataclasses import replace
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction

from anole_jobs import events
from anole_jobs.durations import to_timedelta
from anole_jobs.errors import InvalidJob
from anole_jobs.service import BATCH_SIZE, JobService, _Builder
from anole_jobs.stores.base import NewStep, NewWorkflow
from anole_jobs.workflows import (
    Workflow,
    WorkflowEnqueued,
    WorkflowRecord,
    workflow_record,
)

logger = logging.getLogger("anole_jobs")


def _plan(service: JobService, wf: Workflow) -> tuple[NewWorkflow, list[NewStep], list[str]]:
    """Every step built and checked, in an order where each follows its dependencies."""
    if not isinstance(wf, Workflow):
        raise InvalidJob(f"enqueue_workflow() takes a Workflow, got {type(wf).__name__}")
    order = wf.order()
    now = service.clock()
    specs = wf.steps
    index = {name: i for i, name in enumerate(order)}
    steps: list[NewStep] = []
    for name in order:
        spec = specs[name]
        where = f"step {name!r} of workflow {wf.name!r}"
        try:
            job = _Builder(
                service,
                now,
                {
                    "queue": spec.queue,
                    "priority": spec.priority,
                    "delay": spec.delay,
                    "run_at": spec.run_at,
                    "meta": spec.meta,
                },
            ).build(spec.args)
        except InvalidJob as exc:
            raise InvalidJob(f"{where}: {exc}") from None
        ready_delay = None
        if spec.delay is not None:
            ready_delay = to_timedelta(spec.delay, name="delay")  # checked by the builder
            job = replace(job, scheduled_at=now)
        steps.append(
            NewStep(
                job=replace(job, state="pending"),
                name=name,
                after=tuple(index[dep] for dep in spec.after),
                ignore_failed=spec.ignore_failed,
                ready_delay=ready_delay,
            )
        )
    workflow = NewWorkflow(id=uuid.uuid4().hex, name=wf.name, created_at=now)
    return workflow, steps, order


def enqueue_workflow(service: JobService, wf: Workflow, *, on_commit: bool) -> WorkflowEnqueued:
    """Write every step of `wf` or none (see `jobs.enqueue_workflow`)."""
    workflow, steps, order = _plan(service, wf)
    store = service.store
    if on_commit and not store.supports_transactions:
        connection = connections[DEFAULT_DB_ALIAS]
        if connection.in_atomic_block:
            transaction.on_commit(
                lambda: _write(service, workflow, steps, order), using=DEFAULT_DB_ALIAS
            )
            return WorkflowEnqueued(workflow.id, {})
    return _write(service, workflow, steps, order)


def _write(
    service: JobService, workflow: NewWorkflow, steps: list[NewStep], order: list[str]
) -> WorkflowEnqueued:
    store = service.store
    ids: list[int] = []
    # One store call per BATCH_SIZE steps; on a store with transactions all of them in one
    # (the caller's, if one is open), elsewhere a failure deletes what was written.
    atomic: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if store.supports_transactions:
        atomic = transaction.atomic(using=store.atomic_alias)
    try:
        with atomic:
            for start in range(0, len(steps), BATCH_SIZE):
                chunk = []
                for step in steps[start : start + BATCH_SIZE]:
                    inside = tuple(i - start for i in step.after if i >= start)
                    earlier = tuple(ids[i] for i in step.after if i < start)
                    chunk.append(replace(step, after=inside, after_ids=earlier))
                last = start + BATCH_SIZE >= len(steps)
                ids.extend(
                    store.insert_workflow(workflow, chunk, last=last, now=workflow.created_at)
                )
    except BaseException:
        if not store.supports_transactions:
            for job_id in ids:
                with contextlib.suppress(Exception):
                    store.delete(job_id)
        raise
    if service.bus.listens_to(events.ENQUEUED):
        counts: dict[tuple[str, str], int] = {}
        for step in steps:
            key = (step.job.queue, step.job.kind)
            counts[key] = counts.get(key, 0) + 1
        for (queue, kind), count in counts.items():
            service.bus.emit(events.ENQUEUED, queue=queue, kind=kind, inserted=True, count=count)
    return WorkflowEnqueued(workflow.id, dict(zip(order, ids, strict=True)))


def workflow_id(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > 100:
        raise InvalidJob(f"a workflow id is a non-empty string, got {value!r}")
    return value


def get_workflow(service: JobService, wf_id: str) -> WorkflowRecord | None:
    row = service.store.workflow(workflow_id(wf_id))
    return workflow_record(row) if row is not None else None


def cancel_workflow(service: JobService, wf_id: str) -> WorkflowRecord | None:
    wf_id = workflow_id(wf_id)
    if service.store.cancel_workflow(wf_id, now=service.clock()) is None:
        return None
    return get_workflow(service, wf_id)


def dependency_results(service: JobService, job_id: int) -> dict[str, Any]:
    results = service.store.dependency_results(job_id)
    return {name: service.open_value(value) for name, value in results.items()}
