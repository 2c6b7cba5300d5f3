"""The `jobs` facade: the one object users import to declare handlers, enqueue, inspect and
act on jobs, and run workers (or `step()` them in tests).

It builds its `JobService` service lazily on first use, from ``settings.ANOLE_JOBS``, so a
misconfiguration surfaces at the first enqueue (or `runjobs`), never at import or in `ready()`.
`jobs.handler` needs no settings: it only fills the process-wide kind registry.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from typing import Any, TypeVar, Unpack

from asgiref.sync import sync_to_async
from django.db import connections

from anole_jobs import conf, metrics
from anole_jobs.core import JobRecord
from anole_jobs.durations import Duration
from anole_jobs.errors import ConfigurationError
from anole_jobs.job import Job
from anole_jobs.kinds import registry, spec_of
from anole_jobs.limits import KEEP
from anole_jobs.records import Enqueued, QueueRecord, StepReport, Waiting
from anole_jobs.schedules import CronRecord
from anole_jobs.service import (
    ENQUEUE_IN_NAMES,
    EnqueueOptions,
    JobService,
    enqueue_options,
    with_enqueue_options,
)
from anole_jobs.stores import open_store
from anole_jobs.stores.audit import AuditEntry
from anole_jobs.stores.stats import Resolution, StatsByQueue
from anole_jobs.stores.workers import WorkerRecord
from anole_jobs.workflows import Workflow, WorkflowEnqueued, WorkflowRecord

T = TypeVar("T")
R = TypeVar("R")


class JobsFacade:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._service: JobService | None = None
        self._stepper: Any = None
        self._runtime: Any = None
        self._unobserve: Callable[[], None] = lambda: None
        conf.on_reset(self.reset)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def service(self) -> JobService:
        service = self._service
        if service is None:
            with self._lock:
                if self._service is None:
                    settings = conf.read_settings()
                    self._service = JobService(
                        settings=settings, store=open_store(settings), registry=registry
                    )
                    self._unobserve = metrics.observe(self._service.bus, settings)
                service = self._service
        return service

    @property
    def settings(self) -> conf.Settings:
        """``settings.ANOLE_JOBS`` as parsed and in force (read on first use, like the
        service)."""
        return self.service.settings

    def reset(self) -> None:
        """Drop the service (settings changed); the next call builds a new one."""
        with self._lock:
            runtime, service, stepper = self._runtime, self._service, self._stepper
            self._service = self._stepper = self._runtime = None
            unobserve, self._unobserve = self._unobserve, lambda: None
        if stepper is not None:
            try:
                stepper.close()  # resigns (heard by the metrics, still observing)
            except Exception:  # noqa: BLE001 - the leadership then lapses with its lease
                logging.getLogger("anole_jobs").warning(
                    "could not resign jobs.step()'s leadership; it lapses with its lease"
                )
        unobserve()
        if runtime is not None:
            runtime.stop()
        if service is not None:
            service.store.close()

    # -- declaring ---------------------------------------------------------------------------
    def handler(
        self, args_type: type[T]
    ) -> Callable[[Callable[[Job, T], R]], Callable[[Job, T], R]]:
        """Register the function that runs jobs of `args_type`'s kind; one per kind.

        Typed so that mypy refuses a handler whose ``args`` annotation is not the kind's type.
        """
        spec = spec_of(args_type)

        def register(func: Callable[[Job, T], R]) -> Callable[[Job, T], R]:
            registry.add_handler(spec, func)
            return func

        return register

    # -- enqueueing --------------------------------------------------------------------------
    # The options are declared once, in `EnqueueOptions`: `Unpack` makes type checkers and
    # editors see each as a keyword-only parameter (a misspelled one is a type error), and
    # `with_enqueue_options` writes them into the runtime signature (help(), inspect). A
    # misspelled option still reaches `enqueue_options`, which refuses it with a hint.
    @with_enqueue_options
    def enqueue(
        self, args: object, *, on_commit: bool = False, **options: Unpack[EnqueueOptions]
    ) -> Enqueued:
        """Enqueue one job; see the docs for the options."""
        return self.service.enqueue(
            args, on_commit=on_commit, **enqueue_options("enqueue", options)
        )

    @with_enqueue_options
    async def aenqueue(
        self, args: object, *, on_commit: bool = False, **options: Unpack[EnqueueOptions]
    ) -> Enqueued:
        """`enqueue` for async code (Django async views, async handlers): the store call runs
        in the thread Django's `sync_to_async` gives thread-sensitive code, so no
        `SynchronousOnlyOperation`. In a view that thread holds the request's connections; it
        runs in autocommit there (Django's async ORM has no `atomic()`), and `on_commit=True`
        enqueues once the transaction open in that thread, if any, commits. See
        docs/runtime.md."""
        checked = enqueue_options("aenqueue", options)
        enqueue = sync_to_async(self.enqueue, thread_sensitive=True)
        return await enqueue(args, on_commit=on_commit, **checked)

    @with_enqueue_options
    async def aenqueue_many(
        self,
        iterable: Iterable[object],
        *,
        on_commit: bool = False,
        **options: Unpack[EnqueueOptions],
    ) -> builtins.list[Enqueued]:
        """`enqueue_many` for async code, in the same thread as `aenqueue`."""
        checked = enqueue_options("aenqueue_many", options)
        items = list(iterable)  # a generator is read here, not in the other thread
        enqueue_many = sync_to_async(self.enqueue_many, thread_sensitive=True)
        return await enqueue_many(items, on_commit=on_commit, **checked)

    @with_enqueue_options
    def enqueue_many(
        self,
        iterable: Iterable[object],
        *,
        on_commit: bool = False,
        **options: Unpack[EnqueueOptions],
    ) -> builtins.list[Enqueued]:
        """Enqueue many jobs with the same options, one store round trip per 1000 jobs."""
        return self.service.enqueue_many(
            iterable, on_commit=on_commit, **enqueue_options("enqueue_many", options)
        )

    @with_enqueue_options
    def enqueue_in(
        self, args: object, *, using: str, **options: Unpack[EnqueueOptions]
    ) -> Enqueued:
        """Enqueue inside the open ``transaction.atomic(using=using)`` of the store's database:
        the job commits or rolls back with your data."""
        return self.service.enqueue_in(
            args, using=using, **enqueue_options("enqueue_in", options, ENQUEUE_IN_NAMES)
        )

    # -- admin -------------------------------------------------------------------------------
    def get(self, job_id: int) -> JobRecord | None:
        return self.service.get(job_id)

    def list(self, **filters: Any) -> builtins.list[JobRecord]:
        return self.service.list(**filters)

    async def aget(self, job_id: int) -> JobRecord | None:
        """`get` for async code, in the same thread as `aenqueue`."""
        return await sync_to_async(self.get, thread_sensitive=True)(job_id)

    async def alist(self, **filters: Any) -> builtins.list[JobRecord]:
        """`list` for async code, in the same thread as `aenqueue`."""
        return await sync_to_async(self.list, thread_sensitive=True)(**filters)

    def counts(self) -> dict[str, dict[str, int]]:
        return self.service.counts()

    def check_deploy(self) -> builtins.list[Any]:
        """What waits in the store that this code cannot run: one `deploys.DeployProblem`
        per kind and version (no handler, no alias, no upcaster path, a newer version).
        Empty when this code can run every job not finished (docs/deploys.md)."""
        from anole_jobs import deploys

        service = self.service
        return deploys.deploy_problems(service.registry, service.store.live_versions())

    def reencrypt(self) -> int:
        """Seal the args and result of every job stored encrypted again with the newest of
        `ENCRYPTION_KEYS`; how many jobs it rewrote (docs/encryption.md)."""
        return self.service.reencrypt()

    def result(self, job_id: int, *, timeout: Duration | None = None) -> Any:
        """The result of a completed job: its handler's return value (None if it returned
        None). Raises `JobFailed` for a dead or cancelled job, `JobNotFound` (a `LookupError`)
        for an unknown one, and `JobNotFinished` (a `TimeoutError`) for one not finished: at
        once without `timeout`, else after waiting up to `timeout` (seconds or a timedelta)
        for it to finish, woken by the store's wake-ups. See docs/results.md."""
        return self.service.result(job_id, timeout=timeout)

    async def aresult(self, job_id: int, *, timeout: Duration | None = None) -> Any:
        """`result` for async code: the wait runs in a worker thread, so the event loop (and
        Django's sync thread) is free meanwhile."""
        return await sync_to_async(_result_in_thread, thread_sensitive=False)(
            self.service, job_id, timeout
        )

    def why(self, job_id: int) -> Waiting | None:
        """Why the job is not running: None when it runs or has finished, else a `Waiting`
        with its `reason` (one of "scheduled", "retry_backoff", "queue_paused",
        "concurrency_limit", "rate_limit", "sequence", "dependencies", "signal", "debounce",
        "no_worker", "ready"), a `detail` for a person and `until`, when the wait ends if
        known. Raises `JobNotFound` (a `LookupError`) for an unknown id. See
        docs/debounce.md."""
        from anole_jobs import why

        return why.explain(self.service, job_id)

    def retry(self, job_id: int) -> JobRecord:
        """Make the job `available` now (one more attempt if it had none left); the job as it
        now is. Raises `JobNotFound` (a `LookupError`) when no job has this id."""
        return self.service.retry(job_id)

    def act(self, action: str, ids: Collection[int], *, state: str | None = None) -> int:
        """Retry, cancel or delete the jobs of `ids` (at most 1,000) that are still in
        `state` (any state when None); returns how many it changed. Bulk actions on every job
        matching a filter loop over this (`anole_jobs.operations.bulk`)."""
        return self.service.act(action, ids, state=state)

    def cancel(self, job_id: int) -> JobRecord:
        """Cancel a waiting or running job (a finished one is left as it is); the job as it
        now is. Raises `JobNotFound` (a `LookupError`) when no job has this id."""
        return self.service.cancel(job_id)

    def delete(self, job_id: int) -> bool:
        """Delete the job whatever its state; False when there was no such job."""
        return self.service.delete(job_id)

    # -- signals (docs/durable.md) -------------------------------------------------------------
    def signal(self, job_id: int, name: str, payload: Any = None) -> bool:
        """Send signal `name` with `payload` (JSON) to a job not finished: True when stored;
        False (nothing changes) when the job already has a signal of that name or has
        finished. A job waiting for it in `job.wait_for_signal` becomes available in the same
        write. Raises `JobNotFound` (a `LookupError`) for an unknown id."""
        return self.service.signal(job_id, name, payload)

    async def asignal(self, job_id: int, name: str, payload: Any = None) -> bool:
        """`signal` for async code; runs in the thread that owns Django's connections."""
        return await sync_to_async(self.signal, thread_sensitive=True)(job_id, name, payload)

    # -- workflows (docs/workflows.md) --------------------------------------------------------
    def enqueue_workflow(self, workflow: Workflow, *, on_commit: bool = False) -> WorkflowEnqueued:
        """Enqueue every step of `workflow` or none, joining the open
        ``transaction.atomic()`` of the store's database like `enqueue`."""
        from anole_jobs import workflow_service

        return workflow_service.enqueue_workflow(self.service, workflow, on_commit=on_commit)

    def workflow(self, workflow_id: str) -> WorkflowRecord | None:
        """The workflow with this id (its state, steps and dependencies), or None."""
        from anole_jobs import workflow_service

        return workflow_service.get_workflow(self.service, workflow_id)

    def cancel_workflow(self, workflow_id: str) -> WorkflowRecord | None:
        """Cancel every step of the workflow not ended yet; the workflow as it now is."""
        from anole_jobs import workflow_service

        return workflow_service.cancel_workflow(self.service, workflow_id)

    def cron_list(self) -> builtins.list[CronRecord]:
        """One record per `CRON` entry: schedule, time zone, next run, last tick and job."""
        return self.service.cron_list()

    def cron_trigger(self, name: str) -> Enqueued:
        """Enqueue cron entry `name`'s job now, outside its schedule (`LookupError` if unknown)."""
        return self.service.cron_trigger(name)

    # -- queue pause ---------------------------------------------------------------------------
    def pause(self, queue: str) -> QueueRecord:
        """Pause `queue` for every instance: within about a second none claims its jobs
        (running ones finish; the others stay available). Idempotent; any queue name. Stored
        in the store, so it survives restarts on durable stores."""
        return self.service.pause(queue)

    def resume(self, queue: str) -> QueueRecord:
        """Resume `queue`; its workers are woken at once. Idempotent."""
        return self.service.resume(queue)

    def set_limits(
        self,
        queue: str,
        *,
        global_concurrency: int | None = KEEP,
        rate_limit: str | tuple[int, Duration] | None = KEEP,
    ) -> QueueRecord:
        """Change `queue`'s limits while workers run (docs/limits.md): stored in the store, in
        place of the settings' (`global_concurrency` an int, `rate_limit` "N/s", "N/m", "N/h"
        or (N, duration)); None returns that limit to the settings, an omitted one stays as
        it is. Every worker claims within them within about a second. `ValueError` for a bad
        value."""
        return self.service.set_limits(
            queue, global_concurrency=global_concurrency, rate_limit=rate_limit
        )

    def queues(self) -> builtins.list[QueueRecord]:
        """One record (`name, paused, counts`) per queue known from QUEUES, jobs or a pause."""
        return self.service.queues()

    def stats(
        self,
        queues: Collection[str] | None = None,
        *,
        since: datetime,
        until: datetime,
        resolution: Resolution = "minute",
    ) -> StatsByQueue:
        """Runs started, completed, retried and dead, and the completed runs' times, per queue
        (every queue with counters when `queues` is None) and per minute or hour
        (`resolution`) from `since` to `until`: ``{queue: [StatsPoint]}`` in time order,
        periods with nothing counted left out. Read from counters the store keeps as jobs
        move, never from the jobs themselves (docs/dashboard.md#statistics says what counts)."""
        return self.service.stats(queues, since=since, until=until, resolution=resolution)

    def now(self) -> datetime:
        """The time now by the configured ``CLOCK`` (a `FakeClock` in tests): what the
        surfaces show as "now", so that moving a fake clock moves them too."""
        return self.service.clock()

    def lowest_id_below(self, below: int, count: int) -> int:
        """The lowest id that the `count` jobs enqueued one after another just before job
        `below` can have (at least 1): how far a search's window of that many jobs reaches."""
        return self.service.store.lowest_id_below(below, count)

    def workers(self) -> builtins.list[WorkerRecord]:
        """One record per worker process alive now (a `runjobs` process, or each process of a
        supervisor): host, pid, version, queues with their busy and total slots, when it
        started and was last seen, and the jobs it holds. See docs/admin.md."""
        return self.service.workers()

    def quiet_worker(self, worker_id: str, *, by: str = "code", surface: str = "api") -> bool:
        """Ask the worker process `worker_id` (its `WorkerRecord.id`) to claim nothing more and
        finish the jobs it runs; it does within about a second. False when no such worker is
        alive. See docs/admin.md, "Worker controls"."""
        return self.service.control_worker(worker_id, "quiet", by=by, surface=surface)

    def stop_worker(self, worker_id: str, *, by: str = "code", surface: str = "api") -> bool:
        """Ask the worker process `worker_id` to drain and exit, as a first SIGTERM does (a
        runtime started in-process quiets instead). False when no such worker is alive."""
        return self.service.control_worker(worker_id, "stop", by=by, surface=surface)

    def control_worker(self, worker_id: str, action: str, *, by: str, surface: str) -> bool:
        """`quiet_worker` or `stop_worker` by `action` ("quiet" or "stop")."""
        return self.service.control_worker(worker_id, action, by=by, surface=surface)

    def record_audit(
        self, *, actor: str, action: str, target: str, surface: str, detail: str = ""
    ) -> AuditEntry:
        """Add an entry to the operators' audit log (the surfaces do, through operations)."""
        return self.service.record_audit(
            actor=actor, action=action, target=target, surface=surface, detail=detail
        )

    def audit(
        self, *, action: str | None = None, limit: int = 100, before: int | None = None
    ) -> builtins.list[AuditEntry]:
        """The operators' audit log, newest first (docs/dashboard.md, "Audit")."""
        return self.service.audit(action=action, limit=limit, before=before)

    # -- running -----------------------------------------------------------------------------
    def step(self) -> StepReport:
        """Run one round in this thread: leader, cron, stage, rescue, prune, due jobs."""
        service = self.service
        if service.settings.run != "manual":
            raise ConfigurationError(
                'jobs.step() is for RUN="manual" (tests); with RUN="auto" workers run the jobs'
            )
        with self._lock:
            if self._stepper is None:
                from anole_jobs.worker.step import Stepper

                self._stepper = Stepper(service)
            stepper = self._stepper
        return stepper.step()

    def start(
        self, *, queues: builtins.list[str] | None = None, concurrency: int | None = None
    ) -> Any:
        """Start workers for the configured queues (or `queues`) in this process.

        Idempotent. Refused under DEPLOYMENT="lambda" and RUN="manual".
        """
        service = self.service
        if service.settings.run == "manual":
            raise ConfigurationError('RUN="manual" starts no workers; use jobs.step() in tests')
        with self._lock:
            if self._runtime is None:
                from anole_jobs.worker.runner import Runtime

                runtime = Runtime(service, queues=queues, concurrency=concurrency)
                # The start-up line comes before anything is claimed.
                logging.getLogger("anole_jobs").info(
                    "anole_jobs workers starting: %s", runtime.describe()
                )
                runtime.start()
                self._runtime = runtime
            return self._runtime

    def stop(self, *, drain: bool = True) -> None:
        """Drain and stop the workers `start` began; a no-op when none run."""
        with self._lock:
            runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.stop(drain=drain)


def _result_in_thread(service: JobService, job_id: int, timeout: Duration | None) -> Any:
    try:
        return service.result(job_id, timeout=timeout)
    finally:
        # This pool thread's own database connections: nothing else would close them.
        if service.store.atomic_alias is not None:
            connections[service.store.atomic_alias].close()


jobs = JobsFacade()
