"""One queue's worker pool: a dispatcher that claims in batches sized to the free slots, and
`concurrency` slot threads that run the attempts (R29, issue 3).

Slots are daemon threads: a sync handler that never reaches a wait cannot keep the process
alive past its drain deadline (R28).
"""

from __future__ import annotations

import logging
import queue as queue_module
import threading
from collections.abc import Callable

from anole_jobs import events
from anole_jobs.conf import QueueConfig
from anole_jobs.service import Jobs
from anole_jobs.stores.base import ClaimedJob
from anole_jobs.worker.cancel import CancelScope
from anole_jobs.worker.completer import close_broken_connections
from anole_jobs.worker.executor import Attempt, Executor
from anole_jobs.worker.runs import Run, RunRegistry

logger = logging.getLogger("anole_jobs.worker")

_STOP = object()
CLAIM_AHEAD = 1  # batches of `concurrency` claimed beyond the free slots


class QueueWorker:
    def __init__(
        self,
        service: Jobs,
        config: QueueConfig,
        *,
        executor: Executor,
        runs: RunRegistry,
        worker_name: str,
        poll_interval: float,
        on_attempt: Callable[[Run, Attempt], None],
    ) -> None:
        self.service = service
        self.config = config
        self.name = config.name
        self.executor = executor
        self.runs = runs
        self.worker_name = worker_name
        self.poll_interval = poll_interval
        self.on_attempt = on_attempt
        self._inbox: queue_module.SimpleQueue[object] = queue_module.SimpleQueue()
        self._claiming = threading.Event()
        self._claiming.set()
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._subscription = service.store.subscribe([config.name])
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        for index in range(self.config.concurrency):
            thread = threading.Thread(
                target=self._slot, name=f"anole-{self.name}-{index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        dispatcher = threading.Thread(
            target=self._dispatch, name=f"anole-{self.name}-dispatch", daemon=True
        )
        dispatcher.start()
        self._dispatcher = dispatcher

    def stop_claiming(self) -> None:
        self._claiming.clear()
        self.service.store.wakeups.wake([self.name])  # unblock the dispatcher's wait

    def join_dispatcher(self, timeout: float) -> None:
        self._dispatcher.join(timeout)
        self._subscription.close()

    def take_unstarted(self) -> list[ClaimedJob]:
        """Claimed jobs no slot has started yet (the drain gives them back)."""
        taken: list[ClaimedJob] = []
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue_module.Empty:
                return taken
            if isinstance(item, Run):
                with self._busy_lock:
                    self._busy -= 1
                self.runs.remove(item)
                if item.interrupt_by_runtime():
                    taken.append(item.claimed)

    def release_slots(self) -> None:
        for _ in self._threads:
            self._inbox.put(_STOP)

    # -- dispatching -----------------------------------------------------------------------
    def free_slots(self) -> int:
        """How many more jobs to claim: the slots, plus one batch claimed ahead so a slot that
        frees finds its next job waiting instead of a claim round trip (River prefetches too;
        the cost: `attempted_at` is the claim time, and a newer higher-priority job can wait
        behind at most one batch)."""
        with self._busy_lock:
            return self.config.concurrency * (1 + CLAIM_AHEAD) - self._busy

    def _dispatch(self) -> None:
        store = self.service.store
        # This thread's connection only claims (and gives back): R22 makes a lost claim safe.
        store.relax_claim_durability()
        failures = 0
        while self._claiming.is_set():
            free = self.free_slots()
            claimed: list[ClaimedJob] = []
            if free > 0:
                kinds = self.service.registry.handled_kinds()
                now = self.service.clock()
                try:
                    claimed = store.claim(
                        self.name,
                        kinds=kinds,
                        limit=free,
                        now=now,
                        lease_until=now + self.service.settings.lease,
                        worker=self.worker_name,
                    )
                    failures = 0
                except Exception:  # noqa: BLE001 - keep the worker alive through outages
                    failures += 1
                    close_broken_connections()
                    logger.exception("claiming from queue %s failed; retrying", self.name)
                    self._claiming.wait(0)  # re-check the flag
                    self._subscription.wait(min(0.1 * 2**failures, 5.0))
                    continue
                if not self._claiming.is_set() and claimed:
                    # Stopped between the claim and now: give the jobs back (attempt not counted).
                    self.give_back(claimed)
                    break
                for job in claimed:
                    with self._busy_lock:
                        self._busy += 1
                    # Registered before a slot takes it, so a drain never misses it.
                    run = Run(job, CancelScope())
                    self.runs.add(run)
                    self._inbox.put(run)
            if claimed and len(claimed) == free:
                continue  # there may be more: claim again as soon as a slot frees
            self._subscription.wait(self.poll_interval)
        close_broken_connections()

    def give_back(self, claimed: list[ClaimedJob]) -> None:
        from anole_jobs.stores.base import Finish

        now = self.service.clock()
        self.service.store.finish(
            [
                Finish(
                    run=job.run, state="available", at=now, scheduled_at=now, give_back_attempt=True
                )
                for job in claimed
            ]
        )

    # -- running ---------------------------------------------------------------------------
    def _slot(self) -> None:
        from django.db import close_old_connections, connections

        while True:
            item = self._inbox.get()
            if item is _STOP:
                break
            assert isinstance(item, Run)
            run, scope = item, item.scope
            if run.ended:
                # The drain deadline already gave it back before any slot started it.
                self.runs.remove(run)
                with self._busy_lock:
                    self._busy -= 1
                continue
            claimed = run.claimed
            record = claimed.record
            self.service.bus.emit(
                events.RUN_STARTED,
                queue=record.queue,
                kind=record.kind,
                job_id=record.id,
                attempt=claimed.run.attempt,
            )
            try:
                # As around a request: drop connections that broke or outlived CONN_MAX_AGE.
                close_old_connections()
                attempt = self.executor.run(claimed, scope)
                self.on_attempt(run, attempt)
            except Exception:  # noqa: BLE001 - a bug here must not kill the slot
                logger.exception("job %s: the runtime failed around its handler", record.id)
            finally:
                close_old_connections()
                self.runs.remove(run)
                with self._busy_lock:
                    self._busy -= 1
                # A slot is free: let the dispatcher claim again without waiting for a poll.
                self.service.store.wakeups.wake([self.name])
        for connection in connections.all(initialized_only=True):
            connection.close()
