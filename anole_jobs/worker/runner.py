"""The runtime: worker pools for the configured queues, heartbeats, timeouts and
maintenance, and the drain that stops them.

`jobs.start()` / `jobs.stop()` drive it inside an app's own process; `manage.py runjobs` is
built on them. Drain: stop claiming; give running jobs each queue's `drain_timeout`; then
cancel them and give them `DRAIN_GRACE` to end by themselves (a handler that lets `Canceled`
go up is `interrupted`: back to `available`, the attempt not counted; one that swallows it and
returns is `completed`; one that finished meanwhile keeps its outcome). Only what still runs
after the grace is put back by the runtime itself, fenced. The completer then writes what is
pending, so the process never leaves while a finished run's write is in flight; all of it
within max(drain_timeout) + 3 s.

What an operator reads: the drain's first line says how many jobs it waits for and for how
long; a queue whose `drain_timeout` passes says how many it cancels; each run's end has its
line (`outcomes`). `give_back_running` ends a drain early (runjobs' second signal): the jobs
still running go back at once instead of staying held until their lease lapses. A job that
drains keep giving back is counted and, past a few in a row, logged (`drained`).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from anole_jobs.background import (
    BackgroundThread,
    StoreHealth,
    close_broken_connections,
    describe_error,
    sharing_store_sessions,
)
from anole_jobs.clock import monotonic
from anole_jobs.conf import QueueConfig
from anole_jobs.errors import (
    RUN_MIGRATE,
    ConfigurationError,
    StoreUnavailable,
    missing_schema,
)
from anole_jobs.maintenance.loop import MaintenanceLoop
from anole_jobs.service import JobService
from anole_jobs.stores.base import ClaimedJob
from anole_jobs.tracing import RunSpan
from anole_jobs.worker import drained
from anole_jobs.worker.completer import Completer, QueueCompleters
from anole_jobs.worker.control import ControlWatch
from anole_jobs.worker.executor import Executor
from anole_jobs.worker.heartbeat import Heartbeat, heartbeat_interval
from anole_jobs.worker.logflush import LogFlusher
from anole_jobs.worker.outcomes import Attempt, Outcomes, give_back
from anole_jobs.worker.presence import Presence, host_label
from anole_jobs.worker.queue import QueueWorker
from anole_jobs.worker.runs import Run, RunRegistry

logger = logging.getLogger("anole_jobs.worker")

WRITE_GRACE = 3.0  # seconds a finished run's write may take past the drain deadline
#: Seconds cancelled runs get to end by themselves before the runtime puts them back (within
#: WRITE_GRACE, leaving time for that write).
DRAIN_GRACE = 1.0
POLL_INTERVAL = 1.0


class Runtime:
    def __init__(
        self,
        service: JobService,
        *,
        queues: Sequence[str] | None = None,
        concurrency: int | None = None,
        poll_interval: float = POLL_INTERVAL,
    ) -> None:
        settings = service.settings
        if settings.deployment == "lambda":
            raise ConfigurationError(
                'ANOLE_JOBS["DEPLOYMENT"] is "lambda": this process only enqueues and never runs '
                'workers; run them elsewhere with DEPLOYMENT="server"'
            )
        names = list(queues) if queues else list(settings.queues)
        unknown = [name for name in names if name not in settings.queues]
        if unknown:
            raise ConfigurationError(
                f"unknown queue(s) {', '.join(unknown)}; configured: {', '.join(settings.queues)}"
            )
        self.service = service
        self.queue_configs: list[QueueConfig] = [
            QueueConfig(
                name=name,
                concurrency=concurrency or settings.queues[name].concurrency,
                drain_timeout=settings.queues[name].drain_timeout,
            )
            for name in names
        ]
        self.instance = f"{host_label()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        # Its sessions say who holds them (PostgreSQL's application_name).
        service.store.name_sessions(self.instance)
        self.runs = RunRegistry()
        self.executor = Executor(service, manual=False)
        self.outcomes = Outcomes(service)
        self.completer = (
            QueueCompleters(service, self.outcomes, names)
            if service.store.queues_fail_apart
            else Completer(service, self.outcomes)
        )
        self.presence = Presence(
            service,
            worker_id=self.instance,
            queues=self.queue_configs,
            runs=self.runs,
            interval=heartbeat_interval(service),
        )
        self.heartbeat = Heartbeat(service, self.runs, self.presence)
        # The running attempts' log lines, stored about once a second (worker/logflush.py).
        self.log_flusher = LogFlusher(service, self.executor)
        # An operator's quiet or stop request, read about twice a second (worker/control.py).
        self.control = ControlWatch(service, self.instance, on_quiet=self.stop_claiming)
        self.maintenance = MaintenanceLoop(service, instance=self.instance, queues=names)
        self.workers = [
            QueueWorker(
                service,
                config,
                executor=self.executor,
                completer=self.completer,
                runs=self.runs,
                worker_name=self.instance,
                poll_interval=poll_interval,
            )
            for config in self.queue_configs
        ]
        self._state_lock = threading.Lock()
        self.started = False
        self.stopped = threading.Event()

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        with self._state_lock:
            if self.started:
                return
            self.started = True
        self.completer.start()
        self.heartbeat.start()
        self.log_flusher.start()
        self.maintenance.start()
        for worker in self.workers:
            worker.start()
        self.control.start()

    def stop_claiming(self) -> int:
        """Claim nothing more; give back what was claimed but not started, the attempt not
        counted (how many). A quieted or recycling worker does this before it drains."""
        for worker in self.workers:
            worker.stop_claiming()
        given = 0
        for worker in self.workers:
            unstarted = worker.take_unstarted()
            if unstarted:
                worker.give_back(unstarted)
                given += len(unstarted)
        return given

    def describe(self) -> str:
        queues = ", ".join(f"{c.name} (concurrency {c.concurrency})" for c in self.queue_configs)
        store = self.service.store
        return (
            f"store {store.name}, queues {queues}, instance {self.instance}, "
            "leader: not yet (elected by the store; logged when it changes)"
        )

    def stop(self, *, drain: bool = True, reason: str = "", hint: str = "") -> None:
        """Drain and stop; returns within max(drain_timeout) + 3 s.

        The drain's first log line says how many jobs it waits for and for how long;
        `reason` (why it drains, e.g. "runjobs: SIGTERM received") and `hint` (what else the
        operator can do) go into that line."""
        with sharing_store_sessions():  # its store calls are the runtime's, as its threads'
            self._stop(drain=drain, reason=reason, hint=hint)

    def _stop(self, *, drain: bool, reason: str, hint: str) -> None:
        with self._state_lock:
            if not self.started or self.stopped.is_set():
                return
        began = monotonic()
        latest = max((c.drain_timeout.total_seconds() for c in self.queue_configs), default=0.0)
        # Every wait below takes only what is left of the bound: a hung store call
        # cannot keep the process past max(drain_timeout) + 3 s.
        deadline = began + (latest if drain else 0.0) + WRITE_GRACE

        def left() -> float:
            return max(0.0, deadline - monotonic())

        for worker in self.workers:
            worker.stop_claiming()
        # Claimed ahead but not started: not waited for (given back below).
        unstarted = {worker.name: worker.take_unstarted() for worker in self.workers}
        logger.info(self._drain_plan(drain, reason, hint))
        for worker in self.workers:
            worker.join_dispatcher(timeout=min(5.0, left()))
        # Each queue waits its own drain_timeout, in parallel.
        drainers = [
            threading.Thread(
                target=self._drain_queue,
                args=(
                    config,
                    began + (config.drain_timeout.total_seconds() if drain else 0.0),
                    unstarted[config.name],
                ),
                name=f"anole-drain-{config.name}",
                daemon=True,
            )
            for config in self.queue_configs
        ]
        for thread in drainers:
            thread.start()
        for thread in drainers:
            thread.join(timeout=left())
        self.control.request_stop()
        self.heartbeat.request_stop()
        self.log_flusher.request_stop()
        self.maintenance.request_stop()
        self.completer.stop(timeout=left())
        self.heartbeat.join(timeout=min(5.0, left()))
        self.log_flusher.join(timeout=min(2.0, left()))
        # Gone from the workers' list at once (a killed process's record expires instead).
        self.presence.remove(timeout=min(2.0, left()))
        self.maintenance.join(timeout=min(10.0, left()))
        for worker in self.workers:
            worker.release_slots()
        self.stopped.set()
        logger.info("workers stopped (%.1f s)", monotonic() - began)

    def _drain_plan(self, drain: bool, reason: str, hint: str) -> str:
        """The drain's first line: how many jobs it waits for, and for how long."""
        head = f"{reason}; draining" if reason else "draining"
        running = {c.name: self.runs.count(c.name) for c in self.queue_configs}
        total = sum(running.values())
        tail = f"; {hint}" if hint and total else ""
        if not total:
            return f"{head}: no job running; stopping"
        if not drain:
            return f"{head}: not waiting; giving back {total} running job(s) now{tail}"
        busy = [c for c in self.queue_configs if running[c.name]]
        longest = max(c.drain_timeout.total_seconds() for c in busy)
        per_queue = ", ".join(
            f"{c.name}: {running[c.name]} within its drain_timeout of "
            f"{c.drain_timeout.total_seconds():g} s"
            for c in busy
        )
        return (
            f"{head}: waiting up to {longest:g} s for {total} running job(s) to finish "
            f"({per_queue}); those still running then are cancelled and given back{tail}"
        )

    def _drain_queue(
        self, config: QueueConfig, deadline: float, unstarted: list[ClaimedJob]
    ) -> None:
        with sharing_store_sessions():
            self._drain_queue_now(config, deadline, unstarted)

    def _drain_queue_now(
        self, config: QueueConfig, deadline: float, unstarted: list[ClaimedJob]
    ) -> None:
        worker = next(w for w in self.workers if w.name == config.name)
        unstarted = unstarted + worker.take_unstarted()
        if unstarted:
            worker.give_back(unstarted)
        if self.runs.wait_empty(config.name, max(0.0, deadline - monotonic())):
            return
        # Deadline: cancel, and let each run end by itself for a moment (its next wait raises
        # Canceled; a finished run's attempt goes to the completer as usual).
        running = self.runs.snapshot(config.name)
        logger.info(
            "queue %s: drain_timeout (%g s) passed with %d job(s) still running; cancelling "
            "them (given back, the attempt not counted)",
            config.name,
            config.drain_timeout.total_seconds(),
            len(running),
        )
        for run in running:
            run.scope.cancel("drain")
        if self.runs.wait_empty(config.name, DRAIN_GRACE):
            return
        # Still running (a sync handler that reaches no wait): put it back ourselves, fenced.
        self._give_back_runs(
            [run for run in self.runs.snapshot(config.name) if run.interrupt_by_runtime()]
        )

    def _give_back_runs(self, runs: list[Run]) -> None:
        """Put back runs the runtime took over from their handlers (`interrupt_by_runtime`),
        fenced and the attempt not counted; each counts as a give-back by a drain."""
        if not runs:
            return
        for run in runs:
            drained.count_give_back(self.service, run.claimed)
        now = self.service.clock()
        interrupted = [
            Attempt(
                claimed=run.claimed,
                outcome="interrupted",
                # Its handler did start: the attempt shows in the job's timeline.
                finish=replace(give_back(run.ref, now), outcome="interrupted"),
                seconds=monotonic() - run.started_at,
                span=run.span or RunSpan(),
            )
            for run in runs
        ]
        try:
            self.outcomes.write(interrupted)
        except Exception:  # noqa: BLE001 - recorded unsaved; the lease lapses, rescue puts them back
            return
        self.service.store.wake(sorted({run.claimed.record.queue for run in runs}))

    def give_back_running(self, timeout: float = WRITE_GRACE) -> int:
        """Stop waiting: give every running job back now (fenced, the attempt not counted),
        and write the outcomes of runs that already ended. For a second SIGTERM/SIGINT during
        a drain, so the jobs run again elsewhere at once instead of after their lease; a
        handler still running is cancelled and its outcome dropped. Returns how many running
        jobs were given back; takes about `timeout` seconds at most (store calls aside)."""
        with sharing_store_sessions():
            return self._give_back_running(timeout)

    def _give_back_running(self, timeout: float) -> int:
        deadline = monotonic() + timeout
        for worker in self.workers:
            worker.stop_claiming()
        for worker in self.workers:
            unstarted = worker.take_unstarted()
            if unstarted:
                worker.give_back(unstarted)
        runs = [run for run in self.runs.snapshot() if run.interrupt_by_runtime()]
        self._give_back_runs(runs)
        # Then stop the handlers at their next wait (whatever they end with is dropped).
        for run in runs:
            run.scope.cancel("drain")
        self.completer.stop(timeout=max(0.0, deadline - monotonic()))
        return len(runs)


class _Unreported(StoreHealth):
    """The probe's health: its failures make the one line `wait_for_store` raises, not an
    outage's WARNINGs (the process has not started yet)."""

    def failed(
        self, exc: BaseException, *, where: str, failures: int, retry_in: float | None = None
    ) -> None:
        pass

    def answered(self) -> None:
        pass


class StoreProbe(BackgroundThread):
    """Reads from the store until it answers once, backing off between tries, and gives up
    at `deadline` (a `monotonic` time): the start-up check of `wait_for_store`."""

    name = "anole-store-probe"

    def __init__(self, service: JobService, deadline: float) -> None:
        super().__init__(store_health=_Unreported())
        self.service = service
        self.deadline = deadline
        self.answered = threading.Event()
        self.last_error: BaseException | None = None
        #: Once answered: this release's migrations the database lacks, and (when it lacks
        #: none) how its server functions and triggers differ from this release's.
        self.pending: list[str] = []
        self.drift: list[str] = []

    def keep_going(self) -> bool:
        return not self.stopping and monotonic() < self.deadline

    def run_once(self) -> float:
        # One shared session for the whole check (the schema checks read Django's
        # connection of the alias, which the borrowed session stands in for).
        with self.service.store.shared_session():
            self.service.store.ping()
            self.pending = _pending_migrations(self.service)
            self.drift = [] if self.pending else _schema_drift(self.service)
        self.last_error = None
        self.answered.set()
        self.request_stop()
        return 0.0

    def on_failure(self, exc: Exception) -> None:
        self.last_error = exc
        if missing_schema(exc):
            # Asking again will not create the tables: answer now, with what to do.
            self.answered.set()
            self.request_stop()

    def pause(self, seconds: float) -> None:
        super().pause(min(seconds, self.deadline - monotonic()))


def wait_for_store(service: JobService, timeout: float) -> None:
    """Return once the store answers a read; raise `StoreUnavailable` naming the last error
    when it does not within `timeout` seconds (a hung connect included: the probe runs in a
    thread of its own). A database whose tables are missing, or that lacks some of this
    release's migrations, is no outage: that is said at once, with what to do. Server functions
    or triggers that differ from this release's are logged (a WARNING), and the start goes on."""
    probe = StoreProbe(service, monotonic() + timeout)
    probe.start()
    probe.answered.wait(timeout)
    probe.request_stop()
    if probe.answered.is_set():
        name = service.store.name
        if probe.last_error is not None:
            raise StoreUnavailable(
                f"the {name} store's tables are missing from its database"
                f" ({describe_error(probe.last_error)}): {RUN_MIGRATE}"
            )
        if probe.pending:
            raise StoreUnavailable(
                f"the {name} store's database lacks migrations of this release"
                f" ({', '.join(probe.pending)}): {RUN_MIGRATE}"
            )
        if probe.drift:
            logger.warning(
                "the %s store's server functions and triggers are not the ones this release"
                " expects (%s): %s, or see docs/upgrading.md",
                name,
                "; ".join(probe.drift),
                RUN_MIGRATE,
            )
        return
    last = probe.last_error
    why = describe_error(last) if last is not None else "no answer (the connection hangs)"
    raise StoreUnavailable(
        f"the {service.store.name} store did not answer within {timeout:g} s: {why}. "
        "Check that the server runs and that the settings point at it "
        '(ANOLE_JOBS["STARTUP_TIMEOUT"] sets how long to wait)'
    )


def _pending_migrations(service: JobService) -> list[str]:
    from anole_jobs.stores.database.schema_check import pending_migrations

    return _courtesy_check(service, pending_migrations, "which migrations it has")


def _schema_drift(service: JobService) -> list[str]:
    from anole_jobs.stores.database.schema_check import schema_drift

    return _courtesy_check(service, schema_drift, "its server functions and triggers")


def _courtesy_check(service: JobService, check: Any, what: str) -> list[str]:
    """Run a start-up check of the schema, which the store answered already: a role that may
    not read what it looks at (a worker's role needs no access to ``django_migrations``, see
    docs/database.md) starts all the same, with a line that says what could not be checked."""
    from django.db import DatabaseError

    try:
        result: list[str] = check(service.settings)
    except DatabaseError as exc:
        close_broken_connections()
        logger.info(
            "could not check %s of the %s store's database (%s); starting all the same",
            what,
            service.store.name,
            describe_error(exc),
        )
        return []
    return result
