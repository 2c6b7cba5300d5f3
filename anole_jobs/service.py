"""`JobService`: turns args and options into `NewJob`s, and admin calls into store calls.

Data flows one way: the `jobs` facade -> this service -> `stores.base.Store`. The service owns
validation (arguments, options, names, payload size), time (every `now` comes from the
configured clock), unique keys and the rules for transactions (an enqueue joins the open
``transaction.atomic`` of the store's database, or waits for its commit with `on_commit`).
"""

from __future__ import annotations

import builtins
import dataclasses
import difflib
import inspect
import json
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypedDict, TypeVar, Unpack, cast

from django.db import DEFAULT_DB_ALIAS, connections, transaction

from anole_jobs import codec, encryption, events, offload, tracing
from anole_jobs.bounds import (
    NewQueue,
    check_name,
    close_names,
    name_problem,
    search_int_problem,
    text_problem,
)
from anole_jobs.clock import monotonic
from anole_jobs.conf import Settings
from anole_jobs.core import (
    FINAL_STATES,
    LIST_LIMIT_MAX,
    MAX_JOB_ID,
    STATES,
    JobRecord,
    ListFilter,
    State,
)
from anole_jobs.durations import Duration, to_timedelta
from anole_jobs.errors import InvalidJob, JobFailed, JobNotFinished, JobNotFound
from anole_jobs.jsontext import compact
from anole_jobs.kinds import (
    KIND_ATTRIBUTE,
    KindSpec,
    Registry,
    check_priority,
    sequence_key,
    spec_of,
)
from anole_jobs.limits import KEEP, Limits, RuntimeLimits, parse_concurrency, parse_rate
from anole_jobs.records import Enqueued, QueueLimits, QueueRecord
from anole_jobs.schedules import CronEntry, CronRecord, load_cron, parser_problem
from anole_jobs.stores.audit import AuditEntry
from anole_jobs.stores.base import NewJob, Store
from anole_jobs.stores.instrumented import instrument
from anole_jobs.stores.search import BULK_ACTIONS, BULK_BATCH_MAX
from anole_jobs.stores.stats import Resolution, StatsByQueue
from anole_jobs.stores.workers import CONTROL_ACTIONS, WorkerControl, WorkerRecord
from anole_jobs.unique import Debounce, Unique, debounce_key, unique_key

logger = logging.getLogger("anole_jobs")
cron_logger = logging.getLogger("anole_jobs.cron")

BATCH_SIZE = 1000
#: One planned `enqueue_many` batch: the jobs to insert, and per argument its result's slot
#: (an index into the inserted results, or ("dup", index) for an in-batch duplicate).
_Batch = tuple[list[NewJob], list[int | tuple[str, int]]]


class EnqueueOptions(TypedDict, total=False):
    """The options of one enqueue, declared once for every enqueue call of the facade and the
    service: when to run (`delay` or `run_at`), `priority`, `queue`, `unique`, `debounce`
    (docs/debounce.md), `meta` and the `request` whose trace the job continues. None (or
    absent) means the kind's default."""

    delay: Duration | None
    run_at: datetime | None
    priority: int | None
    queue: str | None
    unique: Unique | None
    debounce: Debounce | None
    meta: Mapping[str, Any] | None
    request: object | None


_OPTION_KEYS = frozenset(EnqueueOptions.__annotations__)
#: Every keyword `jobs.enqueue` takes, for "did you mean" hints.
OPTION_NAMES: tuple[str, ...] = (*EnqueueOptions.__annotations__, "on_commit")
#: Every keyword `jobs.enqueue_in` takes.
ENQUEUE_IN_NAMES: tuple[str, ...] = ("using", *EnqueueOptions.__annotations__)

F = TypeVar("F", bound=Callable[..., Any])


def enqueue_options(
    what: str, options: Mapping[str, object], names: Sequence[str] = OPTION_NAMES
) -> EnqueueOptions:
    """`options` as `EnqueueOptions`, or `TypeError` naming a misspelled option (and the
    closest real one), in the words of the call the user wrote (`what`: "enqueue", …), never
    an internal function's name. `names` are all the keywords that call takes."""
    if options.keys() <= _OPTION_KEYS:
        return cast(EnqueueOptions, options)
    name = next(key for key in options if key not in _OPTION_KEYS)
    value = options[name]
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"the options are {', '.join(names)}"
    raise TypeError(f"{what}() got an unknown option {name}={value!r}; {hint}")


def with_enqueue_options(func: F) -> F:
    """Give `func` (which takes ``**options: Unpack[EnqueueOptions]``) a runtime signature that
    lists each option as a keyword-only parameter defaulting to None, before `on_commit`, so
    help() and `inspect.signature` show what type checkers and editors already do."""
    signature = inspect.signature(func)
    parameters = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    options = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
        for name, kind in EnqueueOptions.__annotations__.items()
    ]
    names = [p.name for p in parameters]
    at = names.index("on_commit") if "on_commit" in names else len(parameters)
    parameters[at:at] = options
    func.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return func


def _open_connections() -> Iterable[Any]:
    """This thread's database connections opened so far: `connections.all(initialized_only=
    True)`, with one look into the handler's thread-local per alias instead of two (this runs
    on every enqueue to a store without transactions: it was a sixth of its Python)."""
    local = getattr(connections, "_connections", None)
    if local is None:  # not the handler this was written against: its public way
        return connections.all(initialized_only=True)
    found = (getattr(local, alias, None) for alias in connections.settings)
    return [connection for connection in found if connection is not None]


#: Kinds already warned about being enqueued inside an atomic block the store cannot join.
_warned_outside_transaction: set[str] = set()
_warned_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class _KindOptions:
    """The options of one enqueue call as they apply to one kind (see `JobService._resolve`)."""

    where: str
    queue: str
    priority: int
    scheduled_at: datetime
    state: State
    unique: Unique | None
    debounce: Debounce | None = None


@dataclass(frozen=True, slots=True)
class _PlainKind:
    """What an enqueue without options writes for one kind, checked once per service: the
    kind's own queue, priority and unique rule (the job is due now). Used while the class
    still carries `spec` (`set_job_options` replaces it)."""

    spec: KindSpec
    where: str
    queue: str
    priority: int
    unique: Unique | None
    debounce: Debounce | None = None


#: Kinds one service remembers in `_PlainKind`s (classes made at run time must not pile up).
PLAIN_KINDS_MAX = 1000


class _Builder:
    """Builds the jobs of one enqueue call (or one `enqueue_many` batch): the options are
    checked once per kind, meta and the trace context once per call, the arguments once per
    job. Errors come in the order a job-by-job check gives: arguments, meta, payload size,
    then the options."""

    __slots__ = ("_kinds", "_meta", "limit", "now", "options", "service")

    def __init__(self, service: JobService, now: datetime, options: EnqueueOptions) -> None:
        self.service = service
        self.now = now
        self.options = options
        self.limit = service.settings.max_payload_bytes
        self._meta: dict[str, Any] | None = None
        self._kinds: dict[type, tuple[KindSpec, str, _KindOptions | None]] = {}

    def _job_meta(self) -> dict[str, Any]:
        if self._meta is None:
            meta = codec.ensure_json_object(self.options.get("meta"), name="meta")
            tracing.inject_context(meta, self.options.get("request"))
            self._meta = meta
        return dict(self._meta)  # each job its own dict

    def build(self, args: object) -> NewJob:
        if isinstance(args, type):
            name = spec_of(args).args_type.__qualname__  # not a kind at all: says so
            raise InvalidJob(
                f"enqueue() takes a job, not its class: pass an instance, e.g. {name}(...)"
            )
        args_type = type(args)
        known = self._kinds.get(args_type)
        if known is None:
            spec = spec_of(args_type)
            known = (spec, f"enqueue({spec.name!r})", None)
        spec, where, resolved = known
        encoded = codec.check_args(args)
        job_meta = self._job_meta()
        codec.check_payload_size(encoded, job_meta, limit=self.limit, where=where)
        if resolved is None:
            resolved = self.service._resolve(spec, self.now, self.options)
            self._kinds[args_type] = (spec, where, resolved)
        unique = resolved.unique
        debounce = resolved.debounce
        if debounce is not None:
            values = debounce.values(encoded, where=where)
            job_meta["debounce"] = {"by": values}
            debounced = NewJob(
                kind=spec.name,
                queue=resolved.queue,
                args=encoded,
                meta=job_meta,
                priority=resolved.priority,
                max_attempts=spec.attempts_for(encoded),
                state="scheduled",
                scheduled_at=self.now + debounce.wait,
                created_at=self.now,
                debounce_key=debounce_key(spec.name, values),
                debounce_max_wait=debounce.max_wait,
                version=spec.version,
            )
            return with_flow(debounced, spec, self.service.settings)
        job = NewJob(
            kind=spec.name,
            queue=resolved.queue,
            args=self.service.stored_args(spec, encoded),
            meta=job_meta,
            priority=resolved.priority,
            max_attempts=spec.attempts if spec.attempts_of is None else spec.attempts_for(encoded),
            state=resolved.state,
            scheduled_at=resolved.scheduled_at,
            created_at=self.now,
            unique_key=None
            if unique is None
            else unique_key(spec.name, encoded, unique, now=self.now),
            unique_scope="live" if unique is None else unique.scope,
            replace=unique is not None and unique.on_conflict == "replace",
            version=spec.version,
        )
        return with_flow(job, spec, self.service.settings)


def with_flow(job: NewJob, spec: KindSpec, settings: Settings) -> NewJob:
    """`job` with its fairness value (when its queue has fairness) and its sequence (when its
    kind has one); `job` itself otherwise."""
    config = settings.queues.get(job.queue)
    fairness = config.limits.fairness if config is not None else None
    if fairness is None and not spec.sequence:
        return job
    fair_key = fairness.key(job.args) if fairness is not None else None
    return dataclasses.replace(
        job,
        fair_key=fair_key,
        fair_weight=fairness.weight(fair_key) if fairness is not None and fair_key else 1.0,
        sequence_key=sequence_key(spec, job.args),
    )


class JobService:
    """One configured queue system: settings, a store, the kind registry and the event bus."""

    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        registry: Registry,
        bus: events.EventBus = events.bus,
    ) -> None:
        self.settings = settings
        # Every store call goes through the wrapper that reports it (STORE_CALL) on the bus.
        self.store: Store = instrument(store, bus=bus, timer=monotonic)
        self.registry = registry
        self.bus = bus
        self.clock = settings.clock
        self._cron_lock = threading.Lock()
        self._cron_entries: builtins.list[CronEntry] | None = None
        self._good_queues: set[str] = set()
        self._plain_kinds: dict[type, _PlainKind] = {}

    # -- building jobs ---------------------------------------------------------------------
    def build(self, args: object, *, now: datetime, **options: Unpack[EnqueueOptions]) -> NewJob:
        """Validate `args` and the options and return the row to insert (raises InvalidJob)."""
        return _Builder(self, now, options).build(args)

    def _resolve(self, spec: KindSpec, now: datetime, options: EnqueueOptions) -> _KindOptions:
        """The options of one call as they apply to kind `spec` (the same for all its jobs)."""
        where = f"enqueue({spec.name!r})"
        priority = options.get("priority")
        job_priority = check_priority(spec.priority if priority is None else priority, where=where)
        queue = options.get("queue")
        job_queue = spec.queue if queue is None else self.declared_queue(queue, where=where)
        scheduled_at = self._scheduled_at(now, options.get("delay"), options.get("run_at"), where)
        unique = options.get("unique")
        job_unique = spec.unique if unique is None else unique
        if job_unique is not None and not isinstance(job_unique, Unique):
            raise InvalidJob(f"{where}: unique must be a Unique(...), got {job_unique!r}")
        debounce = options.get("debounce")
        job_debounce = spec.debounce if debounce is None else debounce
        if job_debounce is not None:
            if not isinstance(job_debounce, Debounce):
                raise InvalidJob(f"{where}: debounce must be a Debounce(...), got {job_debounce!r}")
            if job_unique is not None:
                raise InvalidJob(
                    f"{where}: give unique or debounce, not both (a debounced job is one per key)"
                )
            if options.get("delay") is not None or options.get("run_at") is not None:
                raise InvalidJob(
                    f"{where}: a debounced job runs its wait after the last enqueue; "
                    "give no delay or run_at"
                )
        return _KindOptions(
            where=where,
            queue=job_queue,
            priority=job_priority,
            scheduled_at=scheduled_at,
            state="scheduled" if scheduled_at > now else "available",
            unique=job_unique,
            debounce=job_debounce,
        )

    def declared_queue(self, value: object, *, where: str) -> str:
        """`value` if it names a queue this code declares (in ``QUEUES``, on a kind or on a
        ``CRON`` entry) or is a `NewQueue` (a new queue on purpose); else `InvalidJob` with
        "did you mean": a mistyped queue would store jobs that no worker ever runs."""
        # A str that passed once passes again (anything else is checked, and refused, each time).
        if type(value) is str and value in self._good_queues:
            return value
        name = check_name(value, what="a queue name", where=where)
        if isinstance(value, NewQueue):
            return name
        declared = self.declared_queues()
        if name not in declared:
            raise InvalidJob(f"{where}: {unknown_queue(name, declared)}")
        if len(self._good_queues) < 1000:
            self._good_queues.add(name)
        return name

    def declared_queues(self) -> set[str]:
        """The queues this code declares: those in ``QUEUES``, those its kinds name and those
        its ``CRON`` entries name."""
        names = set(self.settings.queues)
        names.update(spec.queue for spec in self.registry.kinds())
        for entry in self.settings.cron:
            queue = entry.get("queue") if isinstance(entry, Mapping) else None
            if isinstance(queue, str):
                names.add(queue)
        return names

    @staticmethod
    def _scheduled_at(
        now: datetime, delay: Duration | None, run_at: datetime | None, where: str
    ) -> datetime:
        if delay is not None and run_at is not None:
            raise InvalidJob(f"{where}: give delay or run_at, not both")
        if run_at is not None:
            if not isinstance(run_at, datetime) or run_at.tzinfo is None:
                raise InvalidJob(f"{where}: run_at must be an aware datetime, got {run_at!r}")
            return run_at
        if delay is not None:
            try:
                return now + to_timedelta(delay, name="delay")
            except ValueError as exc:
                raise InvalidJob(f"{where}: {exc}") from None
            except OverflowError:  # past the year 9999, which no datetime (nor store) holds
                raise InvalidJob(f"{where}: delay {delay!r} ends after the year 9999") from None
        return now

    # -- enqueueing ------------------------------------------------------------------------
    def enqueue(
        self, args: object, *, on_commit: bool = False, **options: Unpack[EnqueueOptions]
    ) -> Enqueued:
        if on_commit and not self.store.supports_transactions:
            return self._enqueue_on_commit(args, options)
        now = self.clock()
        plain = not options  # the common case: its kind's options were checked once
        job = self._build_plain(args, now) if plain else _Builder(self, now, options).build(args)
        return self._insert_one(job)

    def _build_plain(self, args: object, now: datetime) -> NewJob:
        """`build` for an enqueue without options: the kind's options were checked the first
        time (`_PlainKind`); the arguments, their size and the trace context every time."""
        args_type = type(args)
        plain = self._plain_kinds.get(args_type)
        if plain is None or args_type.__dict__.get(KIND_ATTRIBUTE) is not plain.spec:
            builder = _Builder(self, now, {})
            job = builder.build(args)
            spec, where, resolved = builder._kinds[args_type]
            if resolved is not None and len(self._plain_kinds) < PLAIN_KINDS_MAX:
                self._plain_kinds[args_type] = _PlainKind(
                    spec,
                    where,
                    resolved.queue,
                    resolved.priority,
                    resolved.unique,
                    resolved.debounce,
                )
            return job
        spec, unique = plain.spec, plain.unique
        encoded = codec.check_args(args)
        meta: dict[str, Any] = {}
        tracing.inject_context(meta, None)
        codec.check_payload_size(
            encoded, meta, limit=self.settings.max_payload_bytes, where=plain.where
        )
        debounce = plain.debounce
        if debounce is not None:
            values = debounce.values(encoded, where=plain.where)
            meta["debounce"] = {"by": values}
            debounced = NewJob(
                kind=spec.name,
                queue=plain.queue,
                args=encoded,
                meta=meta,
                priority=plain.priority,
                max_attempts=spec.attempts_for(encoded),
                state="scheduled",
                scheduled_at=now + debounce.wait,
                created_at=now,
                debounce_key=debounce_key(spec.name, values),
                debounce_max_wait=debounce.max_wait,
                version=spec.version,
            )
            return with_flow(debounced, spec, self.settings)
        job = NewJob(
            kind=spec.name,
            queue=plain.queue,
            args=self.stored_args(spec, encoded),
            meta=meta,
            priority=plain.priority,
            max_attempts=spec.attempts if spec.attempts_of is None else spec.attempts_for(encoded),
            state="available",
            scheduled_at=now,
            created_at=now,
            unique_key=None if unique is None else unique_key(spec.name, encoded, unique, now=now),
            unique_scope="live" if unique is None else unique.scope,
            version=spec.version,
            replace=unique is not None and unique.on_conflict == "replace",
        )
        return with_flow(job, spec, self.settings)

    def _enqueue_on_commit(self, args: object, options: EnqueueOptions) -> Enqueued:
        # Validate now so a bad job fails at the call site, write at commit. Documented:
        # a crash between the commit and this write loses the job.
        self.build(args, now=self.clock(), **options)
        connection = connections[DEFAULT_DB_ALIAS]
        if not connection.in_atomic_block:
            return self.enqueue(args, **options)
        transaction.on_commit(lambda: self.enqueue(args, **options), using=DEFAULT_DB_ALIAS)
        return Enqueued(None, False)

    def enqueue_in(
        self, args: object, *, using: str, **options: Unpack[EnqueueOptions]
    ) -> Enqueued:
        """Enqueue inside the open `transaction.atomic(using=using)` on the store's database."""
        self.require_transaction(using, what="enqueue_in")
        return self.enqueue(args, **options)

    def require_transaction(self, using: str, *, what: str) -> None:
        alias = self.store.atomic_alias
        reason = None
        if not self.store.supports_transactions:
            reason = f"the {self.store.name} store has no transactions"
        elif using != alias:
            reason = f"database {using!r} is not the jobs store's database ({alias!r})"
        elif using not in connections or not connections[using].in_atomic_block:
            reason = f"no transaction.atomic(using={using!r}) block is open"
        if reason is not None:
            logger.error("%s refused: %s", what, reason)
            raise InvalidJob(f"{what}(using={using!r}): {reason}")

    def enqueue_many(
        self,
        iterable: Iterable[object],
        *,
        on_commit: bool = False,
        **options: Unpack[EnqueueOptions],
    ) -> builtins.list[Enqueued]:
        """Insert in batches of `BATCH_SIZE`, one store round trip per batch, all or nothing
        where the store can join a transaction (see `_insert_batches`)."""
        if on_commit and not self.store.supports_transactions:
            items = list(iterable)
            connection = connections[DEFAULT_DB_ALIAS]
            if connection.in_atomic_block:
                builder = _Builder(self, self.clock(), options)
                for args in items:
                    builder.build(args)
                transaction.on_commit(
                    lambda: self.enqueue_many(items, **options), using=DEFAULT_DB_ALIAS
                )
                return [Enqueued(None, False) for _ in items]
            iterable = items
        # Every job is built (validated) before the first batch is written, so one bad job
        # stores nothing rather than the batches before it.
        planned: list[_Batch] = []
        batch: list[object] = []
        for args in iterable:
            batch.append(args)
            if len(batch) == BATCH_SIZE:
                planned.append(self._plan_batch(batch, options))
                batch = []
        if batch:
            planned.append(self._plan_batch(batch, options))
        alias = self.store.atomic_alias
        if len(planned) > 1 and alias is not None:
            # One transaction around the batches: outside the caller's atomic block each batch
            # would commit on its own, and a connection cut between two would leave the first
            # ones stored and raise, so a retry of the call would enqueue them twice.
            with transaction.atomic(using=alias):
                return self._insert_batches(planned)
        return self._insert_batches(planned)

    def _insert_batches(self, planned: builtins.list[_Batch]) -> builtins.list[Enqueued]:
        results: list[Enqueued] = []
        for to_insert, slots in planned:
            try:
                inserted = self._insert(to_insert)
            except Exception as exc:
                if results and not self.store.supports_transactions:
                    # A store without transactions kept the batches before this one: say how
                    # many, so that a retry can skip them.
                    exc.add_note(
                        f"enqueue_many stored the first {len(results)} of"
                        f" {sum(len(slots) for _, slots in planned)} jobs before this error"
                        " (in batches of 1,000; the rest were not stored)"
                    )
                raise
            results.extend(
                inserted[slot] if isinstance(slot, int) else Enqueued(inserted[slot[1]].id, False)
                for slot in slots
            )
        return results

    def _plan_batch(self, batch: builtins.list[object], options: EnqueueOptions) -> _Batch:
        """The jobs of one batch to insert, and where each argument's result comes from."""
        build = _Builder(self, self.clock(), options).build
        jobs = [build(args) for args in batch]
        # Within one batch a later duplicate returns the first one (a replacing one replaces
        # it, in the store, in batch order).
        first_of_key: dict[str, int] = {}
        to_insert: list[NewJob] = []
        slots: list[int | tuple[str, int]] = []
        for job in jobs:
            if job.replace:
                slots.append(len(to_insert))
                to_insert.append(job)
                continue
            if job.unique_key is not None and job.unique_key in first_of_key:
                slots.append(("dup", first_of_key[job.unique_key]))
                continue
            if job.unique_key is not None:
                first_of_key[job.unique_key] = len(to_insert)
            slots.append(len(to_insert))
            to_insert.append(job)
        return to_insert, slots

    def _insert(self, jobs: builtins.list[NewJob]) -> builtins.list[Enqueued]:
        if not jobs:
            return []
        if not self.store.supports_transactions:
            self._warn_if_in_transaction(jobs)
        # The store wakes the workers of the queues it made jobs available in (stores.base).
        if any(job.debounce_key is not None or job.replace for job in jobs):
            results = self._insert_each(jobs)
        else:
            results = self.store.insert(jobs)
        if self.bus.listens_to(events.ENQUEUED):
            # One event per (queue, kind, inserted) of the batch, with its count.
            counts: dict[tuple[str, str, bool], int] = {}
            for job, result in zip(jobs, results, strict=True):
                key = (job.queue, job.kind, result.inserted)
                counts[key] = counts.get(key, 0) + 1
            for (queue, kind, inserted), count in counts.items():
                self.bus.emit(
                    events.ENQUEUED, queue=queue, kind=kind, inserted=inserted, count=count
                )
        return [Enqueued(result.id, result.inserted) for result in results]

    def _insert_each(self, jobs: Sequence[NewJob]) -> builtins.list[Any]:
        """A batch holding debounced or replacing jobs: each of those is its own store write
        (in batch order), the runs of plain jobs between them one `insert` each."""
        results: list[Any] = []
        run: list[NewJob] = []
        for job in jobs:
            if job.debounce_key is None and not job.replace:
                run.append(job)
                continue
            if run:
                results.extend(self.store.insert(run))
                run = []
            results.append(self._store_one(job))
        if run:
            results.extend(self.store.insert(run))
        return results

    def _store_one(self, job: NewJob) -> Any:
        """The store write of one job: folded by its debounce key, replacing the holder of its
        unique key, or a plain insert."""
        if job.debounce_key is not None:
            return self.store.insert_debounced(job)
        if job.replace:
            return self.store.insert_replacing(job)
        (result,) = self.store.insert([job])
        return result

    def _insert_one(self, job: NewJob) -> Enqueued:
        """`_insert` of one job (`enqueue`), without the batch's bookkeeping."""
        if not self.store.supports_transactions:
            self._warn_if_in_transaction([job])
        result = self._store_one(job)
        if events.ENQUEUED in self.bus.by_name:
            self.bus.emit(
                events.ENQUEUED, queue=job.queue, kind=job.kind, inserted=result.inserted, count=1
            )
        return Enqueued(result.id, result.inserted)

    def _warn_if_in_transaction(self, jobs: Sequence[NewJob]) -> None:
        """The trap of an enqueue inside ``transaction.atomic`` on a store that cannot join it:
        the job is stored now, so a rollback leaves it waiting (to run against rows that never
        existed, or that a later insert reused), and a worker may run it before the commit. Say
        so once per kind per process. Django's TestCase wraps each test in atomic blocks: those
        do not count."""
        if not any(
            not getattr(block, "_from_testcase", False)
            for connection in _open_connections()
            for block in connection.atomic_blocks
        ):
            return
        with _warned_lock:
            kinds = sorted({job.kind for job in jobs} - _warned_outside_transaction)
            _warned_outside_transaction.update(kinds)
        for kind in kinds:
            logger.warning(
                "enqueue(%r) ran inside transaction.atomic(), which the %s store cannot join: "
                "the job is stored now, even if the transaction rolls back, and may run before "
                "it commits. Pass on_commit=True to enqueue it when the transaction commits.",
                kind,
                self.store.name,
            )

    # -- admin ---------------------------------------------------------------------------
    def get(self, job_id: int) -> JobRecord | None:
        return self.reveal(self.store.get(_job_id(job_id)))

    # -- encryption at rest and offload (docs/encryption.md, docs/offload.md) ---------------
    def stored_args(self, spec: KindSpec, encoded: Mapping[str, Any]) -> Mapping[str, Any]:
        """A job's args as the store keeps them: sealed for a kind declared with
        encrypt=True, and a reference to a file when their JSON is over OFFLOAD's size."""
        offload_config = self.settings.offload
        if not spec.encrypt and offload_config is None:
            return encoded
        value: Mapping[str, Any] = self.seal(spec, encoded) if spec.encrypt else encoded
        if offload_config is not None:
            ref = offload.maybe_put(compact(value), offload_config)
            if ref is not None:
                return cast(dict[str, Any], json.loads(ref))
        return value

    def open_value(self, value: Any) -> Any:
        """A stored args or result value as its handler wrote it: an offloaded one read back,
        a sealed one opened (left sealed without the keys)."""
        value = offload.inline(value)
        if encryption.is_sealed(value) and self.settings.encryption_keys:
            try:
                return encryption.open_sealed(value, self.settings.encryption_keys)
            except encryption.EncryptionError:
                return value
        return value

    def delete_offloaded(self, records: Iterable[JobRecord | None]) -> None:
        """Delete the files of the offloaded args and results of `records` (deleted jobs)."""
        for record in records:
            if record is not None:
                for ref in offload.refs(record.args, record.result):
                    offload.delete(ref)

    def seal(self, spec: KindSpec, encoded: Mapping[str, Any]) -> dict[str, Any]:
        """The args of a kind declared with encrypt=True, as stored."""
        try:
            return encryption.seal(encoded, self.settings.encryption_keys)
        except encryption.EncryptionError as exc:
            raise InvalidJob(f"enqueue({spec.name!r}): {exc}") from None

    def reveal(self, record: JobRecord | None) -> JobRecord | None:
        """`record` with its sealed args and result opened, when this process has the keys
        (marked `encrypted` either way, for the surfaces that show it)."""
        if record is None:
            return None
        args, result = record.args, record.result
        if offload.is_ref(args) or offload.is_ref(result):
            args, result = offload.inline(args), offload.inline(result)
            record = replace(record, args=args, result=result)
        sealed_args, sealed_result = encryption.is_sealed(args), encryption.is_sealed(result)
        steps = record.steps
        sealed_steps = any(encryption.is_sealed(step.get("result")) for step in steps.values())
        if not (sealed_args or sealed_result or sealed_steps):
            return record
        keys = self.settings.encryption_keys
        if keys:
            try:
                if sealed_args:
                    args = encryption.open_sealed(args, keys)
                if sealed_result:
                    result = encryption.open_sealed(result, keys)
                if sealed_steps:
                    steps = {name: _opened_step(step, keys) for name, step in steps.items()}
            except encryption.EncryptionError:
                args, result, steps = record.args, record.result, record.steps
        return replace(record, args=args, result=result, steps=steps, encrypted=True)

    def reencrypt(self) -> int:
        """Seal every stored sealed args, result and durable step result again with the
        newest key; how many jobs it rewrote. Pages through every job (an operator's command).
        """
        keys = self.settings.encryption_keys
        if not keys:
            raise InvalidJob("jobs reencrypt needs ANOLE_JOBS['ENCRYPTION_KEYS']")

        def resealed_step(text: str) -> str:
            value = json.loads(text)
            return compact(encryption.reseal(value, keys)) if encryption.is_sealed(value) else text

        done = 0
        after: int | None = None
        while True:
            page = self.store.list(ListFilter(limit=LIST_LIMIT_MAX, after=after))
            if not page:
                return done
            for record in page:
                args = record.args if encryption.is_sealed(record.args) else None
                result = record.result if encryption.is_sealed(record.result) else None
                steps = any(
                    isinstance(step.get("result"), Mapping) and encryption.is_sealed(step["result"])
                    for step in record.steps.values()
                )
                if args is None and result is None and not steps:
                    continue
                try:
                    new_args = None if args is None else encryption.reseal(args, keys)
                    new_result = None if result is None else encryption.reseal(result, keys)
                    rewritten = False
                    if new_args is not None or new_result is not None:
                        rewritten = self.store.rewrite_payload(
                            record.id,
                            args=new_args,
                            result=None if new_result is None else compact(new_result),
                        )
                    if steps:
                        rewritten = self.store.rewrite_steps(record.id, resealed_step) or rewritten
                except encryption.EncryptionError:  # its key was removed from the list
                    raise InvalidJob(
                        f"job {record.id}: none of ENCRYPTION_KEYS opens it (was its key"
                        " removed before `jobs reencrypt` ran?)"
                    ) from None
                done += rewritten
            after = page[-1].id

    def list(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        after: int | None = None,
        workflow: str | None = None,
        kind_prefix: str | None = None,
        error: str | None = None,
        args: Mapping[str, Any] | None = None,
        min_id: int | None = None,
    ) -> list[JobRecord]:
        search = _search_terms(kind_prefix=kind_prefix, error=error, args=args, min_id=min_id)
        if search is None:
            return []  # a term no stored job can hold (a NUL, a lone surrogate)
        if state is not None and state not in STATES:
            raise InvalidJob(f"unknown state {state!r}; states are {', '.join(STATES)}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidJob(f"limit must be a positive int, got {limit!r}")
        for name, value in (("queue", queue), ("kind", kind)):
            problem = None if value is None else name_problem(value, what=f"the {name} filter")
            if problem is not None:
                raise InvalidJob(problem)
        if workflow is not None and not isinstance(workflow, str):
            raise InvalidJob(f"the workflow filter must be a string, got {workflow!r}")
        if workflow is not None and not _storable(workflow):
            return []  # no workflow id holds a NUL or a lone surrogate
        filter = ListFilter(
            state=state,
            queue=queue,
            kind=kind,
            limit=min(limit, LIST_LIMIT_MAX),
            after=None if after is None else _job_id(after),
            workflow=workflow,
            **search,
        )
        return [self.reveal(r) or r for r in self.store.list(filter)]

    def act(self, action: str, ids: Collection[int], *, state: str | None = None) -> int:
        """Retry, cancel or delete the jobs of `ids` (at most `BULK_BATCH_MAX`) still in
        `state` (any when None); how many it changed (see `Store.act`)."""
        if action not in BULK_ACTIONS:
            raise InvalidJob(f"unknown action {action!r}; actions are {', '.join(BULK_ACTIONS)}")
        if state is not None and state not in STATES:
            raise InvalidJob(f"unknown state {state!r}; states are {', '.join(STATES)}")
        wanted = sorted({_job_id(job_id) for job_id in ids})
        if len(wanted) > BULK_BATCH_MAX:
            raise InvalidJob(f"at most {BULK_BATCH_MAX} ids per call, got {len(wanted)}")
        if action != "delete" or self.settings.offload is None:
            return self.store.act(action, wanted, state=state, now=self.clock())
        before = [self.store.get(job_id) for job_id in wanted]
        done = self.store.act(action, wanted, state=state, now=self.clock())
        self.delete_offloaded(r for r in before if r is not None and self.store.get(r.id) is None)
        return done

    def counts(self) -> dict[str, dict[str, int]]:
        return self.store.counts()

    def result(self, job_id: int, *, timeout: Duration | None = None) -> Any:
        """The result of job `job_id` once completed (see `jobs.result`)."""
        job_id = _job_id(job_id)
        if timeout is None:
            return _result_of(job_id, self.reveal(self.store.get(job_id)), waited=None)
        seconds = max(to_timedelta(timeout, name="timeout").total_seconds(), 0.0)
        record = self.store.get(job_id)
        if record is None or record.state in FINAL_STATES or seconds == 0:
            return _result_of(job_id, self.reveal(record), waited=seconds)
        deadline = monotonic() + seconds
        poll = max(self.store.finished_poll, MIN_RESULT_POLL)
        # Subscribed before it looks again: a finish between the look and the wait still
        # wakes it. Between wake-ups it looks every `poll` seconds (a message can be lost).
        subscription = self.store.subscribe_finished([job_id])
        try:
            while True:
                record = self.store.get(job_id)
                if record is None or record.state in FINAL_STATES:
                    break
                remaining = deadline - monotonic()
                if remaining <= 0:
                    break
                subscription.wait(min(remaining, poll))
        finally:
            subscription.close()
        return _result_of(job_id, self.reveal(record), waited=seconds)

    def retry(self, job_id: int) -> JobRecord:
        """Make the job available now; the job as it now is. `JobNotFound` if there is none."""
        record = self.reveal(self.store.retry(_job_id(job_id), now=self.clock()))
        if record is None:
            raise JobNotFound(job_id)
        return record

    def cancel(self, job_id: int) -> JobRecord:
        """Cancel the job if it is waiting or running; the job as it now is. `JobNotFound` if
        there is none."""
        record = self.reveal(self.store.cancel(_job_id(job_id), now=self.clock()))
        if record is None:
            raise JobNotFound(job_id)
        return record

    def delete(self, job_id: int) -> bool:
        job_id = _job_id(job_id)
        before = self.store.get(job_id) if self.settings.offload is not None else None
        deleted = self.store.delete(job_id)
        if deleted:
            self.delete_offloaded([before])
        return deleted

    def signal(self, job_id: int, name: str, payload: Any = None) -> bool:
        """Store signal `name` on the job (docs/durable.md): True when stored, False when the
        job has one of that name or has finished; `JobNotFound` for an unknown id."""
        from anole_jobs.job import check_name
        from anole_jobs.records import encode_result

        check_name(name, "signal")
        try:
            text = encode_result(
                payload, limit=self.settings.max_result_bytes, where="the signal's payload"
            )
        except TypeError as exc:
            raise TypeError(f"a signal's payload must be a JSON value: {exc}") from None
        stored = self.store.signal(
            _job_id(job_id), name=name, payload="null" if text is None else text, now=self.clock()
        )
        if stored is None:
            raise JobNotFound(job_id)
        return stored

    # -- cron ----------------------------------------------------------------------------
    def cron_entries(self) -> builtins.list[CronEntry]:
        """The parsed `CRON` entries, read once per service (a settings change makes a new
        service). Raises `ConfigurationError` for an invalid entry (the system checks list
        them, and `runjobs` refuses to start). A broken cron parser install skips cron with
        one ERROR line instead: the system checks report it, and every step must not fail."""
        with self._cron_lock:
            if self._cron_entries is None:
                problem = parser_problem() if self.settings.cron else None
                if problem is not None:
                    cron_logger.error("cron is off: %s (manage.py check reports it)", problem)
                    self._cron_entries = []
                else:
                    self._cron_entries = load_cron(self.settings)
            return self._cron_entries

    def cron_list(self) -> builtins.list[CronRecord]:
        """One record per entry, in `CRON` order: its next tick after now and its last enqueued
        tick and job (the job may since have been pruned)."""
        entries = self.cron_entries()
        if not entries:
            return []
        now = self.clock()
        states = self.store.cron_states([entry.name for entry in entries])
        records = []
        for entry in entries:
            state = states.get(entry.name)
            records.append(
                CronRecord(
                    name=entry.name,
                    schedule=entry.schedule,
                    timezone=entry.timezone,
                    next_run_at=entry.next_after(now),
                    last_tick_at=state.last_tick_at if state is not None else None,
                    last_job_id=state.last_job_id if state is not None else None,
                )
            )
        return records

    def cron_trigger(self, name: str) -> Enqueued:
        """Enqueue entry `name`'s job now, outside its schedule; `LookupError` for an unknown
        name. Not unique per tick and not recorded as a tick: the schedule carries on as
        before; the job is recorded as the entry's last job (`cron_list` shows it). A kind
        declared with ``unique=`` keeps that rule, as for any enqueue."""
        entries = self.cron_entries()
        for entry in entries:
            if entry.name == name:
                job = self.build(
                    entry.args_instance(),
                    now=self.clock(),
                    queue=entry.queue,
                    priority=entry.priority,
                    meta={"cron": {"name": entry.name, "triggered": True}, **entry.meta},
                )
                if not self.store.supports_transactions:
                    self._warn_if_in_transaction([job])
                result = self.store.cron_trigger(name=entry.name, job=job)
                self.bus.emit(
                    events.ENQUEUED, queue=job.queue, kind=job.kind, inserted=result.inserted
                )
                return Enqueued(result.id, result.inserted)
        known = ", ".join(repr(entry.name) for entry in entries) or "none"
        raise LookupError(f"no cron entry named {name!r}; entries: {known}")

    # -- queue pause ---------------------------------------------------------------------
    def pause(self, queue: str) -> QueueRecord:
        """Pause `queue` in the store (every instance stops claiming it); idempotent."""
        name = queue_name(queue)
        if self.store.pause(name, now=self.clock()):
            logger.info("queue %s paused: no instance claims its jobs until it is resumed", name)
        return self.queue(name)

    def resume(self, queue: str) -> QueueRecord:
        """Resume `queue` and wake the workers so they claim at once; idempotent."""
        name = queue_name(queue)
        if self.store.resume(name):
            logger.info("queue %s resumed", name)
            self.store.wake([name])
        return self.queue(name)

    def queues(self) -> builtins.list[QueueRecord]:
        """Every queue known from QUEUES, stored jobs or a pause, by name."""
        counts = self.store.counts()
        paused = self.store.paused_queues()
        runtime = self.store.runtime_limits()
        names = sorted(set(self.settings.queues) | set(counts) | set(paused) | set(runtime))
        with_available = [name for name in names if counts.get(name, {}).get("available")]
        oldest = self.store.oldest_available(with_available) if with_available else {}
        return [
            QueueRecord(
                name=name,
                paused=name in paused,
                counts=counts.get(name, {}),
                **self._limits_of(name, runtime),
                oldest_available=oldest.get(name),
            )
            for name in names
        ]

    def queue(self, name: str) -> QueueRecord:
        """One queue's record (any name: a queue nobody used has no jobs and no pause)."""
        name = queue_name(name)
        counts = self.store.counts().get(name, {})
        oldest = self.store.oldest_available([name]) if counts.get("available") else {}
        return QueueRecord(
            name=name,
            paused=name in self.store.paused_queues(),
            counts=counts,
            **self._limits_of(name, self.store.runtime_limits()),
            oldest_available=oldest.get(name),
        )

    def workers(self) -> builtins.list[WorkerRecord]:
        """The worker processes alive now (their records not expired), by host and pid."""
        return self.store.workers(now=self.clock())

    def control_worker(self, worker_id: str, action: str, *, by: str, surface: str) -> bool:
        """Ask worker `worker_id` to quiet or stop (`CONTROL_ACTIONS`); False when no such
        worker is alive."""
        if action not in CONTROL_ACTIONS:
            raise ValueError(f"action must be one of {', '.join(CONTROL_ACTIONS)}, got {action!r}")
        control = WorkerControl(action=action, by=by, at=self.clock(), surface=surface)
        return self.store.request_worker_control(worker_id, control, now=control.at)

    def record_audit(
        self, *, actor: str, action: str, target: str, surface: str, detail: str = ""
    ) -> AuditEntry:
        entry = AuditEntry(
            at=self.clock(),
            actor=actor,
            action=action,
            target=target,
            surface=surface,
            detail=detail,
        )
        self.store.record_audit(entry)
        return entry

    def audit(
        self, *, action: str | None = None, limit: int = 100, before: int | None = None
    ) -> builtins.list[AuditEntry]:
        return self.store.audit_entries(action=action, limit=limit, before=before)

    def stats(
        self,
        queues: Collection[str] | None,
        *,
        since: datetime,
        until: datetime,
        resolution: Resolution = "minute",
    ) -> StatsByQueue:
        """The store's run counters per queue, per minute or hour from `since` to `until`
        (`Store.stats` says what counts where)."""
        return self.store.stats(queues, since=since, until=until, resolution=resolution)

    # -- queue limits (docs/limits.md) -------------------------------------------------------
    def set_limits(
        self,
        queue: str,
        *,
        global_concurrency: object = KEEP,
        rate_limit: object = KEEP,
    ) -> QueueRecord:
        """Store limits for `queue` in place of its settings'; None returns one to the
        settings, an omitted one stays as stored. `ValueError` for a bad value; `InvalidJob`
        for a queue that is neither declared (``QUEUES``, a kind, a ``CRON`` entry) nor known
        to the store (jobs, a pause, limits), unless it is a `NewQueue`."""
        name = queue_name(queue)
        runtime = self.store.runtime_limits()
        if not isinstance(queue, NewQueue) and name not in runtime:
            known = self.declared_queues()
            if name not in known:
                known |= set(self.store.paused_queues()) | set(self.store.counts())
            if name not in known:
                raise InvalidJob(f"set_limits({name!r}): {unknown_queue(name, known)}")
        stored = runtime.get(name, RuntimeLimits())
        concurrency, rate = stored.global_concurrency, stored.rate_limit
        if global_concurrency is not KEEP:
            concurrency = (
                None if global_concurrency is None else parse_concurrency(global_concurrency)
            )
        if rate_limit is not KEEP:
            rate = None if rate_limit is None else parse_rate(rate_limit)
        limits = RuntimeLimits(global_concurrency=concurrency, rate_limit=rate)
        self.store.set_limits(name, limits)
        logger.info(
            "queue %s: limits set at runtime: global_concurrency %s, rate_limit %s",
            name,
            concurrency if concurrency is not None else "from the settings",
            rate if rate is not None else "from the settings",
        )
        self.store.wake([name])  # a raised limit lets held jobs go at once
        return self.queue(name)

    def _limits_of(self, name: str, runtime: Mapping[str, RuntimeLimits]) -> dict[str, Any]:
        """`limits` and `held` of a queue record."""
        config = self.settings.queues.get(name)
        configured = config.limits if config is not None else Limits()
        stored = runtime.get(name)
        effective = configured.overlay(stored)
        limits = QueueLimits(
            global_concurrency=effective.global_concurrency,
            rate_limit=str(effective.rate_limit) if effective.rate_limit is not None else None,
            partition=effective.partition,
            source="runtime" if stored is not None and not stored.empty else "settings",
        )
        held = 0
        if effective.active:
            held = self.store.held_count(name, configured, now=self.clock())
        return {"limits": limits, "held": held}


#: The shortest interval at which a result waiter looks again without a wake-up.
MIN_RESULT_POLL = 0.1


def _result_of(job_id: int, record: JobRecord | None, *, waited: float | None) -> Any:
    """A job's result, or the error that says why there is none (yet)."""
    if record is None:
        raise JobNotFound(job_id)
    if record.state == "completed":
        return record.result
    if record.state in FINAL_STATES:
        raise JobFailed(record)
    raise JobNotFinished(record, waited=waited)


def _search_terms(
    *,
    kind_prefix: str | None,
    error: str | None,
    args: Mapping[str, Any] | None,
    min_id: int | None,
) -> dict[str, Any] | None:
    """`list`'s search terms checked: `InvalidJob` for a wrong type, None for a term no
    stored job can match (a NUL, a lone surrogate)."""
    for name, value in (("kind_prefix", kind_prefix), ("error", error)):
        if value is not None and (not isinstance(value, str) or value == ""):
            raise InvalidJob(f"the {name} filter must be a non-empty string, got {value!r}")
    if args is not None and not isinstance(args, Mapping):
        raise InvalidJob(f"the args filter must be a JSON object (a dict), got {args!r}")
    if args is not None:
        try:
            text = json.dumps(args, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidJob(f"the args filter must be plain JSON: {exc}") from None
        args = json.loads(text)
        problem = search_int_problem(args)
        if problem is not None:
            raise InvalidJob(problem)
    if not all(_storable(v) for v in (kind_prefix or "", error or "", *_strings(args))):
        return None
    return {
        "kind_prefix": kind_prefix,
        "error": error,
        "args": args,
        "min_id": None if min_id is None else max(1, _job_id(min_id)),
    }


def _strings(value: Any) -> Iterable[str]:
    """Every key and string in JSON `value`."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _storable(text: str) -> bool:
    """Whether every store can hold `text` (PostgreSQL refuses NUL; UTF-8, lone surrogates)."""
    return text_problem(text) is None


def queue_name(value: object) -> str:
    """`value` if it can name a queue in every store, else `InvalidJob` saying why."""
    return check_name(value, what="a queue name")


def unknown_queue(name: str, known: Collection[str]) -> str:
    """Why queue `name` is refused as a likely typo, and the two ways to use it anyway."""
    return (
        f"no queue named {name!r}: it is not in ANOLE_JOBS['QUEUES'] and no kind declares it"
        f"{close_names(name, known)} (add it to QUEUES, or pass NewQueue({name!r}) from "
        "anole_jobs to use a new queue on purpose)"
    )


def _job_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_JOB_ID:
        raise InvalidJob(f"a job id is a positive int below 2**63, got {value!r}")
    return value


def _opened_step(step: Mapping[str, Any], keys: Sequence[str]) -> Mapping[str, Any]:
    """A step of `JobRecord.steps` with its sealed result opened (a kind declared with
    encrypt=True stores its steps' results encrypted)."""
    value = step.get("result")
    if not isinstance(value, Mapping) or not encryption.is_sealed(value):
        return step
    return {**step, "result": encryption.open_sealed(value, keys)}
