"""Why a job waits: `explain`, behind `jobs.why(id)`, ``GET /jobs/<id>`` (``waiting``),
``manage.py jobs why ID`` and the dashboard's job page (docs/debounce.md).

One function per reason, asked in the order of `CHECKS`: first what the job itself waits for
(its time, its backoff, its workflow dependencies, a signal, a debounce) and what its queue
holds it for (a pause, a limit, the job before it in a sequence); only a job claimable now
gets `no_worker` (no live worker runs its queue or has a handler for its kind) or `ready`
(the workers are busy). A process that runs jobs by `jobs.step()` records no worker, so it is
no live worker here.

Each check reads the store through its contract (never its tables or keys) and returns a
`Waiting` or None. The sequence and signal checks read store hooks (`sequence_holder`,
`awaited_signal`) that answer None in a store without those features.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from anole_jobs.core import WAITING_STATES, JobRecord, claim_key
from anole_jobs.errors import JobNotFound
from anole_jobs.limits import Limits
from anole_jobs.records import Waiting
from anole_jobs.stores.workers import WorkerRecord

if TYPE_CHECKING:
    from anole_jobs.service import JobService


@dataclass(frozen=True)
class _Look:
    """What every check may read: the service, the job and the time now."""

    service: JobService
    job: JobRecord
    now: datetime

    def workers(self) -> list[WorkerRecord]:
        return self.service.store.workers(now=self.now)


def explain(service: JobService, job_id: int) -> Waiting | None:
    """Why job `job_id` is not running: None when it runs or has finished; `JobNotFound` (a
    `LookupError`) for an unknown id."""
    from anole_jobs.service import _job_id

    job = service.store.get(_job_id(job_id))
    if job is None:
        raise JobNotFound(job_id)
    if job.state not in WAITING_STATES:
        return None
    look = _Look(service=service, job=job, now=service.clock())
    for check in CHECKS:
        found = check(look)
        if found is not None:
            return found
    return _ready(look)


# -- the job's own reasons ---------------------------------------------------------------------
def _scheduled(look: _Look) -> Waiting | None:
    job = look.job
    if job.state != "scheduled" or _debounced(job) or _signal(look) is not None:
        return None
    if job.scheduled_at <= look.now:
        detail = f"it was due at {_at(job.scheduled_at)} and becomes available within a second"
    else:
        detail = f"it runs at {_at(job.scheduled_at)} (in {_span(job.scheduled_at - look.now)})"
    return Waiting(reason="scheduled", detail=detail, until=job.scheduled_at)


def _retry_backoff(look: _Look) -> Waiting | None:
    job = look.job
    if job.state != "retrying":
        return None
    last = job.errors[-1] if job.errors else {}
    failed = f"attempt {job.attempt} of {job.max_attempts} failed"
    if last:
        failed += f" ({last.get('type', 'error')}: {last.get('message', '')})"
    detail = f"{failed}; the next attempt runs at {_at(job.scheduled_at)}"
    return Waiting(reason="retry_backoff", detail=detail, until=job.scheduled_at)


def _dependencies(look: _Look) -> Waiting | None:
    job = look.job
    if job.state != "pending":
        return None
    awaited: list[str] = []
    if job.workflow_id is not None:
        workflow = look.service.store.workflow(job.workflow_id)
        if workflow is not None:
            steps = {step.id: step for step in workflow.steps}
            for dep in workflow.dependencies.get(job.id, ()):
                step = steps.get(dep)
                if step is not None and step.state != "completed":
                    awaited.append(f"{step.step_name!r} ({step.state}, job {step.id})")
    if awaited:
        detail = f"it waits for the steps {', '.join(awaited)} of its workflow to complete"
    else:
        detail = "it waits for its workflow to be fully enqueued"
    return Waiting(reason="dependencies", detail=detail)


def _signal(look: _Look) -> Waiting | None:
    if look.job.state not in ("scheduled", "pending"):
        return None
    awaited = look.service.store.awaited_signal(look.job.id)
    if awaited is None:
        return None
    name, deadline = awaited
    detail = f"it waits for the signal {name!r}"
    if deadline is not None:
        detail += f" until {_at(deadline)}"
    return Waiting(reason="signal", detail=detail, until=deadline)


def _debounce(look: _Look) -> Waiting | None:
    job = look.job
    if job.state != "scheduled" or not _debounced(job):
        return None
    by = job.meta["debounce"].get("by") or {}
    key = ", ".join(f"{name}={value!r}" for name, value in by.items()) or "its kind"
    detail = (
        f"debounced on {key}: it runs at {_at(job.scheduled_at)} unless another enqueue with "
        "the same key comes first and moves it later"
    )
    return Waiting(reason="debounce", detail=detail, until=job.scheduled_at)


# -- its queue's reasons (only for a job that is available) --------------------------------------
def _queue_paused(look: _Look) -> Waiting | None:
    job = look.job
    if job.state != "available":
        return None
    paused = look.service.store.paused_queues()
    if job.queue not in paused:
        return None
    detail = f"its queue {job.queue!r} is paused (since {_at(paused[job.queue])}); resume it"
    return Waiting(reason="queue_paused", detail=detail)


def _limits(look: _Look) -> Waiting | None:
    job = look.job
    if job.state != "available":
        return None
    config = look.service.settings.queues.get(job.queue)
    configured = config.limits if config is not None else Limits()
    partition = configured.key(job.args)
    usage = look.service.store.limit_usage(job.queue, configured, partition=partition, now=look.now)
    limits = usage.limits
    where = f"queue {job.queue!r}"
    if limits.partition:
        values = ", ".join(f"{name}={job.args.get(name)!r}" for name in limits.partition)
        where += f", partition {values}"
    concurrency = limits.global_concurrency
    if concurrency is not None and usage.running >= concurrency:
        detail = (
            f"the concurrency limit of {where} is full: {usage.running} running of at most "
            f"{concurrency}"
        )
        return Waiting(reason="concurrency_limit", detail=detail)
    rate = limits.rate_limit
    if rate is not None and len(usage.claims) >= rate.count:
        reopens = usage.claims[len(usage.claims) - rate.count] + rate.seconds
        until = datetime.fromtimestamp(reopens, tz=UTC)
        detail = (
            f"the rate limit of {where} ({rate}) is used up: {len(usage.claims)} started in the "
            f"window; the next may start at {_at(until)}"
        )
        return Waiting(reason="rate_limit", detail=detail, until=until)
    return None


def _sequence(look: _Look) -> Waiting | None:
    job = look.job
    holder = look.service.store.sequence_holder(job.id)
    if holder is None:
        return None
    detail = f"job {holder} comes before it in its sequence and has not finished"
    return Waiting(reason="sequence", detail=detail)


# -- a job claimable now -----------------------------------------------------------------------
def _no_worker(look: _Look) -> Waiting | None:
    job = look.job
    if job.state != "available":
        return None
    workers = look.workers()
    running_queue = [w for w in workers if any(q.name == job.queue for q in w.queues)]
    if not running_queue:
        detail = f"no live worker runs its queue {job.queue!r}; start one (manage.py runjobs)"
        return Waiting(reason="no_worker", detail=detail)
    able = [w for w in running_queue if can_run(w, job)]
    if not able:
        detail = (
            f"no live worker of queue {job.queue!r} has a handler for kind {job.kind!r}; "
            "deploy code that declares it"
        )
        return Waiting(reason="no_worker", detail=detail)
    return None


def can_run(worker: WorkerRecord, job: JobRecord) -> bool:
    """Whether `worker` can run `job` as far as its record says: it has a handler for the
    job's kind at the job's stored version (a record that lists no kinds, from an older
    release, is taken to have every handler)."""
    known = worker.can_run(job.kind, job.version)
    if known is not None:
        return known
    return worker.kinds is None or claim_key(job.kind, job.version) in worker.kinds


def _ready(look: _Look) -> Waiting:
    job = look.job
    workers = [
        w for w in look.workers() if any(q.name == job.queue for q in w.queues) and can_run(w, job)
    ]
    busy = sum(q.busy for w in workers for q in w.queues if q.name == job.queue)
    total = sum(q.total for w in workers for q in w.queues if q.name == job.queue)
    detail = (
        f"it can be claimed now; {len(workers)} worker(s) run queue {job.queue!r} with "
        f"{busy} of {total} slots busy, and it starts when one is free (jobs of higher "
        "priority or earlier go first)"
    )
    return Waiting(reason="ready", detail=detail)


#: The checks, in the order asked (the reasons' order in the docs); `ready` is what is left.
CHECKS: Sequence[Callable[[_Look], Waiting | None]] = (
    _scheduled,
    _retry_backoff,
    _queue_paused,
    _limits,
    _sequence,
    _dependencies,
    _signal,
    _debounce,
    _no_worker,
)


def _debounced(job: JobRecord) -> bool:
    value = job.meta.get("debounce")
    return isinstance(value, Mapping)


def _at(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"
