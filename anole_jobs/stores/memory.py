"""The memory store: this process only, lost on restart. The reference implementation.

Every other store must behave like this one; the contract suite and the property tests use it
as the model. One lock guards everything; operations are short and never call out.
"""

from __future__ import annotations

import bisect
import builtins
import copy
import heapq
import itertools
import json
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from anole_jobs import timeline
from anole_jobs.core import (
    FINAL_STATES,
    LIST_LIMIT_MAX,
    LIVE_STATES,
    CronState,
    ErrorEntry,
    JobRecord,
    ListFilter,
    State,
    WorkflowRow,
    claim_key,
    dependency_failed,
)
from anole_jobs.limits import Limits, Planner, RuntimeLimits, fair_orders, held_count
from anole_jobs.records import decode_result
from anole_jobs.stores.audit import MemoryAudit
from anole_jobs.stores.base import (
    REPLACED,
    REPLACED_MESSAGE,
    ClaimedJob,
    FairnessState,
    Finish,
    Inserted,
    LimitedClaim,
    LimitUsage,
    NewJob,
    NewStep,
    NewWorkflow,
    Rescued,
    RunRef,
    Store,
    ended_ids,
    woken_queues,
)
from anole_jobs.stores.durable import DurableState, StepEntry, record_steps
from anole_jobs.stores.search import BulkAction, search_matches, searches
from anole_jobs.stores.stats import (
    MinuteCounters,
    Resolution,
    StatsByQueue,
    check_range,
)
from anole_jobs.stores.workers import MemoryWorkers


@dataclass(kw_only=True)
class _Step:
    """A workflow step's bookkeeping (see "Workflows" in stores/base.py)."""

    workflow_id: str
    name: str
    deps: list[int]
    dependents: list[int] = field(default_factory=list)
    waiting_on: int = 0  # dependencies not yet ended (that it waits for)
    ignore_failed: bool = False
    ready_delay: timedelta | None = None
    cancelled_by: int | None = None  # the dependency whose failure cancelled it


@dataclass(kw_only=True)
class _Workflow:
    name: str
    created_at: datetime
    cancelled: bool = False
    ids: list[int] = field(default_factory=list)


@dataclass(kw_only=True)
class _Durable:
    """A job's steps (JSON text values), signals (JSON text payloads), deadlines per awaited
    signal name and the name it is parked for (see stores/durable.py)."""

    steps: list[tuple[str, str, datetime]] = field(default_factory=list)
    signals: dict[str, str] = field(default_factory=dict)
    waits: dict[str, datetime] = field(default_factory=dict)
    awaiting: str | None = None

    def state(self) -> DurableState:
        return DurableState(
            steps=tuple(
                StepEntry(name=name, value=json.loads(value), at=at)
                for name, value, at in self.steps
            ),
            signals={name: json.loads(payload) for name, payload in self.signals.items()},
            waits=dict(self.waits),
            awaiting=self.awaiting,
        )


@dataclass(kw_only=True)
class _Row:
    id: int
    kind: str
    queue: str
    state: State
    args: dict[str, Any]
    meta: dict[str, Any]
    priority: int
    attempt: int
    max_attempts: int
    errors: list[dict[str, Any]]
    created_at: datetime
    scheduled_at: datetime
    attempted_at: datetime | None = None
    finished_at: datetime | None = None
    unique_key: str | None = None
    unique_scope: str = "live"
    token: int = 0
    lease_until: datetime | None = None
    claimed_by: str | None = None
    result: str | None = None  # JSON text, as the other stores keep it
    extra: dict[str, Any] = field(default_factory=dict)
    step: _Step | None = None  # set for a workflow step
    durable: _Durable | None = None  # set once a step, sleep or signal was recorded
    version: int = 1
    # The job's timeline, as the other stores keep it (JSON values, times as ISO text).
    progress: dict[str, Any] | None = None
    logs: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    fair_key: str | None = None  # its fairness value, in a queue with fairness
    fair_order: float | None = None  # its turn among the queue's values (`fair_orders`)
    sequence_key: str | None = None  # the sequence it belongs to

    def record(self) -> JobRecord:
        return JobRecord(
            id=self.id,
            kind=self.kind,
            queue=self.queue,
            state=self.state,
            args=copy.deepcopy(self.args),
            meta=copy.deepcopy(self.meta),
            priority=self.priority,
            attempt=self.attempt,
            max_attempts=self.max_attempts,
            errors=tuple(copy.deepcopy(self.errors)),
            created_at=self.created_at,
            scheduled_at=self.scheduled_at,
            attempted_at=self.attempted_at,
            finished_at=self.finished_at,
            unique_key=self.unique_key,
            result=decode_result(self.result),
            workflow_id=self.step.workflow_id if self.step is not None else None,
            step_name=self.step.name if self.step is not None else None,
            steps=record_steps(self.durable.state().steps) if self.durable is not None else {},
            version=self.version,
        )

    def detailed(self) -> JobRecord:
        """`record` with the job's timeline (what `get` returns)."""
        running = timeline.unwritten_attempt(
            self.state, self.attempt, self.claimed_by, self.attempted_at, self.finished_at
        )
        return replace(
            self.record(),
            progress=timeline.decode_progress(copy.deepcopy(self.progress)),
            logs=timeline.decode_logs(copy.deepcopy(self.logs)),
            attempts=timeline.decode_attempts(copy.deepcopy(self.attempts), running=running),
        )

    def end_attempt(self, outcome: str, at: datetime, started_at: datetime | None = None) -> None:
        """Keep the running attempt in `attempts`, ended `at` with `outcome`."""
        start = started_at or self.attempted_at
        if len(self.attempts) >= timeline.ATTEMPTS_KEPT:
            del self.attempts[0]
        self.attempts.append(
            {
                "attempt": self.attempt,
                "worker": self.claimed_by,
                "started_at": start.isoformat() if start is not None else None,
                "finished_at": at.isoformat(),
                "outcome": outcome,
            }
        )

    def keep_completed_attempt(self, now: datetime) -> None:
        """Before a ``completed`` job runs again: its completing attempt, which only its row
        said, goes into `attempts` (unless an older finish appended it there already)."""
        last = self.attempts[-1] if self.attempts else None
        if (
            last is not None
            and last.get("outcome") == timeline.COMPLETED
            and last.get("attempt") == self.attempt
        ):
            return
        self.end_attempt(timeline.COMPLETED, self.finished_at or now)

    def holds_unique(self) -> bool:
        """Whether this row's unique key blocks another insert of the same key."""
        if self.unique_key is None:
            return False
        return self.unique_scope == "any" or self.state in LIVE_STATES

    def fenced(self, run: RunRef) -> bool:
        return self.state == "running" and self.attempt == run.attempt and self.token == run.token

    def cancelled_during(self, run: RunRef) -> bool:
        """Whether a cancel ended the job while `run` ran (see `Store.record_logs`)."""
        return self.state == "cancelled" and self.attempt == run.attempt and self.token == run.token


def _plain_entry(row: _Row) -> tuple[int, datetime, int]:
    return (-row.priority, row.scheduled_at, row.id)


def _fair_entry(row: _Row) -> tuple[int, float, int]:
    return (-row.priority, row.fair_order, row.id)  # type: ignore[return-value]  # has one


def _fair_claim_order(row: _Row) -> tuple[Any, ...]:
    """A fair claim's order: priority, then turn, then id (a job without a turn, enqueued
    before its queue had fairness, after those of its priority, by time)."""
    if row.fair_order is None:
        return (-row.priority, 1, 0.0, row.scheduled_at.timestamp(), row.id)
    return (-row.priority, 0, row.fair_order, 0.0, row.id)


@dataclass
class _Settled:
    """What settling a workflow's steps did: queues to wake, ids of the steps it ended."""

    queues: set[str] = field(default_factory=set)
    ended: list[int] = field(default_factory=list)


class MemoryStore(MemoryAudit, MemoryWorkers, Store):
    name = "memory"
    supports_other_processes = False  # the jobs live in this process's memory

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._rows: dict[int, _Row] = {}
        self._ids = itertools.count(1)
        self._unique: dict[str, int] = {}  # unique key -> id of the row holding it
        self._debounce: dict[str, int] = {}  # debounce key -> id of the last row it made
        # queue -> ids of its available rows: claims must not walk every finished job.
        self._available: dict[str, set[int]] = {}
        # queue -> a heap of (-priority, scheduled_at, id) in claim order, and the ids that
        # became available since the last claim (pushed then, with the keys they have then).
        # The set above is the truth; a heap entry whose row moved on is dropped when popped.
        self._order: dict[str, list[tuple[int, datetime, int]]] = {}
        self._unordered: dict[str, list[int]] = {}
        # The same for a fair queue's rows that have a turn: (-priority, turn, id).
        self._fair_order_heaps: dict[str, list[tuple[int, float, int]]] = {}
        self._fair_unordered: dict[str, list[int]] = {}
        self._leader: tuple[str, datetime] | None = None
        self._cron: dict[str, CronState] = {}
        self._paused: dict[str, datetime] = {}  # queue -> when it was paused
        self._limits: dict[str, RuntimeLimits] = {}  # queue -> limits set at runtime
        self._windows: dict[str, dict[str, list[float]]] = {}  # queue -> partition -> claims
        # queue -> state -> jobs, kept by every insert, state change and removal below, so
        # counts() does not walk every job (the SQL stores' triggers do the same).
        self._counts: dict[str, dict[str, int]] = {}
        self._workflows: dict[str, _Workflow] = {}
        # Per-queue, per-minute run statistics, kept under the lock with the moves they count.
        self._stats = MinuteCounters()
        # Fair flow: queue -> fairness value -> the last turn given to one of its jobs, and
        # queue -> the latest turn claimed (where a value with nothing waiting starts).
        self._fair_last: dict[str, dict[str, float]] = {}
        self._fair_now: dict[str, float] = {}
        # Sequences: key -> ids of its jobs in id order; ids of ended or deleted jobs at the
        # front are dropped when a claim looks (`_sequence_head`).
        self._sequences: dict[str, list[int]] = {}

    # -- helpers ---------------------------------------------------------------------------
    def _set_state(self, row: _Row, state: State) -> None:
        """Every state change goes through here, to keep the available index and the counts
        right."""
        if row.state == "available":
            self._available.get(row.queue, set()).discard(row.id)
        self._count(row, -1)
        row.state = state
        self._count(row, +1)
        if state == "available":
            self._available.setdefault(row.queue, set()).add(row.id)
            self._unordered.setdefault(row.queue, []).append(row.id)
            if row.fair_order is not None:
                self._fair_unordered.setdefault(row.queue, []).append(row.id)

    def _claim_order(
        self,
        queue: str,
        kinds: Collection[str] | None,
        limit: int,
        *,
        fair: bool = False,
        accept: Callable[[_Row], bool] | None = None,
    ) -> list[_Row]:
        """Up to `limit` available rows of `queue` (of `kinds`), highest priority, then
        oldest `scheduled_at`, then lowest id first: a heap, so a claim costs what it takes,
        not a sort of the whole backlog. With `fair`, the rows that have a turn, by priority,
        then turn, then id (a heap of their own). A job of a sequence an earlier job holds,
        and a row `accept` refuses, are left where they are."""
        heaps: Any
        key: Callable[[_Row], Any]
        if fair:
            heaps, unordered, key = self._fair_order_heaps, self._fair_unordered, _fair_entry
        else:
            heaps, unordered, key = self._order, self._unordered, _plain_entry
        heap: list[Any] = heaps.setdefault(queue, [])
        for row_id in unordered.pop(queue, ()):
            row = self._rows.get(row_id)
            if row is not None:
                heapq.heappush(heap, key(row))
        available = self._available.get(queue, set())
        taken: list[_Row] = []
        skipped: list[Any] = []
        seen: set[int] = set()
        while heap and len(taken) < limit:
            entry = heapq.heappop(heap)
            row = self._rows.get(entry[2])
            if row is None or row.id not in available or row.id in seen:
                continue  # claimed, finished or deleted since it was pushed (or a duplicate)
            current = key(row)
            if entry != current:
                heapq.heappush(heap, current)  # its key changed since: take it in its place
                continue
            seen.add(row.id)
            if kinds is not None and claim_key(row.kind, row.version) not in kinds:
                skipped.append(entry)  # a kind this worker does not handle stays queued
            elif row.sequence_key is not None and self._sequence_held(row):
                skipped.append(entry)  # an earlier job of its sequence has not ended
            elif accept is not None and not accept(row):
                skipped.append(entry)
            else:
                taken.append(row)
        for entry in skipped:
            heapq.heappush(heap, entry)
        if len(heap) > 4 * len(available) + 64:
            # Mostly dead entries (rows deleted or moved on): rebuild from the truth.
            heap[:] = [
                key(r)
                for r in (self._rows[i] for i in available)
                if not fair or r.fair_order is not None
            ]
            heapq.heapify(heap)
        return taken

    def _forget(self, row: _Row) -> None:
        """Every removal goes through here."""
        self._available.get(row.queue, set()).discard(row.id)
        self._count(row, -1)

    def _count(self, row: _Row, delta: int) -> None:
        per_queue = self._counts.setdefault(row.queue, {})
        n = per_queue.get(row.state, 0) + delta
        if n:
            per_queue[row.state] = n
        else:
            del per_queue[row.state]
            if not per_queue:
                del self._counts[row.queue]

    def _holder(self, key: str) -> _Row | None:
        row_id = self._unique.get(key)
        row = self._rows.get(row_id) if row_id is not None else None
        if row is None or row.unique_key != key or not row.holds_unique():
            self._unique.pop(key, None)
            return None
        return row

    def _release_unique(self, row: _Row) -> None:
        key = row.unique_key
        if key is not None and not row.holds_unique() and self._unique.get(key) == row.id:
            del self._unique[key]

    def _insert_one(self, job: NewJob) -> Inserted:
        if job.unique_key is not None:
            holder = self._holder(job.unique_key)
            if holder is not None:
                return Inserted(holder.id, False)
        row = _Row(
            id=next(self._ids),
            kind=job.kind,
            queue=job.queue,
            state=job.state,
            args=copy.deepcopy(dict(job.args)),
            meta=copy.deepcopy(dict(job.meta)),
            priority=job.priority,
            attempt=0,
            max_attempts=job.max_attempts,
            errors=[],
            created_at=job.created_at,
            scheduled_at=job.scheduled_at,
            unique_key=job.unique_key,
            unique_scope=job.unique_scope,
            version=job.version,
        )
        if job.flow:
            self._flow_insert(row, job)
        self._rows[row.id] = row
        self._count(row, +1)
        if row.state == "available":
            self._available.setdefault(row.queue, set()).add(row.id)
            self._unordered.setdefault(row.queue, []).append(row.id)
            if row.fair_order is not None:
                self._fair_unordered.setdefault(row.queue, []).append(row.id)
        if row.unique_key is not None:
            self._unique[row.unique_key] = row.id
        return Inserted(row.id, True)

    # -- enqueueing ------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> list[Inserted]:
        with self._lock:
            results = [self._insert_one(job) for job in jobs]
        self._wake_now(woken_queues(jobs, results))
        return results

    def insert_debounced(self, job: NewJob) -> Inserted:
        key = job.debounce_key
        assert key is not None
        now = job.created_at
        with self._lock:
            row = self._rows.get(self._debounce.get(key, 0))
            if (
                row is not None
                and row.extra.get("debounce_key") == key
                and row.state == "scheduled"
                and row.scheduled_at > now
            ):
                row.args = copy.deepcopy(dict(job.args))
                row.meta = copy.deepcopy(dict(job.meta))
                row.priority = job.priority
                due = job.scheduled_at
                if job.debounce_max_wait is not None:
                    due = min(due, row.created_at + job.debounce_max_wait)
                row.scheduled_at = due
                return Inserted(row.id, False)
            inserted = self._insert_one(job)  # it has no unique key (the service's rule)
            self._rows[inserted.id].extra["debounce_key"] = key
            self._debounce[key] = inserted.id
        self._wake_now(woken_queues([job], [inserted]))
        return inserted

    def insert_replacing(self, job: NewJob) -> Inserted:
        key = job.unique_key
        assert key is not None
        now = job.created_at
        ended: list[int] = []
        with self._lock:
            holder = self._holder(key)
            if holder is not None and holder.state in LIVE_STATES:
                self._set_state(holder, "cancelled")
                holder.finished_at = now
                holder.lease_until = None
                holder.errors.append(
                    ErrorEntry(
                        at=now, attempt=holder.attempt, type=REPLACED, message=REPLACED_MESSAGE
                    ).as_json()
                )
                self._release_unique(holder)
                ended.append(holder.id)
            inserted = self._insert_one(job)
        if ended:
            self.wake_finished(ended)
        self._wake_now(woken_queues([job], [inserted]))
        return inserted

    def _wake_now(self, queues: Collection[str]) -> None:
        # No transactions here: a write is visible, so waiters may look, as soon as it is done.
        if queues:
            self.wakeups.wake(queues)

    # -- running ---------------------------------------------------------------------------
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
        with self._lock:
            if queue in self._paused:
                return []
            return [
                self._claim_row(row, now, lease_until, worker)
                for row in self._claim_order(queue, kinds, max(limit, 0))
            ]

    def heartbeat(self, runs: Collection[RunRef], *, lease_until: datetime) -> set[RunRef]:
        held = set()
        with self._lock:
            for run in runs:
                row = self._rows.get(run.id)
                if row is not None and row.fenced(run):
                    row.lease_until = lease_until
                    held.add(run)
        return held

    def finish(self, results: Sequence[Finish]) -> list[bool]:
        settled = _Settled()
        with self._lock:
            written = [self._finish_one(result, settled) for result in results]
            self._count_runs(results, written)
        if self.waits_for_finished():
            self.wake_finished([*ended_ids(results, written), *settled.ended])
        self._wake_now(settled.queues)
        return written

    def _finish_one(self, result: Finish, settled: _Settled) -> bool:
        row = self._rows.get(result.run.id)
        if row is None or not row.fenced(result.run):
            return False
        if timeline.kept(result.outcome):
            row.end_attempt(result.outcome, result.at, result.started_at)
        if result.progress is not None:
            row.progress = timeline_json(result.progress)
        if result.logs is not None:
            row.logs = [*row.logs, *timeline_json(result.logs)][-result.logs_kept :]
        self._set_state(row, result.state)
        row.lease_until = None
        if result.error is not None:
            row.errors.append(result.error.as_json())
        if result.give_back_attempt:
            row.attempt -= 1
        if result.state in FINAL_STATES:
            row.finished_at = result.at
        if result.state == "completed":
            row.result = result.result
        if result.scheduled_at is not None:
            row.scheduled_at = result.scheduled_at
        if result.started_at is not None:
            row.attempted_at = result.started_at
        self._release_unique(row)
        if row.step is not None and row.step.dependents and result.state in FINAL_STATES:
            self._settle(row, result.at, settled)
        return True

    def record_progress(self, run: RunRef, progress: str) -> bool:
        with self._lock:
            row = self._rows.get(run.id)
            if row is None or not row.fenced(run):
                return False
            row.progress = timeline_json(progress)
            return True

    def record_logs(self, run: RunRef, logs: str, keep: int) -> bool:
        with self._lock:
            row = self._rows.get(run.id)
            if row is None or not (row.fenced(run) or row.cancelled_during(run)):
                return False
            row.logs = [*row.logs, *timeline_json(logs)][-keep:]
            return True

    def update_meta(self, run: RunRef, meta: Mapping[str, Any]) -> bool:
        with self._lock:
            row = self._rows.get(run.id)
            if row is None or not row.fenced(run):
                return False
            row.meta = copy.deepcopy(dict(meta))
            return True

    # -- maintenance -----------------------------------------------------------------------
    def stage(self, *, now: datetime, limit: int = 10_000) -> int:
        with self._lock:
            due = [
                row
                for row in self._rows.values()
                if row.state in ("scheduled", "retrying") and row.scheduled_at <= now
            ]
            due.sort(key=lambda r: (r.scheduled_at, r.id))
            for row in due[:limit]:
                self._set_state(row, "available")
            return min(len(due), limit)

    def rescue(self, *, now: datetime, limit: int = 10_000) -> list[Rescued]:
        rescued = []
        settled = _Settled()
        with self._lock:
            lapsed = [
                row
                for row in self._rows.values()
                if row.state == "running" and row.lease_until is not None and row.lease_until < now
            ]
            lapsed.sort(key=lambda r: r.id)
            for row in lapsed[:limit]:
                row.errors.append(
                    ErrorEntry(
                        at=now,
                        attempt=row.attempt,
                        type="LeaseExpired",
                        message=f"the lease ended at {row.lease_until.isoformat()}"  # type: ignore[union-attr]
                        " before the run reported",
                    ).as_json()
                )
                row.lease_until = None
                row.end_attempt(timeline.RESCUED, now)
                self._stats.failed(row.queue, now, dead=row.attempt >= row.max_attempts)
                if row.attempt >= row.max_attempts:
                    self._set_state(row, "dead")
                    row.finished_at = now
                    self._release_unique(row)
                    if row.step is not None:
                        self._settle(row, now, settled)
                else:
                    self._set_state(row, "available")
                    row.scheduled_at = now
                rescued.append(Rescued(id=row.id, kind=row.kind, queue=row.queue, state=row.state))
        self.wake_finished([*(r.id for r in rescued if r.state == "dead"), *settled.ended])
        self._wake_now(settled.queues)
        return rescued

    def prune(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> int:
        with self._lock:
            doomed = [
                row.id
                for row in self._rows.values()
                if row.state in horizons
                and row.finished_at is not None
                and row.finished_at < now - horizons[row.state]
            ][:limit]
            for row_id in doomed:
                row = self._rows.pop(row_id)
                self._forget(row)
                if row.unique_key is not None and self._unique.get(row.unique_key) == row_id:
                    del self._unique[row.unique_key]
                self._forget_debounce(row)
                if row.step is not None:
                    self._forget_step(row)
            return len(doomed)

    def expired(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> builtins.list[JobRecord]:
        with self._lock:
            return [
                row.record()
                for row in self._rows.values()
                if row.state in horizons
                and row.finished_at is not None
                and row.finished_at < now - horizons[row.state]
            ][:limit]

    def waiting_kinds(self, queues: Collection[str]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        with self._lock:
            for row in self._rows.values():
                if row.state == "available" and row.queue in queues:
                    found.setdefault(row.queue, set()).add(row.kind)
        return found

    def rename_kind(self, run: RunRef, kind: str) -> bool:
        with self._lock:
            row = self._rows.get(run.id)
            if row is None or not row.fenced(run):
                return False
            row.kind = kind
            return True

    def rewrite_payload(
        self, job_id: int, *, args: Mapping[str, Any] | None, result: str | None
    ) -> bool:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                return False
            if args is not None:
                row.args = copy.deepcopy(dict(args))
            if result is not None:
                row.result = result
            return True

    def rewrite_steps(self, job_id: int, rewrite: Callable[[str], str]) -> bool:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                return False
            if row.durable is not None:
                # All computed before any is replaced: an exception leaves every step as it was.
                steps = [(name, rewrite(value), at) for name, value, at in row.durable.steps]
                row.durable.steps = steps
            return True

    def live_versions(self) -> dict[tuple[str, int], int]:
        found: dict[tuple[str, int], int] = {}
        with self._lock:
            for row in self._rows.values():
                if row.state not in FINAL_STATES:
                    key = (row.kind, row.version)
                    found[key] = found.get(key, 0) + 1
        return found

    def lead(self, *, instance: str, now: datetime, ttl: timedelta) -> bool:
        with self._lock:
            if self._leader is None or self._leader[0] == instance or self._leader[1] <= now:
                self._leader = (instance, now + ttl)
                return True
            return False

    def resign(self, *, instance: str) -> None:
        with self._lock:
            if self._leader is not None and self._leader[0] == instance:
                self._leader = None

    # -- cron ------------------------------------------------------------------------------
    def cron_states(self, names: Collection[str]) -> dict[str, CronState]:
        with self._lock:
            return {name: self._cron[name] for name in names if name in self._cron}

    def cron_advance(self, *, name: str, tick: datetime, job: NewJob | None) -> Inserted | None:
        with self._lock:
            state = self._cron.get(name)
            if state is not None and state.last_tick_at is not None and state.last_tick_at >= tick:
                return None
            inserted = self._insert_one(job) if job is not None else None
            self._cron[name] = CronState(
                name=name,
                last_tick_at=tick,
                last_job_id=inserted.id if inserted else (state.last_job_id if state else None),
            )
        if job is not None:
            self._wake_now(woken_queues([job], [inserted]))
        return inserted

    def cron_trigger(self, *, name: str, job: NewJob) -> Inserted:
        with self._lock:
            inserted = self._insert_one(job)
            if inserted.inserted:
                state = self._cron.get(name)
                self._cron[name] = CronState(
                    name=name,
                    last_tick_at=state.last_tick_at if state is not None else None,
                    last_job_id=inserted.id,
                )
        self._wake_now(woken_queues([job], [inserted]))
        return inserted

    # -- admin -----------------------------------------------------------------------------
    def get(self, job_id: int) -> JobRecord | None:
        with self._lock:
            row = self._rows.get(job_id)
            return row.detailed() if row is not None else None

    def list(self, filter: ListFilter) -> list[JobRecord]:
        limit = max(0, min(filter.limit, LIST_LIMIT_MAX))
        with self._lock:
            rows = [
                row
                for row in self._candidates(filter)
                if (filter.state is None or row.state == filter.state)
                and (filter.queue is None or row.queue == filter.queue)
                and (filter.kind is None or row.kind == filter.kind)
                and (filter.after is None or row.id < filter.after)
                and (
                    filter.workflow is None
                    or (row.step is not None and row.step.workflow_id == filter.workflow)
                )
                and (filter.min_id is None or row.id >= filter.min_id)
                and (
                    not searches(filter)
                    or search_matches(filter, kind=row.kind, args=row.args, errors=row.errors)
                )
            ]
            rows.sort(key=lambda r: r.id, reverse=True)
            return [row.record() for row in rows[:limit]]

    def _candidates(self, filter: ListFilter) -> Iterable[_Row]:
        """The rows a listing looks at: a search's id window only, when it names one."""
        if filter.min_id is None or filter.after is None:
            return list(self._rows.values())
        window = range(filter.after - 1, filter.min_id - 1, -1)
        return [row for row in map(self._rows.get, window) if row is not None]

    def act(
        self, action: BulkAction, ids: Collection[int], *, state: State | None, now: datetime
    ) -> int:
        # The one-job methods under this store's (re-entrant) lock: the batch is atomic.
        with self._lock:
            return super().act(action, ids, state=state, now=now)

    def counts(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {queue: dict(states) for queue, states in self._counts.items()}

    def oldest_available(self, queues: Collection[str]) -> dict[str, datetime]:
        found: dict[str, datetime] = {}
        with self._lock:
            for queue in queues:
                times = [self._rows[i].scheduled_at for i in self._available.get(queue, ())]
                if times:
                    found[queue] = min(times)
        return found

    def limit_usage(
        self, queue: str, limits: Limits, *, partition: str, now: datetime
    ) -> LimitUsage:
        with self._lock:
            effective = limits.overlay(self._limits.get(queue))
            running = self._running_by_partition(queue, effective).get(partition, 0)
            claims: tuple[float, ...] = ()
            rate = effective.rate_limit
            if rate is not None:
                since = now.timestamp() - rate.seconds
                times = self._windows.get(queue, {}).get(partition, [])
                claims = tuple(sorted(t for t in times if t > since))
        return LimitUsage(limits=effective, running=running, claims=claims)

    def retry(self, job_id: int, *, now: datetime) -> JobRecord | None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                return None
            if row.state == "pending":
                return row.record()  # it runs when its dependencies allow, not before
            reopen = row.step is not None and row.state in ("dead", "cancelled")
            if row.unique_key is not None and not row.holds_unique():
                holder = self._holder(row.unique_key)
                if holder is not None and holder.id != row.id:
                    # Reviving it would make two live jobs with one key: leave it as it is.
                    return row.record()
                self._unique[row.unique_key] = row.id
            if row.attempt >= row.max_attempts:
                row.max_attempts = row.attempt + 1
            if row.state == "running":
                row.end_attempt(timeline.RESTARTED, now)
            elif row.state == "completed":
                row.keep_completed_attempt(now)
            self._sequence_rejoin(row)
            self._set_state(row, "available")
            row.scheduled_at = now
            row.finished_at = None
            row.lease_until = None
            row.result = None  # it runs again: its result will be the next completion's
            if reopen:
                self._reopen(row)
            record = row.record()
        self._wake_now({record.queue})
        return record

    def cancel(self, job_id: int, *, now: datetime) -> JobRecord | None:
        settled = _Settled()
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                return None
            cancelled = row.state in LIVE_STATES
            if cancelled:
                if row.state == "running":
                    row.end_attempt(timeline.CANCELLED, now)
                self._set_state(row, "cancelled")
                row.finished_at = now
                row.lease_until = None
                self._release_unique(row)
                if row.step is not None:
                    row.step.cancelled_by = None
                    self._settle(row, now, settled)
            record = row.record()
        if cancelled:
            self.wake_finished([job_id, *settled.ended])
            self._wake_now(settled.queues)
        return record

    def delete(self, job_id: int) -> bool:
        with self._lock:
            row = self._rows.pop(job_id, None)
            if row is None:
                return False
            self._forget(row)
            if row.step is not None:
                self._forget_step(row)  # its dependents stay as they are (cancel settles them)
            if row.unique_key is not None and self._unique.get(row.unique_key) == job_id:
                del self._unique[row.unique_key]
            self._forget_debounce(row)
        self.wake_finished([job_id])
        return True

    def _forget_debounce(self, row: _Row) -> None:
        key = row.extra.get("debounce_key")
        if key is not None and self._debounce.get(key) == row.id:
            del self._debounce[key]

    # -- queue pause ------------------------------------------------------------------------
    def pause(self, queue: str, *, now: datetime) -> bool:
        with self._lock:
            if queue in self._paused:
                return False
            self._paused[queue] = now
            return True

    def resume(self, queue: str) -> bool:
        with self._lock:
            return self._paused.pop(queue, None) is not None

    def paused_queues(self) -> dict[str, datetime]:
        with self._lock:
            return dict(self._paused)

    # -- workflows ---------------------------------------------------------------------------
    def insert_workflow(
        self, workflow: NewWorkflow, steps: Sequence[NewStep], *, last: bool, now: datetime
    ) -> builtins.list[int]:
        settled = _Settled()
        with self._lock:
            known = self._workflows.setdefault(
                workflow.id, _Workflow(name=workflow.name, created_at=workflow.created_at)
            )
            ids: list[int] = []
            for step in steps:
                row_id = self._insert_one(replace(step.job, state="pending", unique_key=None)).id
                row = self._rows[row_id]
                deps = [ids[i] for i in step.after] + list(step.after_ids)
                row.step = _Step(
                    workflow_id=workflow.id,
                    name=step.name,
                    deps=deps,
                    waiting_on=len(deps),
                    ignore_failed=step.ignore_failed,
                    ready_delay=step.ready_delay,
                )
                for dep in deps:
                    self._rows[dep].step.dependents.append(row_id)  # type: ignore[union-attr]
                known.ids.append(row_id)
                ids.append(row_id)
            if last:
                for row_id in known.ids:
                    row = self._rows[row_id]
                    if row.state == "pending" and row.step is not None and not row.step.waiting_on:
                        self._make_ready(row, now, settled)
        self._wake_now(settled.queues)
        return ids

    def workflow(self, workflow_id: str) -> WorkflowRow | None:
        with self._lock:
            known = self._workflows.get(workflow_id)
            if known is None:
                return None
            rows = [self._rows[i] for i in known.ids if i in self._rows]
            return WorkflowRow(
                id=workflow_id,
                name=known.name,
                created_at=known.created_at,
                cancelled=known.cancelled,
                steps=tuple(row.record() for row in rows),
                dependencies={row.id: tuple(row.step.deps) for row in rows if row.step},
            )

    def cancel_workflow(self, workflow_id: str, *, now: datetime) -> bool | None:
        ended: list[int] = []
        with self._lock:
            known = self._workflows.get(workflow_id)
            if known is None:
                return None
            first = not known.cancelled
            known.cancelled = True
            for row_id in known.ids:
                row = self._rows.get(row_id)
                if row is not None and row.state in LIVE_STATES:
                    if row.state == "running":
                        row.end_attempt(timeline.CANCELLED, now)
                    self._set_state(row, "cancelled")
                    row.finished_at = now
                    row.lease_until = None
                    ended.append(row_id)
        self.wake_finished(ended)
        return first

    def dependency_results(self, job_id: int) -> dict[str, Any]:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None or row.step is None:
                return {}
            found = {}
            for dep_id in row.step.deps:
                dep = self._rows.get(dep_id)
                if dep is not None and dep.step is not None and dep.state == "completed":
                    found[dep.step.name] = decode_result(dep.result)
            return found

    def _make_ready(self, row: _Row, now: datetime, settled: _Settled) -> None:
        """A pending step whose dependencies all ended: due now, or after its delay."""
        step = row.step
        assert step is not None
        if step.ready_delay is not None:
            row.scheduled_at = now + step.ready_delay
        elif row.scheduled_at < now:
            row.scheduled_at = now
        if row.scheduled_at > now:
            self._set_state(row, "scheduled")
        else:
            self._set_state(row, "available")
            settled.queues.add(row.queue)

    def _settle(self, ended: _Row, now: datetime, settled: _Settled) -> None:
        """`ended` (a step) just ended: release or cancel its pending dependents, transitively."""
        todo = [ended]
        while todo:
            row = todo.pop()
            assert row.step is not None
            failed = row.state != "completed"
            for child_id in row.step.dependents:
                child = self._rows.get(child_id)
                if child is None or child.state != "pending" or child.step is None:
                    continue
                if failed and not child.step.ignore_failed:
                    self._set_state(child, "cancelled")
                    at = now
                    child.finished_at = at
                    child.step.cancelled_by = row.id
                    child.errors.append(
                        ErrorEntry(
                            at=at,
                            attempt=child.attempt,
                            type="DependencyFailed",
                            message=dependency_failed(row.step.name, row.state),
                        ).as_json()
                    )
                    settled.ended.append(child.id)
                    todo.append(child)
                    continue
                child.step.waiting_on -= 1
                if child.step.waiting_on <= 0:
                    self._make_ready(child, now, settled)

    def _reopen(self, retried: _Row) -> None:
        """`retried` (a step that was dead or cancelled) runs again: the dependents its ending
        cancelled wait for it again, transitively, unless another dependency failed too."""
        todo = [retried]
        while todo:
            row = todo.pop()
            assert row.step is not None
            for child_id in row.step.dependents:
                child = self._rows.get(child_id)
                if child is None or child.step is None or child.state != "cancelled":
                    continue
                if child.step.cancelled_by != row.id:
                    continue
                deps = [self._rows.get(i) for i in child.step.deps]
                blocker = next(
                    (
                        dep
                        for dep in deps
                        if dep is not None
                        and dep.state in ("dead", "cancelled")
                        and not child.step.ignore_failed
                    ),
                    None,
                )
                if blocker is not None:
                    child.step.cancelled_by = blocker.id  # its retry reopens this one
                    continue
                self._set_state(child, "pending")
                child.finished_at = None
                child.step.cancelled_by = None
                child.step.waiting_on = sum(
                    1 for dep in deps if dep is not None and dep.state not in FINAL_STATES
                )
                todo.append(child)

    def _forget_step(self, row: _Row) -> None:
        """A step's row is gone (pruned or deleted): drop its workflow once it has no step."""
        assert row.step is not None
        known = self._workflows.get(row.step.workflow_id)
        if known is not None and not any(i in self._rows for i in known.ids):
            del self._workflows[row.step.workflow_id]

    # -- statistics --------------------------------------------------------------------------
    def _count_runs(self, results: Sequence[Finish], written: Sequence[bool]) -> None:
        """Count the runs a `finish` batch ended (under the lock, after the writes)."""
        for result, ok in zip(results, written, strict=True):
            if not ok:
                continue
            row = self._rows[result.run.id]
            if result.state == "completed":
                self._stats.completed(row.queue, row.attempted_at, result.at)
            elif result.state == "dead":
                self._stats.failed(row.queue, result.at, dead=True)
            elif result.error is not None and not result.give_back_attempt:
                self._stats.failed(row.queue, result.at, dead=False)  # waits to run again

    def stats(
        self,
        queues: Collection[str] | None,
        *,
        since: datetime,
        until: datetime,
        resolution: Resolution = "minute",
    ) -> StatsByQueue:
        check_range(since, until, resolution)
        with self._lock:
            return self._stats.query(queues, since, until, resolution)

    def roll_up_stats(self, *, now: datetime, keep: timedelta) -> int:
        with self._lock:
            return self._stats.roll_up(now)

    def prune_stats(self, *, minutes_before: datetime, hours_before: datetime) -> None:
        with self._lock:
            self._stats.prune(minutes_before, hours_before)

    # -- flow control across every worker ---------------------------------------------------
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
        with self._lock:
            effective = limits.overlay(self._limits.get(queue))
            if effective.fairness is not None and queue not in self._paused:
                return self._claim_fair(
                    queue, effective, kinds, max(limit, 0), now, lease_until, worker
                )
            if not effective.active or queue in self._paused:
                jobs = self.claim(
                    queue,
                    kinds=kinds,
                    limit=limit,
                    now=now,
                    lease_until=lease_until,
                    worker=worker,
                )
                return LimitedClaim(jobs=jobs)
            rows = sorted(
                (
                    self._rows[i]
                    for i in self._available.get(queue, ())
                    if kinds is None
                    or claim_key(self._rows[i].kind, self._rows[i].version) in kinds
                ),
                key=lambda r: (-r.priority, r.scheduled_at, r.id),
            )
            planner = Planner(
                effective,
                now=now.timestamp(),
                want=max(limit, 0),
                running=self._running_by_partition(queue, effective),
                window=self._windows.get(queue, {}),
            )
            planner.offer(
                (index, effective.key(row.args))
                for index, row in enumerate(rows)
                if row.sequence_key is None or not self._sequence_held(row)
            )
            plan = planner.finish()
            self._windows[queue] = plan.window
            jobs = [self._claim_row(rows[i], now, lease_until, worker) for i in plan.taken]
            reopens = None
            if plan.reopens_at is not None:
                reopens = now + timedelta(seconds=plan.reopens_at - now.timestamp())
            return LimitedClaim(jobs=jobs, held=plan.held, reopens_at=reopens)

    def _claim_fair(
        self,
        queue: str,
        limits: Limits,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> LimitedClaim:
        """A claim of a queue with fairness (under the lock): its available jobs by priority,
        then turn, then id (jobs enqueued before the queue had fairness after them, in their
        own order); an earlier job of a sequence not ended holds the later ones; within the
        limits when active (then from a sort of the queue's available jobs, as the limited
        claim does)."""
        if not limits.active:
            taken = self._claim_order(queue, kinds, limit, fair=True)
            if len(taken) < limit:
                taken += self._claim_order(
                    queue, kinds, limit - len(taken), accept=lambda row: row.fair_order is None
                )
            return LimitedClaim(jobs=[self._claim_row(r, now, lease_until, worker) for r in taken])
        rows = sorted(
            (
                self._rows[i]
                for i in self._available.get(queue, ())
                if kinds is None or self._rows[i].kind in kinds
            ),
            key=_fair_claim_order,
        )
        free = (
            (index, row)
            for index, row in enumerate(rows)
            if row.sequence_key is None or not self._sequence_held(row)
        )
        planner = Planner(
            limits,
            now=now.timestamp(),
            want=limit,
            running=self._running_by_partition(queue, limits),
            window=self._windows.get(queue, {}),
        )
        planner.offer((index, limits.key(row.args)) for index, row in free)
        plan = planner.finish()
        self._windows[queue] = plan.window
        jobs = [self._claim_row(rows[i], now, lease_until, worker) for i in plan.taken]
        reopens = None
        if plan.reopens_at is not None:
            reopens = now + timedelta(seconds=plan.reopens_at - now.timestamp())
        return LimitedClaim(jobs=jobs, held=plan.held, reopens_at=reopens)

    # -- fair flow and sequences -------------------------------------------------------------
    def _flow_insert(self, row: _Row, job: NewJob) -> None:
        """Give a new job its turn and its place in its sequence (under the lock)."""
        row.fair_key = job.fair_key
        row.sequence_key = job.sequence_key
        if job.fair_key is not None:
            lasts = self._fair_last.setdefault(job.queue, {})
            start = self._fair_now.get(job.queue, 0.0)
            (row.fair_order,) = fair_orders(start, lasts.get(job.fair_key), job.fair_weight, 1)
            lasts[job.fair_key] = row.fair_order
        if job.sequence_key is not None:
            self._sequences.setdefault(job.sequence_key, []).append(row.id)

    def _sequence_head(self, key: str) -> int | None:
        """The id of the first job of sequence `key` that has not ended (None: none)."""
        ids = self._sequences.get(key)
        drop = 0
        while ids is not None and drop < len(ids):
            first = self._rows.get(ids[drop])
            if first is not None and first.sequence_key == key and first.state not in FINAL_STATES:
                break
            drop += 1
        if ids is None:
            return None
        if drop:
            del ids[:drop]
        if not ids:
            del self._sequences[key]
            return None
        return ids[0]

    def _sequence_held(self, row: _Row) -> bool:
        ids = self._sequences.get(row.sequence_key)  # type: ignore[arg-type]
        if ids and ids[0] == row.id:
            return False  # it leads its sequence (the usual case)
        head = self._sequence_head(row.sequence_key)  # type: ignore[arg-type]
        return head is not None and head < row.id

    def _sequence_rejoin(self, row: _Row) -> None:
        """A job of a sequence runs again (a retry after it ended): it holds its place."""
        if row.sequence_key is not None:
            ids = self._sequences.setdefault(row.sequence_key, [])
            if row.id not in ids:
                bisect.insort(ids, row.id)

    def sequence_holder(self, job_id: int) -> int | None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None or row.sequence_key is None or row.state in FINAL_STATES:
                return None
            head = self._sequence_head(row.sequence_key)
            return head if head is not None and head < row.id else None

    def fairness_state(self, queue: str) -> FairnessState:
        with self._lock:
            waiting: dict[str, int] = {}
            for i in self._available.get(queue, ()):
                key = self._rows[i].fair_key
                if key is not None:
                    waiting[key] = waiting.get(key, 0) + 1
            return FairnessState(
                turn=self._fair_now.get(queue, 0.0),
                waiting=waiting,
                last=dict(self._fair_last.get(queue, {})),
            )

    def _running_by_partition(self, queue: str, limits: Limits) -> dict[str, int]:
        running: dict[str, int] = {}
        for row in self._rows.values():
            if row.queue == queue and row.state == "running":
                key = limits.key(row.args)
                running[key] = running.get(key, 0) + 1
        return running

    def _claim_row(
        self, row: _Row, now: datetime, lease_until: datetime, worker: str
    ) -> ClaimedJob:
        """Claim `row` (under the lock), for a plain claim and a limited one alike."""
        self._set_state(row, "running")
        row.attempt += 1
        row.token += 1
        row.attempted_at = now
        row.lease_until = lease_until
        row.claimed_by = worker
        if row.fair_order is not None and row.fair_order > self._fair_now.get(row.queue, 0.0):
            self._fair_now[row.queue] = row.fair_order
        self._stats.started(row.queue, now)
        return ClaimedJob(
            record=row.record(),
            run=RunRef(row.id, row.attempt, row.token),
            lease_until=lease_until,
        )

    def set_limits(self, queue: str, limits: RuntimeLimits) -> None:
        with self._lock:
            if limits.empty:
                self._limits.pop(queue, None)
            else:
                self._limits[queue] = limits

    def runtime_limits(self) -> dict[str, RuntimeLimits]:
        with self._lock:
            return dict(self._limits)

    def held_count(self, queue: str, limits: Limits, *, now: datetime) -> int:
        with self._lock:
            effective = limits.overlay(self._limits.get(queue))
            if not effective.active:
                return 0
            available: dict[str, int] = {}
            for i in self._available.get(queue, ()):
                key = effective.key(self._rows[i].args)
                available[key] = available.get(key, 0) + 1
            return held_count(
                effective,
                now=now.timestamp(),
                available=available,
                running=self._running_by_partition(queue, effective),
                window=self._windows.get(queue, {}),
            )

    # -- durable execution (see stores/durable.py) -------------------------------------------
    def durable_state(self, job_id: int) -> DurableState | None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                return None
            return row.durable.state() if row.durable is not None else DurableState()

    def record_step(self, run: RunRef, *, name: str, value: str, at: datetime) -> bool:
        with self._lock:
            row = self._rows.get(run.id)
            if row is None or not row.fenced(run):
                return False
            durable = row.durable = row.durable or _Durable()
            if all(step[0] != name for step in durable.steps):
                durable.steps.append((name, value, at))
            return True

    def await_signal(self, run: RunRef, *, name: str | None, deadline: datetime | None) -> bool:
        with self._lock:
            row = self._rows.get(run.id)
            if row is None or not row.fenced(run):
                return False
            durable = row.durable = row.durable or _Durable()
            durable.awaiting = name
            if name is not None and deadline is not None:
                durable.waits.setdefault(name, deadline)
            return True

    def signal(self, job_id: int, *, name: str, payload: str, now: datetime) -> bool | None:
        with self._lock:
            row = self._rows.get(job_id)
            if row is None:
                return None
            durable = row.durable or _Durable()
            if row.state in FINAL_STATES or name in durable.signals:
                return False
            row.durable = durable
            durable.signals[name] = payload
            woken = self._wake_parked(row, now)
        if woken:
            self._wake_now({row.queue})
        return True

    def wake_signalled(self, job_id: int, *, now: datetime) -> bool:
        with self._lock:
            row = self._rows.get(job_id)
            woken = row is not None and self._wake_parked(row, now)
        if woken and row is not None:
            self._wake_now({row.queue})
        return woken

    def _wake_parked(self, row: _Row, now: datetime) -> bool:
        """Under the lock: `row` becomes available now if it is parked for a signal it holds."""
        durable = row.durable
        if (
            row.state != "scheduled"
            or durable is None
            or durable.awaiting is None
            or durable.awaiting not in durable.signals
        ):
            return False
        self._set_state(row, "available")
        row.scheduled_at = now
        return True


def timeline_json(text: str) -> Any:
    """A timeline value as the other stores keep it: JSON text decoded."""
    return json.loads(text)
