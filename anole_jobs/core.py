"""The job's vocabulary: its states and the value types every layer names a job with.

Stores, the service, the worker and every surface import these names from here, so naming a
job never means importing the store contract. Leaf module: it imports nothing of the package
but `leaninit` (a leaf too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from anole_jobs.leaninit import lean_init

State = Literal[
    "pending", "scheduled", "available", "running", "retrying", "completed", "dead", "cancelled"
]
STATES: tuple[State, ...] = (
    "pending",
    "scheduled",
    "available",
    "running",
    "retrying",
    "completed",
    "dead",
    "cancelled",
)
#: States in which a job is waiting or running: a "live" unique key holds only in these.
#: ``pending``: a workflow step waiting for its dependencies (see "Workflows" below).
LIVE_STATES: tuple[State, ...] = ("pending", "scheduled", "available", "running", "retrying")
#: The live states but ``running``: jobs not yet taken by a worker (a queue's depth).
WAITING_STATES: tuple[State, ...] = ("pending", "scheduled", "available", "retrying")
FINAL_STATES: tuple[State, ...] = ("completed", "dead", "cancelled")
#: States `finish` may write after a run.
AFTER_RUN_STATES: tuple[State, ...] = ("completed", "retrying", "dead", "scheduled", "available")
UniqueScope = Literal["live", "any"]

#: The kind of a ``django.tasks`` job (one call of a Django ``@task`` function; see
#: `anole_jobs.tasks`). Here so that naming such a job imports neither Django's tasks
#: framework nor the backend.
TASK_KIND = "django.tasks"

#: The most jobs one `list` call returns.
LIST_LIMIT_MAX = 1000
#: The largest job id: every store holds ids in a signed 64-bit integer.
MAX_JOB_ID = 2**63 - 1


@lean_init
@dataclass(frozen=True, kw_only=True)
class JobRecord:
    """A job as stored; what `jobs.get` and `jobs.list` return."""

    id: int
    kind: str
    queue: str
    state: State
    args: Mapping[str, Any]
    meta: Mapping[str, Any]
    priority: int
    attempt: int
    max_attempts: int
    errors: tuple[Mapping[str, Any], ...]
    created_at: datetime
    scheduled_at: datetime
    attempted_at: datetime | None
    finished_at: datetime | None
    unique_key: str | None
    #: The handler's return value (JSON), kept with a ``completed`` job; None before
    #: completion, when it returned None, and for jobs that ended otherwise.
    result: Any = None
    #: The workflow this job is a step of, and its step name (None for a plain job).
    workflow_id: str | None = None
    step_name: str | None = None
    #: Durable steps recorded by ``job.step`` and ``job.sleep_for`` / ``sleep_until``:
    #: ``{name: {"result": value, "at": datetime}}`` in the order recorded.
    steps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: The handler's last ``job.progress`` call: ``{"done", "total", "message", "at"}``.
    progress: Mapping[str, Any] | None = None
    #: The handler's log records (INFO and above), the last ``JOB_LOG_LINES`` of them:
    #: ``{"attempt", "at", "level", "logger", "message"}`` each.
    logs: list[Mapping[str, Any]] = field(default_factory=list)
    #: One entry per attempt: ``{"attempt", "worker", "started_at", "finished_at", "outcome"}``.
    attempts: list[Mapping[str, Any]] = field(default_factory=list)
    #: The version of its kind's args it was stored with (1 for jobs stored before versions).
    version: int = 1
    #: Its args and result are stored encrypted (docs/encryption.md): `jobs.get` opens them
    #: in a process with the keys; operator surfaces show ``{"encrypted": true}``.
    encrypted: bool = False


@lean_init
@dataclass(frozen=True, kw_only=True)
class ErrorEntry:
    """One failed attempt, stored in the job's `errors` list."""

    at: datetime
    attempt: int
    type: str
    message: str
    traceback: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "attempt": self.attempt,
            "type": self.type,
            "message": self.message,
            "traceback": self.traceback,
        }


@dataclass(frozen=True, kw_only=True)
class ListFilter:
    state: State | None = None
    queue: str | None = None
    kind: str | None = None
    limit: int = 100
    after: int | None = None
    workflow: str | None = None
    # -- search (see stores/search.py for what each term matches) --
    #: Only jobs whose kind starts with this text.
    kind_prefix: str | None = None
    #: Only jobs whose last error ("<type>: <message>") contains this text, in any case.
    error: str | None = None
    #: Only jobs whose arguments contain this JSON object (as PostgreSQL's ``jsonb @>``).
    args: Mapping[str, Any] | None = None
    #: Only jobs with an id from this one up: the window that bounds a search's reads.
    min_id: int | None = None


@dataclass(frozen=True, kw_only=True)
class CronState:
    name: str
    last_tick_at: datetime | None
    last_job_id: int | None


@dataclass(frozen=True, kw_only=True)
class WorkflowRow:
    """A workflow as stored: its steps (records) and their dependencies by job id."""

    id: str
    name: str
    created_at: datetime
    cancelled: bool
    steps: tuple[JobRecord, ...]
    dependencies: Mapping[int, tuple[int, ...]]


def dependency_failed(step_name: str, state: str) -> str:
    """The message of the ``DependencyFailed`` error of a step cancelled by its dependency."""
    return f"its dependency {step_name!r} ended {state}"


#: Joins a kind and a version above 1 in a claim's `kinds` ("billing.charge@2"). No kind name
#: holds it, so a claim key never names two things.
VERSION_MARK = "@"


def claim_key(kind_name: str, version: int) -> str:
    """How a claim's `kinds` admits stored jobs of `kind_name` at `version`: the bare name for
    version 1 (every job stored before versions existed), ``name@version`` above it."""
    return kind_name if version <= 1 else f"{kind_name}{VERSION_MARK}{version}"


def split_claim_key(key: str) -> tuple[str, int]:
    """`claim_key`'s inverse: ``(kind, version)``."""
    name, mark, version = key.rpartition(VERSION_MARK)
    if mark and version.isdigit():
        return name, int(version)
    return key, 1
