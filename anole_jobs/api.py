"""The `jobs` facade: the one object users import (R7, R12, R13, R29, R30, R35).

It builds its `Jobs` service lazily on first use, from ``settings.ANOLE_JOBS``, so a
misconfiguration surfaces at the first enqueue (or `runjobs`), never at import or in `ready()`.
`jobs.handler` needs no settings: it only fills the process-wide kind registry.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Never, TypeVar

from asgiref.sync import sync_to_async

from anole_jobs import conf
from anole_jobs.durations import Duration
from anole_jobs.errors import ConfigurationError
from anole_jobs.job import Job
from anole_jobs.kinds import registry, spec_of
from anole_jobs.records import Enqueued, QueueRecord, StepReport
from anole_jobs.schedules import CronRecord
from anole_jobs.service import OPTION_NAMES, Jobs, refuse_unknown_options
from anole_jobs.stores import open_store
from anole_jobs.stores.base import JobRecord
from anole_jobs.unique import Unique

T = TypeVar("T")
R = TypeVar("R")


class JobsFacade:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._service: Jobs | None = None
        self._stepper: Any = None
        self._runtime: Any = None
        conf.on_reset(self.reset)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def service(self) -> Jobs:
        service = self._service
        if service is None:
            with self._lock:
                if self._service is None:
                    settings = conf.read_settings()
                    self._service = Jobs(
                        settings=settings, store=open_store(settings), registry=registry
                    )
                service = self._service
        return service

    def reset(self) -> None:
        """Drop the service (settings changed); the next call builds a new one."""
        with self._lock:
            runtime, service = self._runtime, self._service
            self._service = self._stepper = self._runtime = None
        if runtime is not None:
            runtime.stop()
        if service is not None:
            service.store.close()

    # -- declaring ---------------------------------------------------------------------------
    def handler(
        self, args_type: type[T]
    ) -> Callable[[Callable[[Job, T], R]], Callable[[Job, T], R]]:
        """Register the function that runs jobs of `args_type`'s kind (R7); one per kind.

        Typed so that mypy refuses a handler whose ``args`` annotation is not the kind's type.
        """
        spec = spec_of(args_type)

        def register(func: Callable[[Job, T], R]) -> Callable[[Job, T], R]:
            registry.add_handler(spec, func)
            return func

        return register

    # -- enqueueing --------------------------------------------------------------------------
    # The options are spelled out (not **options) so that editors and mypy know them; a
    # misspelled one lands in `unknown` (typed Never: mypy flags it too) and gets a hint.
    def enqueue(
        self,
        args: object,
        *,
        delay: Duration | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        unique: Unique | None = None,
        meta: Mapping[str, Any] | None = None,
        request: object | None = None,
        on_commit: bool = False,
        **unknown: Never,
    ) -> Enqueued:
        """Enqueue one job (R12); see the docs for the options."""
        refuse_unknown_options("enqueue", unknown)
        return self.service.enqueue(
            args,
            on_commit=on_commit,
            delay=delay,
            run_at=run_at,
            priority=priority,
            queue=queue,
            unique=unique,
            meta=meta,
            request=request,
        )

    async def aenqueue(
        self,
        args: object,
        *,
        delay: Duration | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        unique: Unique | None = None,
        meta: Mapping[str, Any] | None = None,
        request: object | None = None,
        on_commit: bool = False,
        **unknown: Never,
    ) -> Enqueued:
        """`enqueue` for async code; runs in the thread that owns Django's connections."""
        refuse_unknown_options("aenqueue", unknown)
        enqueue = sync_to_async(self.enqueue, thread_sensitive=True)
        return await enqueue(
            args,
            delay=delay,
            run_at=run_at,
            priority=priority,
            queue=queue,
            unique=unique,
            meta=meta,
            request=request,
            on_commit=on_commit,
        )

    def enqueue_many(
        self,
        iterable: Iterable[object],
        *,
        delay: Duration | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        unique: Unique | None = None,
        meta: Mapping[str, Any] | None = None,
        request: object | None = None,
        on_commit: bool = False,
        **unknown: Never,
    ) -> builtins.list[Enqueued]:
        """Enqueue many jobs with the same options, one store round trip per 1000 (R13)."""
        refuse_unknown_options("enqueue_many", unknown)
        return self.service.enqueue_many(
            iterable,
            on_commit=on_commit,
            delay=delay,
            run_at=run_at,
            priority=priority,
            queue=queue,
            unique=unique,
            meta=meta,
            request=request,
        )

    def enqueue_in(
        self,
        args: object,
        *,
        using: str,
        delay: Duration | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        unique: Unique | None = None,
        meta: Mapping[str, Any] | None = None,
        request: object | None = None,
        **unknown: Never,
    ) -> Enqueued:
        """Enqueue inside the open ``transaction.atomic(using=using)`` of the store (R14)."""
        names = ("using", *(name for name in OPTION_NAMES if name != "on_commit"))
        refuse_unknown_options("enqueue_in", unknown, names)
        return self.service.enqueue_in(
            args,
            using=using,
            delay=delay,
            run_at=run_at,
            priority=priority,
            queue=queue,
            unique=unique,
            meta=meta,
            request=request,
        )

    # -- admin -------------------------------------------------------------------------------
    def get(self, job_id: int) -> JobRecord | None:
        return self.service.get(job_id)

    def list(self, **filters: Any) -> builtins.list[JobRecord]:
        return self.service.list(**filters)

    def counts(self) -> dict[str, dict[str, int]]:
        return self.service.counts()

    def retry(self, job_id: int) -> JobRecord | None:
        return self.service.retry(job_id)

    def cancel(self, job_id: int) -> JobRecord | None:
        return self.service.cancel(job_id)

    def delete(self, job_id: int) -> bool:
        return self.service.delete(job_id)

    def cron_list(self) -> builtins.list[CronRecord]:
        """One record per `CRON` entry: schedule, time zone, next run, last tick and job."""
        return self.service.cron_list()

    def cron_trigger(self, name: str) -> Enqueued:
        """Enqueue cron entry `name`'s job now, outside its schedule (`LookupError` if unknown)."""
        return self.service.cron_trigger(name)

    # -- queue pause (R36) -------------------------------------------------------------------
    def pause(self, queue: str) -> QueueRecord:
        """Pause `queue` for every instance: within about a second none claims its jobs
        (running ones finish; the others stay available). Idempotent; any queue name. Stored
        in the store, so it survives restarts on durable stores."""
        return self.service.pause(queue)

    def resume(self, queue: str) -> QueueRecord:
        """Resume `queue`; its workers are woken at once. Idempotent."""
        return self.service.resume(queue)

    def queues(self) -> builtins.list[QueueRecord]:
        """One record (`name, paused, counts`) per queue known from QUEUES, jobs or a pause."""
        return self.service.queues()

    # -- running -----------------------------------------------------------------------------
    def step(self) -> StepReport:
        """Run one round in this thread (R35): leader, cron, stage, rescue, prune, due jobs."""
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
        """Start workers for the configured queues (or `queues`) in this process (R29).

        Idempotent. Refused under DEPLOYMENT="lambda" and RUN="manual".
        """
        service = self.service
        if service.settings.run == "manual":
            raise ConfigurationError('RUN="manual" starts no workers; use jobs.step() in tests')
        with self._lock:
            if self._runtime is None:
                from anole_jobs.worker.runner import Runtime

                runtime = Runtime(service, queues=queues, concurrency=concurrency)
                # The start-up line comes before anything is claimed (SPEC §13).
                logging.getLogger("anole_jobs").info(
                    "anole_jobs workers starting: %s", runtime.describe()
                )
                runtime.start()
                self._runtime = runtime
            return self._runtime

    def stop(self, *, drain: bool = True) -> None:
        """Drain and stop the workers `start` began (R27); a no-op when none run."""
        with self._lock:
            runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.stop(drain=drain)


jobs = JobsFacade()
