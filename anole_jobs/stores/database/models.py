"""The database store's tables as Django models: jobs, the leader lease, cron ticks and
queue pauses.

The store itself never goes through the ORM (it writes raw SQL on the alias's connection, see
`base.py`); the models exist so that migrations create the tables and so users can query jobs
with the ORM. Table and index names come from `ddl.py`; ``TABLE_PREFIX`` and ``MIGRATE`` are
read from ``settings.ANOLE_JOBS`` when this module is imported.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from anole_jobs.stores.database.ddl import (
    DEPENDENCY_INDEXES,
    FLOW_INDEXES,
    HOT_STATES,
    MODEL_JOB_INDEXES,
    WORKFLOW_INDEXES,
    IndexSpec,
    configured,
    index_name,
    tables,
    unique_lock_name,
)

__all__ = [
    "Cron",
    "Job",
    "JobDependency",
    "Leader",
    "Limit",
    "MIGRATE",
    "Queue",
    "TABLE_PREFIX",
    "Worker",
    "Workflow",
]

TABLE_PREFIX, MIGRATE = configured()
_TABLES = tables(TABLE_PREFIX)

_LIVE = ["pending", "scheduled", "available", "running", "retrying"]
#: The partial-index conditions of `ddl.MODEL_JOB_INDEXES`, as model conditions.
_CONDITIONS: dict[str, Q] = {
    "job_claim": Q(state="available"),
    "job_stage": Q(state__in=["scheduled", "retrying"]),
    "job_rescue": Q(state="running"),
    "job_prune": Q(finished_at__isnull=False),
    "job_workflow": Q(workflow_id__isnull=False),
    # The admin indexes (ddl.HOT_STATES says why)
    "job_state": ~Q(state="running"),
    "job_queue": ~Q(state__in=list(HOT_STATES)),
    "job_kind": ~Q(state__in=list(HOT_STATES)),
    # fair flow and sequences (migration 0015)
    "job_fair": Q(fair_order__isnull=False, state="available"),
    "job_fair_key": Q(fair_order__isnull=False, state__in=_LIVE),
    "job_sequence": Q(sequence_key__isnull=False, state__in=_LIVE),
}


def _job_indexes(
    specs: tuple[IndexSpec, ...] = MODEL_JOB_INDEXES + WORKFLOW_INDEXES + FLOW_INDEXES,
) -> list[models.Index]:
    indexes = []
    for spec in specs:
        condition = _CONDITIONS.get(spec.suffix)
        name = index_name(TABLE_PREFIX, spec.suffix)
        if condition is None:
            indexes.append(models.Index(fields=list(spec.columns), name=name))
        else:
            indexes.append(models.Index(fields=list(spec.columns), name=name, condition=condition))
    return indexes


class Job(models.Model):
    """One row of the jobs table. Not `anole_jobs.Job`, the object a handler receives: the
    class keeps the name ``Job`` because Django derives the admin's URLs
    (``/admin/anole_jobs/job/``) and the migrations from it, so import it under a name that
    says it is a row: ``from anole_jobs.models import Job as JobRow``.

    `unique_lock` equals `unique_key` while the job holds its key (a live state,
    or any state when `unique_scope` is "any") and is NULL otherwise: its unique constraint
    is what makes concurrent enqueues of one unique job insert exactly one."""

    id = models.BigAutoField(primary_key=True)
    kind = models.TextField()
    queue = models.TextField()
    state = models.CharField(max_length=16)
    args = models.JSONField(default=dict)
    meta = models.JSONField(default=dict)
    errors = models.JSONField(default=list)
    priority = models.SmallIntegerField(default=0)
    attempt = models.IntegerField(default=0)
    max_attempts = models.IntegerField()
    #: Grows with every claim; with `attempt`, what every write after a claim checks (fencing).
    claim_token = models.BigIntegerField(default=0)
    created_at = models.DateTimeField()
    scheduled_at = models.DateTimeField()
    attempted_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)
    lease_until = models.DateTimeField(null=True)
    claimed_by = models.TextField(null=True)
    unique_key = models.TextField(null=True)
    unique_scope = models.CharField(max_length=8, default="live")
    unique_lock = models.TextField(null=True)
    #: A completed job's result: its handler's return value (NULL when it returned None).
    result = models.JSONField(null=True)
    # A workflow step's bookkeeping (all NULL for a plain job; docs/workflows.md): its
    # workflow and name, how many of its dependencies it still waits for, whether it runs
    # when one failed, its delay counted from readiness (microseconds), and the dependency
    # whose failure cancelled it (what a retry of that dependency reopens).
    workflow_id = models.TextField(null=True)
    step_name = models.TextField(null=True)
    waiting_on = models.IntegerField(null=True)
    ignore_failed = models.BooleanField(null=True)
    ready_delay = models.BigIntegerField(null=True)
    cancelled_by = models.BigIntegerField(null=True)
    # Durable execution (all NULL for a job that uses none; docs/durable.md): its recorded
    # steps (a JSON array of [name, value, at], in the order recorded), its signals
    # ({name: {"payload", "at"}}), the deadline kept per awaited signal name, and the name of
    # the signal it is parked for.
    steps = models.JSONField(null=True)
    signals = models.JSONField(null=True)
    signal_deadlines = models.JSONField(null=True)
    awaiting = models.TextField(null=True)
    #: The version of its kind's args it was stored with (docs/deploys.md; 1 before versions).
    version = models.SmallIntegerField(db_default=1)
    # The job's timeline (docs/timeline.md; NULL until it ran): its last progress report, its
    # log (the newest JOB_LOG_LINES records of its handlers) and the attempts that ended.
    progress = models.JSONField(null=True)
    logs = models.JSONField(null=True)
    attempts = models.JSONField(null=True)
    # Fair flow and sequences (docs/flow-control.md; NULL for a plain job): its fairness
    # value and turn, in a queue with fairness, and the sequence of a kind with one.
    fair_key = models.TextField(null=True)
    fair_order = models.FloatField(null=True)
    sequence_key = models.TextField(null=True)

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.job
        managed = MIGRATE
        indexes = _job_indexes()
        # A constraint rather than unique=True: PostgreSQL would add a useless LIKE index.
        # Not partial: code of the release before 0011 inserts with ON CONFLICT (unique_lock),
        # which only a unique index without a predicate satisfies (migrations 0011 and 0012).
        constraints = [
            models.UniqueConstraint(
                fields=["unique_lock"],
                name=unique_lock_name(TABLE_PREFIX),
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.id} ({self.state})"


class Leader(models.Model):
    """The leader lease: one row per election, held until `expires_at`."""

    name = models.TextField(primary_key=True)
    holder = models.TextField()
    expires_at = models.DateTimeField()

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.leader
        managed = MIGRATE


class Cron(models.Model):
    """The last tick each cron entry enqueued, so each tick is enqueued once."""

    name = models.TextField(primary_key=True)
    last_tick_at = models.DateTimeField(null=True)
    last_job_id = models.BigIntegerField(null=True)

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.cron
        managed = MIGRATE


class Queue(models.Model):
    """A queue that was paused at some time: paused while `paused_at` is set. `resume`
    clears `paused_at` and keeps the row; a claim reads this table in its own statement."""

    name = models.TextField(primary_key=True)
    paused_at = models.DateTimeField(null=True)

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.queue
        managed = MIGRATE


class Workflow(models.Model):
    """One workflow: its label, creation time and whether `cancel_workflow` was called. Its
    steps are the jobs with its `workflow_id`; the store deletes it with its last step."""

    id = models.TextField(primary_key=True)
    name = models.TextField()
    created_at = models.DateTimeField()
    cancelled = models.BooleanField()

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.workflow
        managed = MIGRATE


class JobDependency(models.Model):
    """One edge of a workflow: job `job_id` runs after job `dependency_id`. Plain integers,
    not foreign keys: pruning a finished dependency leaves its dependents as they are."""

    id = models.BigAutoField(primary_key=True)
    job_id = models.BigIntegerField()
    dependency_id = models.BigIntegerField()

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.dependency
        managed = MIGRATE
        indexes = _job_indexes(DEPENDENCY_INDEXES)


class Limit(models.Model):
    """A queue with limits (docs/limits.md): those set at runtime (NULL: the settings apply)
    and the times of its recent claims per partition, as JSON. Its limited claims lock this
    row, so they take turns per queue; other queues' claims never wait for it."""

    queue = models.TextField(primary_key=True)
    global_concurrency = models.IntegerField(null=True)
    rate_count = models.IntegerField(null=True)
    rate_seconds = models.FloatField(null=True)
    claims = models.TextField()

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.limit
        managed = MIGRATE


class Worker(models.Model):
    """One running worker process (a runtime) as it last reported itself on its heartbeat:
    listed while `expires_at` is ahead, deleted by the leader's prune after. `info` holds the
    rest of its record (version, queues and slots, the jobs it holds) as JSON."""

    id = models.TextField(primary_key=True)
    host = models.TextField()
    pid = models.BigIntegerField()
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField()
    expires_at = models.DateTimeField()
    info = models.JSONField()
    #: An operator's request to it (quiet or stop) as JSON; NULL when none (migration 0017).
    control = models.TextField(null=True)

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.worker
        managed = MIGRATE


class AuditEntry(models.Model):
    """One operator action (docs/dashboard.md, "Audit"): who, what, which target, when and
    from which surface. The leader prunes rows older than ``AUDIT_KEEP``."""

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField()
    actor = models.TextField()
    action = models.TextField()
    target = models.TextField()
    surface = models.TextField()
    detail = models.TextField()

    class Meta:
        app_label = "anole_jobs"
        db_table = _TABLES.audit
        managed = MIGRATE
