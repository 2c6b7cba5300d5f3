"""The store contract: semantic operations on plain frozen dataclasses.

Every store (memory, database, redis) implements `Store`. The contract never carries SQL text,
a QuerySet or a Redis key; time always comes in as an argument (only `clock.py` reads it).

Fencing: every write after a claim names a `RunRef` — the job id, its attempt and the
claim token that grew when it was claimed — and succeeds only if the job is still ``running``
with exactly that attempt and token. A drain or snooze gives the attempt back, so the attempt
alone cannot tell a stale worker from a fresh one; the token can.

Finished wake-ups: `jobs.result(id, timeout=...)` waits on `subscribe_finished`. The store
that ends a job (`finish` to a final state, `cancel`, a `rescue` that kills) tells those
waiters once the write is committed, in this process and, on stores with cross-process
wake-ups, in others — one message per `finish` batch, not one per job. Waiters also poll every
`finished_poll` seconds, since a message can be lost.

Wake-ups: the store that makes a job available tells the workers waiting on its queue. Its
`insert`, `cron_advance` and `retry` wake those queues themselves once the write is committed —
at once outside a transaction, at commit inside ``transaction.atomic(using=atomic_alias)``,
never for a write that was rolled back — in this process (`wakeups`) and, on stores with
cross-process wake-ups, in others (NOTIFY, PUBLISH). Nobody else wakes workers for those
writes. `wake` is for work that maintenance makes available in bulk (staging, rescue).

Workflows: a step is an ordinary job with a `workflow_id`, a `step_name` and the ids of the
steps it runs after (its dependencies). A step with dependencies waits ``pending``; so does
every step until the last `insert_workflow` call of its workflow. The rules every store keeps
in the same write (lock, transaction or script) as the change that causes them:

- A dependency that ends ``completed`` lowers each ``pending`` dependent's count of
  dependencies not yet ended; one that ends ``dead`` or ``cancelled`` (`finish`, `rescue`,
  `cancel`) cancels each ``pending`` dependent (error type ``DependencyFailed`` naming the
  step), transitively — except a dependent with ``ignore_failed``, whose count is lowered as
  for a completion. A dependent whose count reaches zero becomes ``available`` with
  `scheduled_at` = now (``scheduled`` at now + its `ready_delay`, or at its absolute run time
  when that is later). Under concurrent finishes this happens exactly once.
- `retry` of a dead or cancelled step puts back to ``pending`` the dependents its ending
  cancelled (transitively), their counts recomputed; `retry` of a ``pending`` step does nothing.
- `prune` removes a workflow's bookkeeping with its last step.

A store never imports the service, the worker, maintenance, metrics, tracing or the clock.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from anole_jobs.core import (
    FINAL_STATES,
    LIVE_STATES,
    CronState,
    ErrorEntry,
    JobRecord,
    ListFilter,
    State,
    UniqueScope,
    WorkflowRow,
)
from anole_jobs.leaninit import lean_init
from anole_jobs.limits import Limits, RuntimeLimits
from anole_jobs.stores.audit import AuditEntry
from anole_jobs.stores.durable import DurableState
from anole_jobs.stores.search import BulkAction
from anole_jobs.stores.stats import Resolution, StatsByQueue
from anole_jobs.stores.wakeups import Subscription, WakeupHub, announce
from anole_jobs.stores.workers import WorkerControl, WorkerRecord


@lean_init
@dataclass(frozen=True, kw_only=True)
class NewJob:
    """A job to insert; `state` is "available" when due now, else "scheduled"."""

    kind: str
    queue: str
    args: Mapping[str, Any]
    meta: Mapping[str, Any]
    priority: int
    max_attempts: int
    state: State
    scheduled_at: datetime
    created_at: datetime
    unique_key: str | None = None
    unique_scope: UniqueScope = "live"
    #: A debounced job (see `Store.insert_debounced`): the key that folds its enqueues, and
    #: how long after the first of them it runs at the latest (None: no cap).
    debounce_key: str | None = None
    debounce_max_wait: timedelta | None = None
    #: ``Unique(on_conflict="replace")``: it replaces the job holding its unique key (see
    #: `Store.insert_replacing`).
    replace: bool = False
    #: Its kind's version when enqueued (docs/deploys.md).
    version: int = 1
    #: Its queue's fairness value (`Fairness.key`) and that value's weight, when its queue has
    #: fairness: the store gives it its turn among the queue's values (`fair_orders`).
    fair_key: str | None = None
    fair_weight: float = 1.0
    #: The sequence it belongs to (`kinds.sequence_key`), when its kind has one.
    sequence_key: str | None = None

    @property
    def flow(self) -> bool:
        return self.fair_key is not None or self.sequence_key is not None


@dataclass(frozen=True, kw_only=True)
class LimitUsage:
    """What one partition of a queue uses of its limits (`Store.limit_usage`): the limits in
    force (the settings' with the runtime ones in their place), its claimed and unfinished
    jobs, and the times (epoch seconds, oldest first) of its claims in the rate window."""

    limits: Limits
    running: int = 0
    claims: tuple[float, ...] = ()


#: The error type a job replaced by ``Unique(on_conflict="replace")`` ends with.
REPLACED = "Replaced"
REPLACED_MESSAGE = "replaced by a newer enqueue with the same unique key"


@dataclass(frozen=True)
class Inserted:
    """The outcome of inserting one `NewJob`: its id, and False when a unique duplicate won."""

    id: int
    inserted: bool


@lean_init
@dataclass(frozen=True)
class RunRef:
    """Names one claim of one job: what every fenced write checks."""

    id: int
    attempt: int
    token: int


@lean_init
@dataclass(frozen=True, kw_only=True)
class ClaimedJob:
    """A job a worker has claimed: its record (state ``running``) and the run to fence with."""

    record: JobRecord
    run: RunRef
    lease_until: datetime


@lean_init
@dataclass(frozen=True, kw_only=True)
class Finish:
    """The fenced write that ends one run.

    `state` is the job's next state. `at` is now: it becomes `finished_at` for a final state.
    `scheduled_at` is when a retrying/scheduled/available job is next due. `error` is appended
    to the job's errors. `give_back_attempt` undoes the claim's attempt increment (snooze,
    drain: "attempt not counted"). `result` is the handler's return value as JSON text, kept
    with a ``completed`` job in the same write (None: nothing is kept). `started_at` is when
    the handler started, when it did: it becomes the job's `attempted_at` (the claim wrote the
    claim's time; a job claimed ahead may wait a moment in its worker before a slot starts it).
    """

    run: RunRef
    state: State
    at: datetime
    scheduled_at: datetime | None = None
    error: ErrorEntry | None = None
    give_back_attempt: bool = False
    result: str | None = None
    started_at: datetime | None = None
    # -- the job's timeline (anole_jobs/timeline.py), kept by the same write --
    #: This attempt's outcome (`timeline.OUTCOMES`): appended to the job's attempts with the
    #: claim's worker, its start (`started_at`, else the claim's time) and its end (`at`) —
    #: except ``completed``, which no store appends (`timeline.kept`): the job's row says it,
    #: and `timeline.unwritten_attempt` reads it from there. None: no entry (a job given back
    #: before its handler started).
    outcome: str | None = None
    #: The handler's last `job.progress` not stored yet (JSON text); None: left as it is.
    progress: str | None = None
    #: The attempt's log records (a JSON array of `timeline` log lines), appended to the
    #: job's; the store then keeps the newest `logs_kept`. None: nothing to add.
    logs: str | None = None
    logs_kept: int = 200


@dataclass(frozen=True, kw_only=True)
class Rescued:
    """A job whose lease lapsed and that `rescue` put back (or killed, on its last attempt)."""

    id: int
    kind: str
    queue: str
    state: State


@dataclass(frozen=True, kw_only=True)
class NewWorkflow:
    """A workflow to record: its id (made by the caller), label and creation time."""

    id: str
    name: str
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class NewStep:
    """One step of `insert_workflow`: the job (its state ignored: a step is inserted
    ``pending``), its name, its dependencies — `after`, indexes into the same call's steps
    (always lower than its own), and `after_ids`, job ids from the workflow's earlier calls —
    whether it runs when a dependency failed, and its delay counted from readiness (None: it
    runs at its job's `scheduled_at` or at readiness, whichever is later)."""

    job: NewJob
    name: str
    after: tuple[int, ...] = ()
    after_ids: tuple[int, ...] = ()
    ignore_failed: bool = False
    ready_delay: timedelta | None = None


@dataclass(frozen=True, kw_only=True)
class LimitedClaim:
    """What `claim_limited` took, and what its queue's limits held back: `held` when a limit
    kept some available job from this claim; `reopens_at` when a rate window lets the next
    claim in (None: only a finishing job makes room, or nothing was held)."""

    jobs: list[ClaimedJob]
    held: bool = False
    reopens_at: datetime | None = None


@dataclass(frozen=True, kw_only=True)
class FairnessState:
    """What a fair queue's store knows of its turns (docs/flow-control.md): the turn its claims
    have reached, its available jobs per fairness value, and per value the latest turn given
    to one of its jobs waiting or running (memory and Redis: ever given)."""

    turn: float
    waiting: Mapping[str, int]
    last: Mapping[str, float]


def ended_ids(results: Sequence[Finish], written: Sequence[bool]) -> list[int]:
    """The ids of the jobs a `finish` batch ended (written in a final state)."""
    return [
        result.run.id
        for result, ok in zip(results, written, strict=True)
        if ok and result.state in FINAL_STATES
    ]


def woken_queues(jobs: Sequence[NewJob], results: Sequence[Inserted | None]) -> dict[str, int]:
    """The queues an insert must wake: those of the jobs it inserted as ``available``, each
    with the highest priority among them (what the wake-up announces, see `wakeups`)."""
    tops: dict[str, int] = {}
    for job, result in zip(jobs, results, strict=True):
        if result is not None and result.inserted and job.state == "available":
            announce(tops, job.queue, job.priority)
    return tops


class Store(ABC):
    """Methods child classes must implement; each docstring is the rule every store keeps.

    All `now` arguments are aware UTC datetimes from the configured clock. Ids are positive
    ints that grow with insertion order. Methods are safe to call from several threads.
    """

    name: str = "store"

    # -- capabilities: where stores really differ, read by the service and the tests -------
    #: Its writes join the caller's ``transaction.atomic(using=atomic_alias)``: an enqueue
    #: inside one is stored at commit and never if it rolls back, and `jobs.enqueue_in`
    #: works. False: a write is stored at once, whatever transaction is open (the service
    #: defers an ``on_commit=True`` enqueue to the default database's commit itself).
    supports_transactions: bool = False
    #: The database alias whose `transaction.atomic` blocks its writes join, when
    #: `supports_transactions` (else None).
    atomic_alias: str | None = None
    #: Its wake-ups (new work, finished jobs) reach waiters in other processes (NOTIFY,
    #: PUBLISH). False: only this process's waiters are woken; others poll.
    supports_cross_process_wakeups: bool = False
    #: Other processes see the same jobs (a server's database or Redis). False: the jobs
    #: live in this process only (the memory store), so a second process cannot share them.
    supports_other_processes: bool = True
    #: A unique key is held across every queue. False (the Redis Cluster store, which keeps
    #: each queue in one hash slot): only among the queues of one slot, so jobs of two
    #: queues may both hold one key.
    unique_across_queues: bool = True
    #: Leadership taken by `lead` lapses once `now` passes its ttl unless renewed. False
    #: (PostgreSQL's advisory lock): it lasts as long as the leader's session, whatever
    #: `now` says, until `resign` or the session ends.
    leadership_lapses: bool = True
    #: The runtime's threads share a small pool of the store's sessions (`shared_session`)
    #: instead of one connection per thread (PostgreSQL). False: each call uses what the
    #: store always uses (Redis's own pool, the thread's SQLite connection, nothing).
    shares_sessions: bool = False
    #: Its queues can fail apart: one queue's writes may wait (a Redis Cluster master's
    #: failover) while other queues' answer. The runtime then writes each queue's outcomes
    #: apart, so that one queue's wait holds up no other.
    queues_fail_apart: bool = False

    # -- enqueueing ------------------------------------------------------------------------
    @abstractmethod
    def insert(self, jobs: Sequence[NewJob]) -> list[Inserted]:
        """Insert `jobs` in one round trip (a second only when unique duplicates must be read).

        Returns one `Inserted` per job, in order. A job whose `unique_key` is held by another
        job — one in a live state, or any state when that job's scope is "any" — is not
        inserted; its `Inserted` names the holder with ``inserted=False``. Uniqueness is
        enforced atomically by the store (concurrent inserts of one key insert exactly one).
        The caller has removed duplicates within the batch.

        Wakes the queues of the ``available`` jobs it inserted once they are committed (see
        "Wake-ups" in the module docstring).
        """

    @abstractmethod
    def insert_debounced(self, job: NewJob) -> Inserted:
        """Insert `job` (``scheduled``, due at its `scheduled_at`: its enqueue's time plus the
        debounce wait) or fold it into the job waiting with its `debounce_key`, in one atomic
        write (concurrent calls with one key make exactly one job).

        It folds when the job holding the key is still ``scheduled`` and not yet due (its
        `scheduled_at` is after `job.created_at`): that job takes `job`'s args, meta and
        priority, and its `scheduled_at` becomes `job.scheduled_at`, or its `created_at` plus
        `job.debounce_max_wait` when that is earlier; ``Inserted(its id, False)``. Otherwise
        `job` is inserted and holds the key from then on (a holder that started or is due
        lets it go): ``Inserted(new id, True)``. The key is no unique key: the job's
        `unique_key` stays None, and a retried job never takes the key back."""

    @abstractmethod
    def insert_replacing(self, job: NewJob) -> Inserted:
        """Insert `job` (it has a `unique_key`) in place of the job holding that key, in one
        atomic write: a holder that is waiting or running becomes ``cancelled`` at
        `job.created_at` with a `REPLACED` error appended (a running one's worker loses it at
        its next heartbeat) and lets the key go, and `job` is inserted holding it. Concurrent
        calls leave exactly one live job with the key. Wakes queues and result waiters as
        `insert` and `cancel` do."""

    # -- running ---------------------------------------------------------------------------
    @abstractmethod
    def claim(
        self,
        queue: str,
        *,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[ClaimedJob]:
        """Claim up to `limit` ``available`` jobs of `queue` whose kind is in `kinds` (all
        kinds when None), highest priority first, then oldest `scheduled_at`, then lowest id.

        Versions (docs/deploys.md): `kinds` names each kind with its stored version as
        `kinds.claim_key` writes it — the bare name admits the kind's version-1 jobs,
        ``name@N`` its version-N jobs — so a worker never claims a version it cannot run. A
        store compares ``claim_key(kind, version)`` of each job with `kinds` (for version 1
        that is the kind itself, so jobs of unversioned kinds cost nothing more).

        Each claimed job becomes ``running`` with attempt + 1, a claim token greater than any
        it had, `attempted_at` = now, and a lease until `lease_until`. Two concurrent claims
        never return the same job.

        A paused queue (see `pause`) yields no job. The store decides it atomically with the
        claim (in the same statement, script or lock), so a claim that starts after `pause`
        returned never takes a job of that queue; neither the runtime nor `step()` checks.

        A claim made outside the caller's transaction may be committed without waiting for
        the disk (PostgreSQL does): a claim lost in a server crash only leaves its job
        available, and the claimant's later writes then fail their fence, so every job still
        runs at least once. Enqueues and outcomes stay durable.
        """

    @abstractmethod
    def heartbeat(self, runs: Collection[RunRef], *, lease_until: datetime) -> set[RunRef]:
        """Extend the lease of each run still held (fenced) and return those; the others were
        lost (rescued, drained, cancelled, retried or deleted) and their workers must stop."""

    @abstractmethod
    def finish(self, results: Sequence[Finish]) -> list[bool]:
        """Apply each fenced `Finish`, in as few round trips as the store allows; returns, per
        result, whether it was written (False: the run was no longer the job's current one).
        A ``completed`` write keeps its `result` in the same write; the jobs it ends wake
        their result waiters (see "Finished wake-ups")."""

    @abstractmethod
    def update_meta(self, run: RunRef, meta: Mapping[str, Any]) -> bool:
        """Replace the meta of the job `run` is running with `meta` (JSON), fenced like
        `finish`: only while the job is running with that attempt and claim token. Returns
        whether it was written. A run records its output this way (``meta["output"]``)."""

    @abstractmethod
    def record_progress(self, run: RunRef, progress: str) -> bool:
        """Store `progress` (JSON text: ``{"done", "total", "message", "at"}``) as the job's
        progress, fenced like `finish`; returns whether it was written. A handler's
        `job.progress` calls it at most about once a second; its last call rides on the
        run's `Finish` instead."""

    @abstractmethod
    def record_logs(self, run: RunRef, logs: str, keep: int) -> bool:
        """Append `logs` (a JSON array of job's-log lines, oldest first) to the job's log,
        which then keeps its newest `keep` lines; returns whether it was written. The runtime
        stores a running attempt's lines with it about once a second; the run's `Finish`
        carries the lines not stored yet (`logs`, `logs_kept`) the same way.

        Fenced like `finish`, with one exception: a job cancelled during this run (state
        ``cancelled``, same attempt and claim token) still takes them. A cancel ends the job at
        once, so the run's own end is refused; its last lines (the ones it logged while it
        wound down) then come through here. Nothing else moves a cancelled job on without a
        new claim, which changes the token, so no other run's lines can land."""

    # -- maintenance -----------------------------------------------------------------------
    @abstractmethod
    def stage(self, *, now: datetime, limit: int = 10_000) -> int:
        """Make ``scheduled`` and ``retrying`` jobs due at `now` ``available``; return how many."""

    @abstractmethod
    def rescue(self, *, now: datetime, limit: int = 10_000) -> list[Rescued]:
        """Put every ``running`` job whose lease ended before `now` back to ``available``
        (``dead`` if that was its last attempt), appending a `LeaseExpired` error for the
        attempt and closing it in the job's attempts (outcome ``rescued``, ended `now`).
        Conditional: a job that finished meanwhile is never touched."""

    @abstractmethod
    def prune(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> int:
        """Delete jobs in each state of `horizons` whose `finished_at` is older than
        `now - horizon`; return how many. The leader calls it periodically, so a store may
        also compact its own bookkeeping here (PostgreSQL folds its count deltas)."""

    @abstractmethod
    def expired(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> builtins.list[JobRecord]:
        """The jobs `prune` with the same arguments would delete now (read only): the leader
        reads them first when args or results are offloaded, to delete their files."""

    @abstractmethod
    def waiting_kinds(self, queues: Collection[str]) -> dict[str, set[str]]:
        """For each queue, the kinds of its ``available`` jobs (to log kinds with no handler)."""

    @abstractmethod
    def lead(self, *, instance: str, now: datetime, ttl: timedelta) -> bool:
        """Take or keep leadership for `instance` until `now + ttl`; True when it leads."""

    @abstractmethod
    def resign(self, *, instance: str) -> None:
        """Give up leadership if `instance` holds it."""

    # -- cron ------------------------------------------------------------------------------
    @abstractmethod
    def cron_states(self, names: Collection[str]) -> dict[str, CronState]:
        """The last enqueued tick and last job of each named cron entry that has either (a
        triggered entry that never ticked has a job and no tick)."""

    @abstractmethod
    def cron_advance(self, *, name: str, tick: datetime, job: NewJob | None) -> Inserted | None:
        """Atomically: when `tick` is later than the entry's last tick, record it and insert
        `job` (None: record only, for a first sighting); return the insert, else None. Wakes
        the job's queue as `insert` does."""

    @abstractmethod
    def cron_trigger(self, *, name: str, job: NewJob) -> Inserted:
        """Atomically: insert `job` (entry `name` run by hand) and, when it was inserted,
        record it as the entry's last job. The entry's last tick stays as it is (an entry with
        none keeps none, so the leader's first sighting still starts its history): a run by
        hand never moves the schedule. Wakes the job's queue as `insert` does."""

    # -- admin -----------------------------------------------------------------------------
    @abstractmethod
    def get(self, job_id: int) -> JobRecord | None:
        """The job with this id, or None; with its timeline (`progress`, `logs`, `attempts`
        — a ``running`` job's attempts end with the one running: its claim's worker and
        time, no end, no outcome), which `list` leaves empty."""

    def lowest_id_below(self, below: int, jobs: int) -> int:
        """The lowest id that the `jobs` jobs enqueued one after another just before job
        `below` can have (at least 1): how far a search's window of that many jobs reaches.
        Ids grow with insertion order; where they are consecutive (every store here but the
        Redis Cluster one, whose ids also carry their hash slot) this is ``below - jobs``."""
        return max(1, below - jobs)

    @abstractmethod
    def list(self, filter: ListFilter) -> list[JobRecord]:
        """Jobs matching `filter`, newest first (id descending), ids below `filter.after`
        (and from `filter.min_id` up). Its search terms match as stores/search.py says; with
        `min_id` and `after` set, a store reads no job outside that id window."""

    @abstractmethod
    def counts(self) -> dict[str, dict[str, int]]:
        """``{queue: {state: n}}`` for every queue with jobs; states with none are omitted.
        Admin pages and CLIs call it freely, so it must not read every job: each store keeps
        its counts as jobs move (contract tests compare them with a recount)."""

    def queued_counts(self, queues: Collection[str]) -> dict[str, dict[str, int]]:
        """``{queue: {state: n}}`` of `queues`, in the waiting and running states
        (`LIVE_STATES`) only; states with none are omitted. The leader reads it every 15 s for
        the queued-jobs gauge, so it must cost in proportion to those jobs, not to the table
        (finished jobs pile up between prunes). This default filters `counts()`, for stores
        whose counts are already cheap; a store whose `counts()` scans every row overrides it.
        """
        wanted = set(queues)
        found: dict[str, dict[str, int]] = {}
        for queue, states in self.counts().items():
            live: dict[str, int] = {s: n for s, n in states.items() if s in LIVE_STATES}
            if queue in wanted and live:
                found[queue] = live
        return found

    @abstractmethod
    def oldest_available(self, queues: Collection[str]) -> dict[str, datetime]:
        """``{queue: the lowest scheduled_at of its available jobs}`` for those of `queues`
        with available jobs: when the queue's oldest available job became available (a job
        is due, and staged, at its `scheduled_at`; a retried or rescued one gets now). The
        leader reads it every 15 s for the latency gauge, so it must not read every job."""

    # -- why a job waits (see `anole_jobs.why`) ----------------------------------------------
    @abstractmethod
    def limit_usage(
        self, queue: str, limits: Limits, *, partition: str, now: datetime
    ) -> LimitUsage:
        """What partition `partition` (a `Limits.key` value) of `queue` uses of the queue's
        limits at `now` (`limits` from the settings, the runtime ones in their place, as
        `claim_limited` reads them). For `jobs.why`: it may read the queue's running jobs."""

    def awaited_signal(self, job_id: int) -> tuple[str, datetime | None] | None:
        """The signal job `job_id` is parked for (`job.wait_for_signal`) and its deadline, else
        None: read from its durable state, so every store answers it alike."""
        state = self.durable_state(job_id)
        if state is None or state.awaiting is None:
            return None
        return state.awaiting, state.waits.get(state.awaiting)

    @abstractmethod
    def retry(self, job_id: int, *, now: datetime) -> JobRecord | None:
        """Make the job ``available`` now (any state; a running worker's later writes then fail
        its fence). A job out of attempts gets one more. None if there is no such job. Wakes the
        job's queue as `insert` does. A running job's attempt ends in its attempts (outcome
        ``restarted``); a completed job's completing attempt, which only its row said, goes into
        its attempts (once) before the next one."""

    @abstractmethod
    def cancel(self, job_id: int, *, now: datetime) -> JobRecord | None:
        """Make a waiting or running job ``cancelled``; a finished job is left as it is. A
        running job's attempt ends in its attempts (outcome ``cancelled``, ended `now`).
        Returns the job as it now is, or None if there is no such job."""

    @abstractmethod
    def delete(self, job_id: int) -> bool:
        """Delete the job whatever its state; False if there was none."""

    # -- queue pause -------------------------------------------------------------------------
    @abstractmethod
    def pause(self, queue: str, *, now: datetime) -> bool:
        """Pause `queue` for every instance: from now on `claim` returns none of its jobs,
        which stay as they are (``available`` ones stay ``available``; running ones finish).
        Any queue name may be paused, configured or not, with jobs or none. Idempotent: True
        when this call paused it, False when it was paused already (its pause time is kept).
        The pause is stored in the store, so durable stores keep it across restarts."""

    @abstractmethod
    def resume(self, queue: str) -> bool:
        """Let `claim` take `queue`'s jobs again. Idempotent: True when it was paused. The
        caller wakes the workers (`wake`) so they claim at once rather than at their poll."""

    @abstractmethod
    def paused_queues(self) -> dict[str, datetime]:
        """``{queue: paused_at}`` for every paused queue."""

    # -- wake-ups ---------------------------------------------------------------------------
    def wake(self, queues: Collection[str]) -> None:
        """Tell waiting workers of new work in `queues` (every queue when empty): those of this
        process always; stores with cross-process wake-ups also tell other processes (NOTIFY,
        PUBLISH). For maintenance (stage, rescue): `insert`, `cron_advance` and `retry` wake
        their queues themselves."""
        self.wakeups.wake(queues)

    def subscribe(self, queues: Collection[str]) -> Subscription:
        """A `Subscription` whose `wait(timeout)` returns when `queues` may have new work.
        Stores with cross-process wake-ups start their listener here (once per store)."""
        return self.wakeups.subscribe(queues)

    @property
    def wakeups(self) -> WakeupHub:
        hub: WakeupHub | None = self.__dict__.get("_wakeup_hub")
        if hub is None:
            hub = self.__dict__.setdefault("_wakeup_hub", WakeupHub())
        return hub

    # -- finished wake-ups (result waiters) ------------------------------------------------
    #: How often a result waiter looks again without a wake-up (a lost message, a store with
    #: no cross-process wake-ups). Never below 0.1 s.
    finished_poll: float = 1.0

    def subscribe_finished(self, job_ids: Collection[int]) -> Subscription:
        """A `Subscription` whose `wait(timeout)` returns when one of `job_ids` may have
        finished (its names are the ids as strings). Stores with cross-process wake-ups start
        their listener for finished jobs here (once per store, only in processes that wait)."""
        return self.finished_wakeups.subscribe([str(job_id) for job_id in job_ids])

    @property
    def finished_wakeups(self) -> WakeupHub:
        """This process's waiters for finished jobs, by job id."""
        hub: WakeupHub | None = self.__dict__.get("_finished_hub")
        if hub is None:
            hub = self.__dict__.setdefault("_finished_hub", WakeupHub())
        return hub

    def wake_finished(self, job_ids: Collection[int]) -> None:
        """Tell this process's result waiters that `job_ids` ended (or were deleted)."""
        hub: WakeupHub | None = self.__dict__.get("_finished_hub")
        if hub is not None and job_ids and hub.has_subscribers():
            hub.wake([str(job_id) for job_id in job_ids])

    def waits_for_finished(self) -> bool:
        """Whether a result waiter of this process is subscribed (nothing to build if not)."""
        hub: WakeupHub | None = self.__dict__.get("_finished_hub")
        return hub is not None and hub.has_subscribers()

    # -- workflows (see "Workflows" in the module docstring) ---------------------------------
    @abstractmethod
    def insert_workflow(
        self, workflow: NewWorkflow, steps: Sequence[NewStep], *, last: bool, now: datetime
    ) -> builtins.list[int]:
        """Insert `steps` of `workflow` (recorded by the first call), ``pending``, with their
        dependencies, in one round trip; return their ids in order. The call with `last`
        set makes every step of the workflow with no dependency left ``available`` (or
        ``scheduled``, its delay counted from `now`) and wakes their queues once committed.
        Joins ``transaction.atomic(using=atomic_alias)`` like `insert`."""

    @abstractmethod
    def workflow(self, workflow_id: str) -> WorkflowRow | None:
        """The workflow with this id and all its steps, or None."""

    @abstractmethod
    def cancel_workflow(self, workflow_id: str, *, now: datetime) -> bool | None:
        """Mark the workflow cancelled and cancel every step not ended, in one write; None
        for an unknown workflow, else whether it was not cancelled before."""

    @abstractmethod
    def dependency_results(self, job_id: int) -> dict[str, Any]:
        """``{step name: result}`` of the completed dependencies of step `job_id` (results
        as JSON values, None when the handler returned None)."""

    # -- statistics --------------------------------------------------------------------------
    @abstractmethod
    def stats(
        self,
        queues: Collection[str] | None,
        *,
        since: datetime,
        until: datetime,
        resolution: Resolution = "minute",
    ) -> StatsByQueue:
        """Per-queue counters of started, completed, retried and dead runs and the run-time
        histogram of the completed ones, per minute or per hour (`resolution`) from the
        minute or hour holding `since` to that holding `until`; ``{queue: [point]}`` in time
        order, for `queues` (every queue with counters when None). Periods with nothing
        counted are left out. The store keeps the counters in the same writes that move the
        jobs (see `anole_jobs.stores.stats` for what counts where), so this reads minutes,
        never jobs. Per hour, an hour rolled up (`roll_up_stats`) is read from its row, an
        hour not rolled yet from its minutes, so the answer does not change with a roll-up.
        Minutes and hours past their horizons (`prune_stats`) may be gone."""

    @abstractmethod
    def roll_up_stats(self, *, now: datetime, keep: timedelta) -> int:
        """Sum the minutes of each hour that ended by `now` into one row per queue and hour:
        from the last hour rolled (summed again) or, before any, the hour of the oldest
        minute kept, through the hour before `now`'s. Writes a row only when it counts more
        moves than the row already there, so it is idempotent and never undoes an earlier
        roll-up whose minutes are gone. `keep`: how long hourly rows are kept (a store whose
        rows expire by themselves sets that expiry; the others wait for `prune_stats`).
        Returns how many rows it wrote. The leader calls it, never a job's path."""

    @abstractmethod
    def prune_stats(self, *, minutes_before: datetime, hours_before: datetime) -> None:
        """Drop the minutes of the whole hours before the one holding `minutes_before`, but
        none of an hour not rolled up yet, and the hourly rows of the hours before the one
        holding `hours_before`. The leader calls it after `roll_up_stats`."""

    # -- bulk actions ----------------------------------------------------------------------
    def act(
        self,
        action: BulkAction,
        ids: Collection[int],
        *,
        state: State | None,
        now: datetime,
    ) -> int:
        """Apply `action` to each job of `ids` (at most `BULK_BATCH_MAX`) that still exists
        and, when `state` is given, is still in that state; return how many it changed.

        - ``retry``: as `retry`, for a job neither ``running`` nor ``available`` (a running
          job stays with its worker; an available one is already due). Changed: it became
          ``available``. A job whose unique key another live job holds is left as it is.
        - ``cancel``: as `cancel`: a waiting or running job becomes ``cancelled`` (a running
          job's worker loses it at its next heartbeat); a finished one is left as it is.
        - ``delete``: as `delete`, whatever the job's state.

        This default calls the one-job methods (each atomic on its own); a store may do a
        batch in one statement or script. Wakes queues and result waiters as those do."""
        done = 0
        for job_id in ids:
            before = self.get(job_id)
            if before is None or (state is not None and before.state != state):
                continue
            if action == "delete":
                done += self.delete(job_id)
            elif action == "cancel":
                if before.state in LIVE_STATES:
                    after = self.cancel(job_id, now=now)
                    done += after is not None and after.state == "cancelled"
            elif before.state not in ("running", "available"):
                after = self.retry(job_id, now=now)
                done += after is not None and after.state == "available"
        return done

    # -- safe deploys (docs/deploys.md) ----------------------------------------------------
    @abstractmethod
    def rename_kind(self, run: RunRef, kind: str) -> bool:
        """Record `kind` as the kind of the job `run` is running (its worker claimed it under
        one of the kind's aliases), fenced like `finish`; whether it was written."""

    @abstractmethod
    def rewrite_payload(
        self, job_id: int, *, args: Mapping[str, Any] | None, result: str | None
    ) -> bool:
        """Replace the stored args (a JSON object) and/or result (JSON text) of job `job_id`
        whatever its state, the others left as they are (None: unchanged); False if there is
        no such job. For `jobs reencrypt` (docs/encryption.md)."""

    @abstractmethod
    def rewrite_steps(self, job_id: int, rewrite: Callable[[str], str]) -> bool:
        """Replace the value (JSON text) of each durable step of job `job_id` with `rewrite`
        of it, whatever the job's state, in one atomic write: a step the job's run records
        meanwhile is kept, and an exception from `rewrite` writes nothing. False if there is
        no such job. For `jobs reencrypt` (docs/encryption.md)."""

    @abstractmethod
    def live_versions(self) -> dict[tuple[str, int], int]:
        """``{(kind, version): n}`` of the jobs not finished (waiting, running or pending), for
        `jobs check-deploy`. It may read every such job (an operator's command, not a hot path).
        """

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections the store opened itself."""

    def ping(self) -> None:
        """One round trip to the store's server, or an error when it does not answer (the
        start-up check of `runjobs`). The default reads a job that never exists."""
        self.get(0)

    def shared_session(self) -> AbstractContextManager[None]:
        """Within this block, this thread's calls use one of the store's shared sessions
        (when `shares_sessions`), held until the block ends; re-entrant. The runtime's
        threads make each store call in such a block (`background.sharing_store_sessions`)."""
        return nullcontext()

    def name_sessions(self, label: str) -> None:  # noqa: B027 - optional hook
        """Name the sessions the store opens from now on after `label` (the runtime's worker
        id), so that the server lists who holds them (PostgreSQL's application_name)."""

    # -- flow control across every worker (docs/limits.md) --------------------------------
    @abstractmethod
    def claim_limited(
        self,
        queue: str,
        *,
        limits: Limits,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> LimitedClaim:
        """`claim`, within the queue's limits: `limits` from the settings, with what
        `set_limits` stored for the queue in their place (read by this claim itself).

        Atomically with the claim (no interleaving of claims from any number of processes can
        exceed them): per partition (`Limits.key` of a job's args), the queue's claimed and
        unfinished jobs stay at most `global_concurrency`, and its claims in any window of
        `rate_limit`'s period at most its count (the claims this one makes are recorded). A
        job a limit holds back is skipped and stays ``available``, its attempt unchanged;
        later jobs of other partitions are still taken, in claim order. With no limit in
        force this is exactly `claim`."""

    @abstractmethod
    def set_limits(self, queue: str, limits: RuntimeLimits) -> None:
        """Store `limits` for `queue`, in place of its settings' (a None field: the setting
        applies; all None: forget the queue's runtime limits). Every claim after this returns
        honours them."""

    @abstractmethod
    def runtime_limits(self) -> dict[str, RuntimeLimits]:
        """``{queue: limits}`` stored by `set_limits` (queues with none are left out)."""

    @abstractmethod
    def held_count(self, queue: str, limits: Limits, *, now: datetime) -> int:
        """How many ``available`` jobs of `queue` its limits (`limits` with the runtime ones
        in their place, as `claim_limited` reads them) hold back at `now`. For admin pages and
        the held-jobs gauge: it may read the queue's available jobs."""

    # -- fair flow and sequences (docs/flow-control.md) -----------------------------------
    @abstractmethod
    def sequence_holder(self, job_id: int) -> int | None:
        """The id of the job that holds job `job_id`'s sequence: the first job of its
        sequence (lowest id) that has not ended (``completed``, ``dead``, ``cancelled``),
        when that is an earlier one. None when the job has no sequence, has ended, leads its
        sequence, or does not exist.

        Claims keep the same rule, atomically: a job of a sequence is claimed only while no
        earlier job of its sequence is in any other state. `claim_limited` keeps it when
        `Limits.sequenced` says so; memory and Redis keep it in every claim, the database
        store in a plain claim whenever this process knows a kind with a sequence among the
        kinds claimed."""

    @abstractmethod
    def fairness_state(self, queue: str) -> FairnessState:
        """The turns of `queue` (see `FairnessState`); empty for a queue without fairness.
        For admin pages and `jobs.why`: it may read the queue's available jobs."""

    # -- workers: which runtimes are alive and what they hold (see stores/workers.py) --------
    @abstractmethod
    def record_worker(self, worker: WorkerRecord) -> None:
        """Create or replace the record of the worker `worker.id`, in one round trip. A
        runtime calls it on its heartbeat cadence, never per job."""

    @abstractmethod
    def workers(self, *, now: datetime) -> builtins.list[WorkerRecord]:
        """The recorded workers whose `expires_at` is later than `now`, by host, pid and id.
        A record past its expiry is never listed, whether or not it was pruned yet."""

    @abstractmethod
    def remove_worker(self, worker_id: str) -> bool:
        """Delete the record of `worker_id` (a runtime stopping cleanly); False if none."""

    @abstractmethod
    def prune_workers(self, *, now: datetime) -> int:
        """Delete every record whose `expires_at` is `now` or earlier (processes that died
        without removing theirs); return how many. The leader calls it with `prune`. A record
        renewed meanwhile is kept: the check and the delete are one atomic step."""

    @abstractmethod
    def request_worker_control(
        self, worker_id: str, control: WorkerControl, *, now: datetime
    ) -> bool:
        """Record an operator's request (quiet or stop) to the worker `worker_id`, listed at
        `now`; False (nothing written) when no such worker is listed. A "stop" recorded
        already is kept over a later "quiet". `workers` shows it on the worker's record; it
        goes with the record (`remove_worker`, `prune_workers`)."""

    @abstractmethod
    def worker_control(self, worker_id: str) -> WorkerControl | None:
        """The request recorded for `worker_id`, or None. One cheap read: each runtime polls
        it about twice a second."""

    # -- the operators' audit log (see stores/audit.py) -------------------------------------
    @abstractmethod
    def record_audit(self, entry: AuditEntry) -> None:
        """Append `entry` (its `id` is ignored: the store numbers entries, higher later)."""

    @abstractmethod
    def audit_entries(
        self, *, action: str | None = None, limit: int = 100, before: int | None = None
    ) -> builtins.list[AuditEntry]:
        """Up to `limit` entries (at most `AUDIT_PAGE_MAX`), newest first; only `action`'s
        when given; only those with an id below `before` when given (the next page)."""

    @abstractmethod
    def prune_audit(self, *, before: datetime) -> int:
        """Delete the entries recorded before `before`; how many. The leader's prune."""

    # -- durable execution: steps, sleeps and signals (see stores/durable.py) ---------------
    @abstractmethod
    def durable_state(self, job_id: int) -> DurableState | None:
        """The job's recorded steps (in the order recorded), its signals, the deadline kept
        per awaited signal name and the name it is parked for; None for an unknown job. One
        read: a handler's first durable call of an attempt makes it."""

    @abstractmethod
    def record_step(self, run: RunRef, *, name: str, value: str, at: datetime) -> bool:
        """Append step `name` with `value` (JSON text) recorded `at`, fenced like `finish`;
        returns whether it was written. A name recorded already is left as it is (and True
        is returned). Joins ``transaction.atomic(using=atomic_alias)`` like `insert`, so an
        atomic step's record commits with the step's own writes."""

    @abstractmethod
    def await_signal(self, run: RunRef, *, name: str | None, deadline: datetime | None) -> bool:
        """Fenced like `finish`: set the name of the signal the job is parked for (None:
        none) and, when `deadline` is given and none is kept for `name` yet, keep it as that
        name's deadline (reruns read it back). Returns whether it was written."""

    @abstractmethod
    def signal(self, job_id: int, *, name: str, payload: str, now: datetime) -> bool | None:
        """Store signal `name` with `payload` (JSON text) on the job: True when stored; False
        (nothing changes) when the job has a signal of that name already or is finished;
        None for an unknown job. In the same write, a ``scheduled`` job parked for `name`
        becomes ``available`` at `now` (its queue woken as `retry` does)."""

    @abstractmethod
    def wake_signalled(self, job_id: int, *, now: datetime) -> bool:
        """Make the job ``available`` at `now` when it is ``scheduled``, parked for a signal
        name and already holds that signal (a signal that came while it was still running);
        returns whether it did. Wakes its queue as `retry` does."""
