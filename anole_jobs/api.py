"""The `jobs` facade: the one object users import (R7, R12, R13, R29, R30, R35).

It builds its `Jobs` service lazily on first use, from ``settings.ANOLE_JOBS``, so a
misconfiguration surfaces at the first enqueue (or `runjobs`), never at import or in `ready()`.
`jobs.handler` needs no settings: it only fills the process-wide kind registry.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

from anole_jobs import conf, metrics
from anole_jobs.errors import ConfigurationError
from anole_jobs.kinds import registry, spec_of
from anole_jobs.maintenance import cron as _cron
from anole_jobs.records import Enqueued, StepReport
from anole_jobs.service import Jobs
from anole_jobs.stores import open_store
from anole_jobs.stores.base import JobRecord

F = TypeVar("F", bound=Callable[..., Any])


class JobsFacade:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._service: Jobs | None = None
        self._stepper: Any = None
        self._runtime: Any = None
        self._unobserve: Callable[[], None] = lambda: None
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
                    self._unobserve = metrics.observe(self._service.bus, settings)
                service = self._service
        return service

    def reset(self) -> None:
        """Drop the service (settings changed); the next call builds a new one."""
        with self._lock:
            runtime, service = self._runtime, self._service
            self._service = self._stepper = self._runtime = None
            unobserve, self._unobserve = self._unobserve, lambda: None
        unobserve()
        if runtime is not None:
            runtime.stop()
        if service is not None:
            service.store.close()

    # -- declaring ---------------------------------------------------------------------------
    def handler(self, args_type: type) -> Callable[[F], F]:
        """Register the function that runs jobs of `args_type`'s kind (R7); one per kind."""
        spec = spec_of(args_type)

        def register(func: F) -> F:
            registry.add_handler(spec, func)
            return func

        return register

    # -- enqueueing --------------------------------------------------------------------------
    def enqueue(self, args: object, **options: Any) -> Enqueued:
        """Enqueue one job (R12); see the docs for the options."""
        return self.service.enqueue(args, **options)

    async def aenqueue(self, args: object, **options: Any) -> Enqueued:
        """`enqueue` for async code; runs in the thread that owns Django's connections."""
        return await sync_to_async(self.enqueue, thread_sensitive=True)(args, **options)

    def enqueue_many(self, iterable: Iterable[object], **options: Any) -> list[Enqueued]:
        return self.service.enqueue_many(iterable, **options)

    def enqueue_in(self, args: object, *, using: str, **options: Any) -> Enqueued:
        return self.service.enqueue_in(args, using=using, **options)

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

    def cron_list(self) -> builtins.list[_cron.CronRecord]:
        """One record per `CRON` entry: schedule, time zone, next run, last tick and job."""
        return _cron.cron_list(self.service)

    def cron_trigger(self, name: str) -> Enqueued:
        """Enqueue cron entry `name`'s job now, outside its schedule (`LookupError` if unknown)."""
        return _cron.cron_trigger(self.service, name)

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
