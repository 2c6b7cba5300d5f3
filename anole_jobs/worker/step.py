"""Manual mode (R35): `jobs.step()` runs one round in the calling thread, no threads started.

Order: leader, cron, stage, rescue, prune (leader only), then every due job of every configured
queue, one after the other. In manual mode there is no heartbeat: a lease ends `LEASE` after
the claim. `step()` may run in several threads at once; each thread is an instance.
"""

from __future__ import annotations

import os
import socket
import threading

from anole_jobs import events
from anole_jobs.maintenance.cron import CronScheduler
from anole_jobs.maintenance.duties import Leadership, Pruner, Rescuer, Stager, UnhandledKinds
from anole_jobs.records import RunRecord, StepReport
from anole_jobs.service import Jobs
from anole_jobs.worker.executor import Attempt, Executor

CLAIM_LIMIT = 10_000


def instance_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Stepper:
    def __init__(self, service: Jobs) -> None:
        self.service = service
        self.executor = Executor(service, manual=True)
        self.cron = CronScheduler(service)
        self._local = threading.local()

    def _leadership(self) -> Leadership:
        leadership = getattr(self._local, "leadership", None)
        if leadership is None:
            name = f"{instance_name()}:step-{threading.get_ident()}"
            leadership = self._local.leadership = Leadership(self.service, name)
        return leadership

    def step(self) -> StepReport:
        service = self.service
        now = service.clock()
        leader = self._leadership().run_once(now)
        cron_enqueued = self.cron.run_once(now) if leader else 0
        staged = Stager(service).run_once(now)
        rescued = len(Rescuer(service).run_once(now))
        pruned = Pruner(service).run_once(now) if leader else 0
        runs = []
        queues = list(service.settings.queues)
        handled = service.registry.handled_kinds()
        UnhandledKinds(service).run_once(queues)
        for queue in queues:
            if not handled:
                break
            now = service.clock()
            claimed = service.store.claim(
                queue,
                kinds=handled,
                limit=CLAIM_LIMIT,
                now=now,
                lease_until=now + service.settings.lease,
                worker=self._leadership().instance,
            )
            # One fenced write for the whole batch, as the runtime's completer does: a step's
            # later jobs see earlier outcomes only once the step returns.
            attempts = [self.executor.run(job) for job in claimed]
            runs.extend(self._record_all(attempts))
        return StepReport(
            runs=runs,
            staged=staged,
            rescued=rescued,
            pruned=pruned,
            cron_enqueued=cron_enqueued,
            leader=leader,
        )

    def _record_all(self, attempts: list[Attempt]) -> list[RunRecord]:
        to_write = [attempt for attempt in attempts if attempt.finish is not None]
        written = self.service.store.finish([a.finish for a in to_write]) if to_write else []  # type: ignore[misc]
        saved_by_run = {a.claimed.run: ok for a, ok in zip(to_write, written, strict=True)}
        return [self._record(a, saved_by_run.get(a.claimed.run, True)) for a in attempts]

    def _record(self, attempt: Attempt, saved: bool) -> RunRecord:
        outcome = "lost" if not saved else attempt.outcome
        record = attempt.claimed.record
        attempt.end_span(outcome)  # h11-obs run spans; at merge keep h8-runtime's pipeline
        self.service.bus.emit(
            events.RUN_FINISHED,
            queue=record.queue,
            kind=record.kind,
            job_id=record.id,
            attempt=attempt.claimed.run.attempt,
            outcome=outcome,
            seconds=attempt.seconds,
            saved=saved,
        )
        return RunRecord(
            job_id=record.id,
            kind=record.kind,
            queue=record.queue,
            attempt=attempt.claimed.run.attempt,
            outcome=outcome,
        )
