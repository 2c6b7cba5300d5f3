"""Manual mode: `jobs.step()` runs one round in the calling thread, no threads started.

Order: leader, cron, stage, rescue, the statistics' roll-up, prune and the queued-jobs gauge
(leader only), then every
due job of every configured queue, one after the other. In manual mode there is no heartbeat:
a lease ends `LEASE` after the claim. A kind's timeout is enforced as in the runtime: the
handler is cancelled at its next wait after it.

`step()` may run in several threads at once. The process is one instance, whatever thread
steps: one leadership (on PostgreSQL one advisory-lock session) shared by its threads, so a
thread that stepped and ended leaves nothing behind that keeps the others from leading, and
the leader gauge counts the process once. Its leader duties run one thread at a time.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Collection
from dataclasses import replace
from datetime import datetime

from anole_jobs.maintenance.cron import CronScheduler
from anole_jobs.maintenance.duties import (
    Leadership,
    Pruner,
    QueuedGauge,
    Rescuer,
    Stager,
    UnhandledKinds,
)
from anole_jobs.maintenance.history import StatsHistory
from anole_jobs.records import RunRecord, StepReport
from anole_jobs.service import JobService
from anole_jobs.stores.base import ClaimedJob
from anole_jobs.worker import claims
from anole_jobs.worker.executor import Executor
from anole_jobs.worker.interrupts import watch_sigint
from anole_jobs.worker.outcomes import Attempt, Outcomes, give_back

CLAIM_LIMIT = 10_000


def instance_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Stepper:
    def __init__(self, service: JobService) -> None:
        self.service = service
        self.executor = Executor(service, manual=True)
        self.outcomes = Outcomes(service)
        self.cron = CronScheduler(service)
        self.gauge = QueuedGauge(service)
        self._leadership_lock = threading.Lock()
        self._leader: Leadership | None = None
        #: Held while a thread runs the leader duties (cron, prune, the gauge).
        self._leader_duties = threading.Lock()

    def _leadership(self) -> Leadership:
        """This process's leadership (a forked child gets one of its own: a new pid)."""
        with self._leadership_lock:
            leadership = self._leader
            if leadership is None or leadership.instance != f"{instance_name()}:step":
                leadership = self._leader = Leadership(self.service, f"{instance_name()}:step")
            return leadership

    def close(self) -> None:
        """Resign (the service is being dropped): another instance may lead at once, and the
        leader gauge no longer counts this one."""
        with self._leadership_lock:
            leadership, self._leader = self._leader, None
        if leadership is not None:
            leadership.resign()

    def step(self) -> StepReport:
        service = self.service
        now = service.clock()
        leader = self._leadership().run_once(now)
        cron_enqueued = self._as_leader(leader, lambda: self.cron.run_once(now))
        staged = Stager(service).run_once(now)
        rescued = len(Rescuer(service).run_once(now))
        self._as_leader(leader, lambda: StatsHistory(service).run_once(now))
        pruned = self._as_leader(leader, lambda: Pruner(service).run_once(now))
        if leader:
            with self._leader_duties:
                self.gauge.run_once(now)
        runs = []
        queues = list(service.settings.queues)
        handled = service.registry.handled_kinds()
        UnhandledKinds(service).run_once(queues)
        limited = set(service.store.runtime_limits())  # queues with limits set at runtime
        for queue in queues:
            if not handled:
                break
            now = service.clock()
            claimed = self._claim(queue, handled, now, limited)
            # One fenced write for the whole batch, as the runtime's completer does: a step's
            # later jobs see earlier outcomes only once the step returns.
            attempts = self._run_all(claimed)
            for attempt, outcome in zip(attempts, self.outcomes.write(attempts), strict=True):
                record = attempt.claimed.record
                runs.append(
                    RunRecord(
                        job_id=record.id,
                        kind=record.kind,
                        queue=record.queue,
                        attempt=attempt.claimed.run.attempt,
                        outcome=outcome,
                    )
                )
            for attempt in attempts:  # once written: a slow reporter never delays the write
                self.executor.report(attempt)
        return StepReport(
            runs=runs,
            staged=staged,
            rescued=rescued,
            pruned=pruned,
            cron_enqueued=cron_enqueued,
            leader=leader,
        )

    def _as_leader(self, leader: bool, duty: Callable[[], int | None]) -> int:
        """Run a leader duty (0 for a follower), one thread of the process at a time."""
        if not leader:
            return 0
        with self._leader_duties:
            return duty() or 0

    def _claim(
        self, queue: str, handled: frozenset[str], now: datetime, limited: Collection[str]
    ) -> list[ClaimedJob]:
        """The queue's due jobs, within its limits when it has some (in its settings, or set
        at runtime: `limited`)."""
        limits = claims.limits_in_force(self.service.settings.queues[queue].limits, queue, limited)
        return claims.claim(
            self.service,
            queue,
            limits,
            kinds=handled,
            limit=CLAIM_LIMIT,
            now=now,
            worker=self._leadership().instance,
        ).jobs

    def _run_all(self, claimed: list[ClaimedJob]) -> list[Attempt]:
        """Run the claimed jobs one after the other. Whatever a handler raises is its failed
        attempt; but a SIGINT that raises in the handler meanwhile (Ctrl-C on a loop of steps)
        stops the step: what ran is written, the interrupted job and those not yet run go
        back `available` (their attempt not counted), and what the signal raised
        (`KeyboardInterrupt`) goes up. A SIGINT the process ignores, or that its own SIGINT
        handler only takes note of, does not stop it."""
        attempts: list[Attempt] = []
        with watch_sigint() as sigint:
            for index, job in enumerate(claimed):
                attempt = self.executor.run(job)
                if sigint.raised is not None:
                    now = self.service.clock()
                    back = [
                        replace(attempt, outcome="interrupted", finish=give_back(job.run, now)),
                        *(
                            Attempt(
                                claimed=rest,
                                outcome="interrupted",
                                finish=give_back(rest.run, now),
                                seconds=0.0,
                            )
                            for rest in claimed[index + 1 :]
                        ),
                    ]
                    self.outcomes.write([*attempts, *back])
                    raise sigint.raised
                attempts.append(attempt)
        return attempts
