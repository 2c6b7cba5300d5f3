"""The Redis store on a Redis Cluster (docs/deployment.md, "Redis Cluster").

`RedisClusterStore` is `RedisStore` with every script sent to the slot of the data it touches.
The key names and the scripts are the same as on one node; only the prefix changes (see
"Redis Cluster" in `keys`): the keys of the queues of one hash slot carry that slot's hash tag,
so a script about one queue, or about jobs of one slot, touches one slot. The method bodies of
`RedisStore` are reused: a method that works on one slot runs inside `_at(keys)`, which makes
`self.keys` (a context variable, so per thread) that slot's keys and sends its scripts there.

What spans queues is done per slot from here and merged: counts, lists, run statistics, pauses,
limits, cron states; the periodic maintenance (due jobs, lapsed leases, pruning) runs once per
slot of the known queues. Leadership, worker records, the id counter and the set of known queues
live in the slot of the global hash tag and are touched by scripts that need nothing else.

`ClusterConnectionFactory` lets django-redis hand out a `redis.cluster.RedisCluster`, which is
what makes the store a cluster store.
"""

from __future__ import annotations

import builtins
import contextlib
import contextvars
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import urlparse

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from anole_jobs.core import (
    LIST_LIMIT_MAX,
    CronState,
    JobRecord,
    ListFilter,
    WorkflowRow,
    split_claim_key,
)
from anole_jobs.errors import ConfigurationError, InvalidJob
from anole_jobs.limits import RuntimeLimits
from anole_jobs.stores.base import Finish, Inserted, NewJob, NewStep, NewWorkflow, Rescued, RunRef
from anole_jobs.stores.durable import DurableState
from anole_jobs.stores.redis.keys import SLOTS, Keys, job_slot, queue_slot
from anole_jobs.stores.redis.records import as_text
from anole_jobs.stores.redis.store import INSERT_STATES, RedisStore
from anole_jobs.stores.redis.unavailable import CLUSTER_ERRORS, read_failed, write_failed
from anole_jobs.stores.stats import Resolution, StatsByQueue

__all__ = ["ClusterConnectionFactory", "RedisClusterStore", "is_cluster_client"]

#: Scripts sent to the slot of the queue named by their first argument.
BY_QUEUE = frozenset({"claim", "claim_limited", "limits_held", "limit_usage", "fairness_state"})
#: Scripts sent to the slot of the job whose id is their first argument.
BY_ID = frozenset(
    {
        "retry",
        "cancel",
        "delete",
        "update_meta",
        "dependency_results",
        "record_step",
        "await_signal",
        "signal",
        "wake_signalled",
        "rename_kind",
        "record_progress",
        "record_logs",
        "sequence_holder",
        "rewrite_payload",
        "rewrite_steps",
    }
)
#: Scripts that touch only keys of the global hash tag.
GLOBAL = frozenset(
    {
        "lead",
        "resign",
        "record_worker",
        "remove_worker",
        "prune_workers",
        "reserve",
        "cron_advance",
        "worker_control",
        "audit_add",
        "audit_prune",
    }
)
#: Workflows whose slot this store remembers (a workflow is written by one call of the service,
#: chunk after chunk, so its later chunks are checked against its first).
WORKFLOW_MEMORY = 1_000

#: (the slot's keys, the first reserved job id or None) while a method works on one slot.
_ROUTE: contextvars.ContextVar[tuple[Keys, int | None] | None] = contextvars.ContextVar(
    "anole_jobs_redis_cluster_route", default=None
)


def is_cluster_client(client: Any) -> bool:
    from redis.cluster import RedisCluster

    return isinstance(client, (RedisCluster, LazyRedisCluster))


def check_prefix(prefix: str) -> str | None:
    """Why `prefix` cannot be a key prefix on a cluster, or None."""
    bad = [c for c in "{}\0" if c in prefix]
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        return (
            f"KEY_PREFIX {prefix!r} contains {shown}: on a Redis Cluster the store puts a hash "
            "tag after the prefix, and a brace in the prefix would put every key in one slot"
        )
    return None


class RedisClusterStore(RedisStore):
    """`RedisStore` on a Redis Cluster (see the module docstring)."""

    cluster = True
    queues_fail_apart = True  # each queue lives on one master
    unique_across_queues = False  # a unique key holds within its queue's hash slot

    def __init__(
        self, client: Any, *, key_prefix: str, alias: str | None = None, pool_size: int = 2
    ) -> None:
        problem = check_prefix(key_prefix)
        if problem:
            raise ConfigurationError(problem)
        self._registered: set[str] = set()
        self._workflow_slots: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._turn = 0
        super().__init__(client, key_prefix=key_prefix, alias=alias, pool_size=pool_size)
        base = self.base_keys
        self.channel = base.channel(self.db)
        self.done_channel = base.done_channel(self.db)

    def lowest_id_below(self, below: int, jobs: int) -> int:
        # A job id is its sequence number times SLOTS plus its slot: `jobs` enqueues span
        # `jobs` sequence numbers, SLOTS ids each.
        return max(1, below - jobs * SLOTS)

    # -- routing ------------------------------------------------------------------------------
    @property
    def keys(self) -> Keys:
        """The keys of the slot being worked on, else those of the global hash tag."""
        route = _ROUTE.get()
        return self.global_keys if route is None else route[0]

    @keys.setter
    def keys(self, value: Keys) -> None:  # RedisStore.__init__ sets the prefix's keys
        self.base_keys = value
        self.global_keys = value.cluster_global()

    @contextlib.contextmanager
    def _at(self, keys: Keys, first_id: int | None = None) -> Iterator[None]:
        token = _ROUTE.set((keys, first_id))
        try:
            yield
        finally:
            _ROUTE.reset(token)

    def _run(self, script: str, *args: object) -> Any:
        route = _ROUTE.get()
        first_id = None
        if route is not None:
            keys, first_id = route
        elif script in BY_QUEUE:
            keys = self.base_keys.for_queue(str(args[0]))
        elif script in BY_ID:
            keys = self.base_keys.for_job(int(str(args[0])))
        elif script in GLOBAL:
            keys = self.global_keys
        else:  # a bug here, not a user error: the data of that script would be looked up nowhere
            raise AssertionError(f"the cluster store sent script {script!r} to no slot")
        prefix = keys.prefix if first_id is None else f"{keys.prefix}\0{first_id}"
        try:
            return self.scripts.call(script, prefix, *args, route=keys.prefix)
        except CLUSTER_ERRORS as exc:
            raise write_failed(script, exc, self.client) from exc

    def _read(self, method: str, *args: object) -> Any:
        try:
            return super()._read(method, *args)
        except CLUSTER_ERRORS as exc:
            raise read_failed(method, exc, self.client) from exc

    def _register(self, queues: Collection[str]) -> None:
        """Add `queues` to the known queues (once per queue and process)."""
        fresh = sorted(set(queues) - self._registered)
        if fresh:
            self._read("sadd", self.global_keys.known_queues(), *fresh)
            self._registered.update(fresh)

    def _reserve(self, queues: Collection[str], n: int) -> int:
        """Register `queues` and reserve `n` job sequence numbers; returns the first."""
        fresh = sorted(set(queues) - self._registered)
        last = int(self._run("reserve", n, *fresh))
        self._registered.update(fresh)
        return last - n + 1

    def known_queues(self) -> builtins.list[str]:
        return sorted(as_text(q) for q in self._read("smembers", self.global_keys.known_queues()))

    def _slots(self) -> builtins.list[Keys]:
        """The keys of every slot that holds a known queue, in slot order."""
        slots = sorted({queue_slot(queue) for queue in self.known_queues()})
        return [self.base_keys.at_slot(slot) for slot in slots]

    def _slots_in_turn(self) -> builtins.list[Keys]:
        """`_slots`, starting one slot later at each call: a slot with more due work than one
        call's limit never keeps the others waiting."""
        slots = self._slots()
        if not slots:
            return slots
        with self._lock:
            self._turn = (self._turn + 1) % len(slots)
            turn = self._turn
        return slots[turn:] + slots[:turn]

    # -- enqueueing ---------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> builtins.list[Inserted]:
        if not jobs:
            return []
        for job in jobs:  # the error of a bad job before anything is reserved
            if job.state not in INSERT_STATES or not job.queue or not job.kind:
                self._new_job_args(job)  # raises it
        seq = self._reserve({job.queue for job in jobs}, len(jobs))
        results: builtins.list[Inserted] = []
        # One script per run of consecutive jobs of one slot: ids then grow in batch order.
        start = 0
        while start < len(jobs):
            slot = queue_slot(jobs[start].queue)
            end = start + 1
            while end < len(jobs) and queue_slot(jobs[end].queue) == slot:
                end += 1
            with self._at(self.base_keys.at_slot(slot), (seq + start) * SLOTS + slot):
                results.extend(super().insert(jobs[start:end]))
            start = end
        return results

    def cron_advance(self, *, name: str, tick: datetime, job: NewJob | None) -> Inserted | None:
        # The script compares the tick with the entry's state in its own slot; a state recorded
        # in another one (without a job, or before the entry's queue moved) is compared here.
        # One leader advances cron, so this read and the script do not race each other.
        state = self.cron_states([name]).get(name)
        if state is not None and state.last_tick_at is not None and state.last_tick_at >= tick:
            return None
        if job is None:  # recorded without a job: in the global slot (merged by cron_states)
            return super().cron_advance(name=name, tick=tick, job=None)
        with self._new_job_slot(job):
            return super().cron_advance(name=name, tick=tick, job=job)

    def cron_trigger(self, *, name: str, job: NewJob) -> Inserted:
        with self._new_job_slot(job):
            return super().cron_trigger(name=name, job=job)

    def insert_debounced(self, job: NewJob) -> Inserted:
        with self._new_job_slot(job):
            return super().insert_debounced(job)

    def insert_replacing(self, job: NewJob) -> Inserted:
        with self._new_job_slot(job):
            return super().insert_replacing(job)

    def oldest_available(self, queues: Collection[str]) -> dict[str, datetime]:
        found: dict[str, datetime] = {}
        for queue in queues:
            with self._at(self.base_keys.for_queue(queue)):
                found.update(super().oldest_available([queue]))
        return found

    @contextlib.contextmanager
    def _new_job_slot(self, job: NewJob) -> Iterator[None]:
        self._new_job_args(job)
        slot = queue_slot(job.queue)
        seq = self._reserve([job.queue], 1)
        with self._at(self.base_keys.at_slot(slot), seq * SLOTS + slot):
            yield

    # -- running ------------------------------------------------------------------------------
    def heartbeat(self, runs: Collection[RunRef], *, lease_until: datetime) -> set[RunRef]:
        held: set[RunRef] = set()
        for slot, group in _by_slot(list(runs), lambda run: run.id).items():
            with self._at(self.base_keys.at_slot(slot)):
                held |= super().heartbeat(group, lease_until=lease_until)
        return held

    def finish(self, results: Sequence[Finish]) -> builtins.list[bool]:
        written: dict[int, bool] = {}
        positions = {id(result): i for i, result in enumerate(results)}
        for slot, group in _by_slot(list(results), lambda r: r.run.id).items():
            with self._at(self.base_keys.at_slot(slot)):
                for result, ok in zip(group, super().finish(group), strict=True):
                    written[positions[id(result)]] = ok
        return [written[i] for i in range(len(results))]

    # -- maintenance --------------------------------------------------------------------------
    def stage(self, *, now: datetime, limit: int = 10_000) -> int:
        total = 0
        for keys in self._slots_in_turn():
            if total >= limit:
                break
            with self._at(keys):
                total += super().stage(now=now, limit=limit - total)
        return total

    def rescue(self, *, now: datetime, limit: int = 10_000) -> builtins.list[Rescued]:
        rescued: builtins.list[Rescued] = []
        for keys in self._slots_in_turn():
            if len(rescued) >= limit:
                break
            with self._at(keys):
                rescued.extend(super().rescue(now=now, limit=limit - len(rescued)))
        return rescued

    def prune(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> int:
        total = 0
        for keys in self._slots():
            with self._at(keys):
                total += super().prune(now=now, horizons=horizons, limit=max(0, limit - total))
        return total

    def expired(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> builtins.list[JobRecord]:
        found: builtins.list[JobRecord] = []
        for keys in self._slots():
            with self._at(keys):
                found += super().expired(now=now, horizons=horizons, limit=limit - len(found))
            if len(found) >= limit:
                break
        return found

    def live_versions(self) -> dict[tuple[str, int], int]:
        found: dict[tuple[str, int], int] = {}
        for keys in self._slots():
            with self._at(keys):
                for key, n in super().live_versions().items():
                    found[key] = found.get(key, 0) + n
        return found

    def waiting_kinds(self, queues: Collection[str]) -> dict[str, set[str]]:
        queues = list(queues)
        members = self._pipelined(
            "smembers", [self.base_keys.for_queue(q).available_kinds(q) for q in queues]
        )
        return {
            queue: {split_claim_key(as_text(kind))[0] for kind in kinds}
            for queue, kinds in zip(queues, members, strict=True)
            if kinds
        }

    # -- cron: an entry's state lives in the slot of its jobs' queue --------------------------
    def cron_states(self, names: Collection[str]) -> dict[str, CronState]:
        states: dict[str, CronState] = {}
        for keys in [self.global_keys, *self._slots()]:
            with self._at(keys):
                found = super().cron_states(names)
            for name, state in found.items():
                states[name] = _merge_cron(states.get(name), state)
        return states

    # -- admin --------------------------------------------------------------------------------
    def get(self, job_id: int) -> JobRecord | None:
        if job_id < 1:
            return None
        with self._at(self.base_keys.for_job(job_id)):
            return super().get(job_id)

    def durable_state(self, job_id: int) -> DurableState | None:
        if job_id < 1:
            return None
        with self._at(self.base_keys.for_job(job_id)):
            return super().durable_state(job_id)

    def rewrite_steps(self, job_id: int, rewrite: Callable[[str], str]) -> bool:
        if job_id < 1:
            return False
        with self._at(self.base_keys.for_job(job_id)):  # its read and its script: one slot
            return super().rewrite_steps(job_id, rewrite)

    def list(self, filter: ListFilter) -> builtins.list[JobRecord]:
        if filter.queue:
            slots = [self.base_keys.for_queue(filter.queue)]
        elif filter.workflow:
            slot = self._workflow_slot(filter.workflow)
            slots = [] if slot is None else [self.base_keys.at_slot(slot)]
        else:
            slots = self._slots()
        records: builtins.list[JobRecord] = []
        for keys in slots:
            with self._at(keys):
                records.extend(super().list(filter))
        records.sort(key=lambda record: record.id, reverse=True)
        return records[: max(0, min(filter.limit, LIST_LIMIT_MAX))]

    def counts(self) -> dict[str, dict[str, int]]:
        # One pipeline over the slots (the client sends each master its part).
        hashes = self._pipelined("hgetall", [keys.counts() for keys in self._slots()])
        counts: dict[str, dict[str, int]] = {}
        for found in hashes:
            for field, value in found.items():
                state, _, queue = as_text(field).partition(":")
                n = int(value)
                if n > 0:
                    counts.setdefault(queue, {})[state] = n
        return counts

    def _pipelined(self, command: str, keys: builtins.list[str]) -> builtins.list[Any]:
        """`command key` for each of `keys`, in one pipeline."""
        if not keys:
            return []
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            getattr(pipe, command)(key)
        try:
            return list(pipe.execute())
        except (RedisConnectionError, RedisTimeoutError, *CLUSTER_ERRORS) as exc:
            raise read_failed(command, exc, self.client) from exc

    # -- workflows: every step of one workflow in queues of one slot ---------------------------
    def insert_workflow(
        self, workflow: NewWorkflow, steps: Sequence[NewStep], *, last: bool, now: datetime
    ) -> builtins.list[int]:
        if not steps:
            with self._lock:
                slot = self._workflow_slots.get(workflow.id)
            if slot is None:
                return []
        else:
            slot = self._check_workflow_slot(workflow, steps)
        seq = self._reserve({step.job.queue for step in steps}, len(steps))
        with self._at(self.base_keys.at_slot(slot), seq * SLOTS + slot):
            return super().insert_workflow(workflow, steps, last=last, now=now)

    def _check_workflow_slot(self, workflow: NewWorkflow, steps: Sequence[NewStep]) -> int:
        first = steps[0].job.queue
        with self._lock:
            known = self._workflow_slots.get(workflow.id)
        slot = queue_slot(first) if known is None else known
        where = {first: slot} if known is None else {}
        for step in steps:
            if queue_slot(step.job.queue) != slot:
                where.setdefault(step.job.queue, queue_slot(step.job.queue))
                shown = ", ".join(f"{q!r} (slot {s})" for q, s in where.items())
                raise InvalidJob(
                    "on a Redis Cluster every step of a workflow must be in queues of one hash "
                    f"slot, and this workflow's queues are in several: {shown}; give the queues "
                    "one hash tag, e.g. '{flow}import' and '{flow}mail' (see docs/deployment.md)"
                )
            for dep in step.after_ids:
                if job_slot(dep) != slot:
                    raise InvalidJob(
                        f"on a Redis Cluster a workflow step cannot wait for job {dep}, which "
                        f"is in another hash slot than the workflow (slot {job_slot(dep)}, "
                        f"not {slot})"
                    )
        with self._lock:
            self._workflow_slots[workflow.id] = slot
            self._workflow_slots.move_to_end(workflow.id)
            while len(self._workflow_slots) > WORKFLOW_MEMORY:
                self._workflow_slots.popitem(last=False)
        return slot

    def _workflow_slot(self, workflow_id: str) -> int | None:
        """The slot of workflow `workflow_id`, looked up in every slot of the known queues."""
        slots = self._slots()
        found = self._pipelined("exists", [keys.workflow(workflow_id) for keys in slots])
        for keys, exists in zip(slots, found, strict=True):
            if exists:
                return int(keys.prefix.rsplit("{", 1)[1].split("-", 1)[0])
        return None

    def workflow(self, workflow_id: str) -> WorkflowRow | None:
        slot = self._workflow_slot(workflow_id)
        if slot is None:
            return None
        with self._at(self.base_keys.at_slot(slot)):
            return super().workflow(workflow_id)

    def cancel_workflow(self, workflow_id: str, *, now: datetime) -> bool | None:
        slot = self._workflow_slot(workflow_id)
        if slot is None:
            return None
        with self._at(self.base_keys.at_slot(slot)):
            return super().cancel_workflow(workflow_id, now=now)

    # -- pauses and limits: per queue, in its slot ---------------------------------------------
    def pause(self, queue: str, *, now: datetime) -> bool:
        self._register([queue])
        with self._at(self.base_keys.for_queue(queue)):
            return super().pause(queue, now=now)

    def resume(self, queue: str) -> bool:
        with self._at(self.base_keys.for_queue(queue)):
            return super().resume(queue)

    def paused_queues(self) -> dict[str, datetime]:
        paused: dict[str, datetime] = {}
        for keys in self._slots():
            with self._at(keys):
                paused.update(super().paused_queues())
        return paused

    def set_limits(self, queue: str, limits: RuntimeLimits) -> None:
        self._register([queue])
        with self._at(self.base_keys.for_queue(queue)):
            super().set_limits(queue, limits)

    def runtime_limits(self) -> dict[str, RuntimeLimits]:
        found: dict[str, RuntimeLimits] = {}
        for keys in self._slots():
            with self._at(keys):
                found.update(super().runtime_limits())
        return found

    # -- statistics: per slot, each queue's in its own ------------------------------------------
    def stats(
        self,
        queues: Collection[str] | None,
        *,
        since: datetime,
        until: datetime,
        resolution: Resolution = "minute",
    ) -> StatsByQueue:
        if queues is None:
            slots = self._slots()
        else:
            slots = [self.base_keys.at_slot(s) for s in sorted({queue_slot(q) for q in queues})]
        found: StatsByQueue = {}
        for keys in slots:
            with self._at(keys):
                found.update(super().stats(queues, since=since, until=until, resolution=resolution))
        if not slots:
            return super().stats(queues, since=since, until=until, resolution=resolution)
        return found

    def roll_up_stats(self, *, now: datetime, keep: timedelta) -> int:
        # Each slot's hours on their own: a slot's queues' counters are in it.
        written = 0
        for keys in self._slots():
            with self._at(keys):
                written += super().roll_up_stats(now=now, keep=keep)
        return written

    def prune_stats(self, *, minutes_before: datetime, hours_before: datetime) -> None:
        for keys in self._slots():
            with self._at(keys):
                super().prune_stats(minutes_before=minutes_before, hours_before=hours_before)


def _by_slot(items: builtins.list[Any], job_id: Any) -> dict[int, builtins.list[Any]]:
    groups: dict[int, builtins.list[Any]] = {}
    for item in items:
        groups.setdefault(job_slot(job_id(item)), []).append(item)
    return groups


def _merge_cron(a: CronState | None, b: CronState) -> CronState:
    """One entry's state from two slots (its queue moved): the later tick, the later job (ids
    grow with time across slots)."""
    if a is None:
        return b
    ticks = [t for t in (a.last_tick_at, b.last_tick_at) if t is not None]
    jobs = [j for j in (a.last_job_id, b.last_job_id) if j is not None]
    return CronState(
        name=a.name,
        last_tick_at=max(ticks) if ticks else None,
        last_job_id=max(jobs) if jobs else None,
    )


class LazyRedisCluster:
    """A `redis.cluster.RedisCluster` made on first use: making one connects (to learn the
    cluster's nodes), and opening the store must not. While no node answers, every use raises
    redis-py's `ConnectionError`, which the store reports as `StoreUnavailable` like any
    connection error; the next use tries again."""

    #: Read by `RedisStore` for the database number (a cluster has database 0 only).
    connection_pool = None

    def __init__(self, url: str, kwargs: dict[str, Any]) -> None:
        self.url = url
        self._kwargs = kwargs
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def connected(self) -> bool:
        return self._client is not None

    def client(self) -> Any:
        if self._client is None:
            from redis.cluster import RedisCluster
            from redis.exceptions import RedisClusterException

            with self._lock:
                if self._client is None:
                    try:
                        self._client = RedisCluster.from_url(self.url, **self._kwargs)
                    except RedisClusterException as exc:
                        raise RedisConnectionError(
                            f"Error connecting to the Redis Cluster at {self.where()}. {exc}"
                        ) from exc
        return self._client

    def where(self) -> str:
        """The node the client starts from, as ``host:port``."""
        parsed = urlparse(self.url)
        return f"{parsed.hostname or 'localhost'}:{parsed.port or 6379}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client(), name)


class ClusterConnectionFactory:
    """A django-redis connection factory (``OPTIONS["CONNECTION_FACTORY"]``) whose clients are
    `redis.cluster.RedisCluster`: LOCATION names one or more nodes of the cluster (comma
    separated URLs are tried in turn to discover the others)."""

    #: One cluster client per (url, options), shared like django-redis shares its connection
    #: pools: Django makes a cache object per thread and per settings change, and a client of
    #: its own for each would hold connections to every master until the process ends.
    _clients: ClassVar[dict[tuple[str, str], LazyRedisCluster]] = {}
    _clients_lock = threading.Lock()

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def connect(self, url: str) -> Any:
        kwargs = self._kwargs()
        key = (url, repr(sorted(kwargs.items())))
        with self._clients_lock:
            client = self._clients.get(key)
            if client is None:
                client = self._clients[key] = LazyRedisCluster(url, kwargs)
        return client

    def _kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(self.options.get("REDIS_CLIENT_KWARGS", {}))
        for option, name in (
            ("PASSWORD", "password"),
            ("USERNAME", "username"),
            ("SOCKET_TIMEOUT", "socket_timeout"),
            ("SOCKET_CONNECT_TIMEOUT", "socket_connect_timeout"),
        ):
            if self.options.get(option) is not None:
                kwargs[name] = self.options[option]
        return kwargs

    def disconnect(self, connection: Any) -> None:
        with self._clients_lock:
            for key, client in list(self._clients.items()):
                if client is connection:
                    del self._clients[key]
        if connection.connected:
            connection.close()
