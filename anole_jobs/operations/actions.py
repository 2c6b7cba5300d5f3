"""The actions a person takes on jobs, queues and cron entries, each returning what it acted on
and whether it changed anything: cancelling a job that already finished, pausing a paused
queue or triggering a cron entry whose unique job already waits changes nothing, and the
surfaces say so.

A job or cron entry that does not exist raises `NotFound`. A queue name that breaks the rule
for names (`anole_jobs.bounds`: at most 200 printable characters) is `BadInput`. Pausing,
resuming or limiting a queue that is neither in ``QUEUES`` nor known to the store (no jobs, no
pause) is refused with `NotFound` and the nearest known names ("did you mean"), unless the
caller passes ``create=True``: a mistyped name would otherwise create a paused, empty queue
and answer success.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from anole_jobs.api import jobs
from anole_jobs.bounds import NewQueue, close_names
from anole_jobs.core import LIVE_STATES, JobRecord
from anole_jobs.errors import JobNotFound
from anole_jobs.limits import KEEP, parse_concurrency, parse_rate
from anole_jobs.operations import audit
from anole_jobs.operations.display import for_operators
from anole_jobs.operations.names import parse_name
from anole_jobs.operations.problems import BadInput, NotFound
from anole_jobs.records import Enqueued, QueueRecord, Waiting

T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What an action left (the record as it now is) and whether the action changed it."""

    record: T
    changed: bool


def _missing(job_id: int) -> NotFound:
    return NotFound(f"no job with id {job_id}")


def get(job_id: int) -> JobRecord:
    record = jobs.get(job_id)
    if record is None:
        raise _missing(job_id)
    return for_operators(record)


def why(job_id: int) -> Waiting | None:
    """Why the job waits (`jobs.why`); None when it runs or has finished."""
    try:
        return jobs.why(job_id)
    except LookupError:
        raise _missing(job_id) from None


def retry(job_id: int) -> Outcome[JobRecord]:
    """Make the job available now. Unchanged when it already was, or when another job holds
    its unique key (the store then leaves it as it is)."""
    before = get(job_id)
    try:
        record = for_operators(jobs.retry(job_id))
    except JobNotFound:  # deleted since `get`
        raise _missing(job_id) from None
    audit.record("retry", f"job {job_id}", f"{before.state} -> {record.state}")
    return Outcome(record, record.state == "available" and before.state != "available")


def signal(job_id: int, name: str, payload: Any) -> bool:
    """Send signal `name` with `payload` to the job: whether it was stored (False: the job
    had one of that name, or finished). A bad name or payload is `BadInput`."""
    try:
        stored = jobs.signal(job_id, name, payload)
    except JobNotFound:
        raise _missing(job_id) from None
    except (ValueError, TypeError) as exc:
        raise BadInput("signal", str(exc)) from None
    audit.record("signal", f"job {job_id}", f"{name}: {'stored' if stored else 'not stored'}")
    return stored


def cancel(job_id: int) -> Outcome[JobRecord]:
    """Cancel a waiting or running job; a finished one (completed, dead, cancelled) is left as
    it is and the outcome says it did not change. (The state is read first: a job that
    finishes between the read and the cancel is reported as it is left, unchanged.)"""
    before = get(job_id)
    try:
        record = for_operators(jobs.cancel(job_id))
    except JobNotFound:  # deleted since `get`
        raise _missing(job_id) from None
    # Only a live job (waiting or running) is cancelled; a finished one is left as it is.
    changed = before.state in LIVE_STATES and record.state == "cancelled"
    audit.record("cancel", f"job {job_id}", "" if changed else "unchanged")
    return Outcome(record, changed)


def delete(job_id: int) -> Outcome[int]:
    """Delete the job whatever its state; `NotFound` when there is none."""
    if not jobs.delete(job_id):
        raise _missing(job_id)
    audit.record("delete", f"job {job_id}")
    return Outcome(job_id, True)


def trigger(name: str) -> Outcome[Enqueued]:
    """Enqueue cron entry `name`'s job now; unchanged when a unique duplicate already waits."""
    try:
        enqueued = jobs.cron_trigger(name)
    except LookupError as exc:
        raise NotFound(str(exc)) from None
    audit.record(
        "trigger", f"cron {name}", f"job {enqueued.id}" if enqueued.inserted else "duplicate"
    )
    return Outcome(enqueued, enqueued.inserted)


# -- queues ----------------------------------------------------------------------------------
def known_queues() -> dict[str, QueueRecord]:
    """Every queue the facade knows: from ``QUEUES``, stored jobs or a pause."""
    return {record.name: record for record in jobs.queues()}


def _unknown_queue(name: str, known: dict[str, QueueRecord], how_to_create: str) -> NotFound:
    return NotFound(
        f"no queue named {name!r}: it is not in QUEUES and holds no jobs{close_names(name, known)} "
        f"({how_to_create} to use a new queue anyway)",
        code="unknown_queue",
    )


def _queue_action(
    name: str, *, pause: bool, create: bool, how_to_create: str
) -> Outcome[QueueRecord]:
    parse_name("queue", name)
    known = known_queues()
    before = known.get(name)
    if before is None and not create:
        raise _unknown_queue(name, known, how_to_create)
    record = jobs.pause(name) if pause else jobs.resume(name)
    was_paused = before is not None and before.paused
    changed = record.paused != was_paused
    audit.record("pause" if pause else "resume", f"queue {name}", "" if changed else "unchanged")
    return Outcome(record, changed)


def pause(
    name: str, *, create: bool = False, how_to_create: str = "ask with create"
) -> Outcome[QueueRecord]:
    """Pause `name` for every instance; unchanged when it was paused already."""
    return _queue_action(name, pause=True, create=create, how_to_create=how_to_create)


def resume(
    name: str, *, create: bool = False, how_to_create: str = "ask with create"
) -> Outcome[QueueRecord]:
    """Resume `name`; unchanged when it was not paused."""
    return _queue_action(name, pause=False, create=create, how_to_create=how_to_create)


def set_limits(
    name: str,
    *,
    global_concurrency: object = KEEP,
    rate_limit: object = KEEP,
    create: bool = False,
    how_to_create: str = "ask with create",
) -> Outcome[QueueRecord]:
    """Store limits for queue `name` in place of its settings' (docs/limits.md): None returns
    one to the settings, `KEEP` leaves it as stored. A bad value is `BadInput` naming it;
    an unknown queue `NotFound` unless `create`. Unchanged when the limits in force stay."""
    for field, value, parse in (
        ("global_concurrency", global_concurrency, parse_concurrency),
        ("rate_limit", rate_limit, parse_rate),
    ):
        if value is not KEEP and value is not None:
            try:
                parse(value, name=field)
            except ValueError as exc:
                raise BadInput(field, str(exc)) from None
    parse_name("queue", name)
    known = known_queues()
    before = known.get(name)
    if before is None and not create:
        raise _unknown_queue(name, known, how_to_create)
    record = jobs.set_limits(
        NewQueue(name),  # known to the store, or new on purpose: checked above
        global_concurrency=global_concurrency,  # type: ignore[arg-type]  # checked above
        rate_limit=rate_limit,  # type: ignore[arg-type]
    )
    audit.record(
        "limits",
        f"queue {name}",
        f"global_concurrency={record.limits.global_concurrency}, "
        f"rate_limit={record.limits.rate_limit}",
    )
    return Outcome(record, before is None or record.limits != before.limits)
