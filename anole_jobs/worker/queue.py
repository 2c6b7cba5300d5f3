"""One queue's worker pool: a dispatcher that claims in batches sized to the free slots, and
`concurrency` slot threads that run the attempts (R29, issue 3) and hand each finished attempt
straight to the completer.

Slots are daemon threads: a sync handler that never reaches a wait cannot keep the process
alive past its drain deadline (R28).
"""

from __future__ import annotations

import logging
import queue as queue_module
import threading

from anole_jobs.background import BackgroundThread
from anole_jobs.conf import QueueConfig
from anole_jobs.service import Jobs
from anole_jobs.stores.base import ClaimedJob
from anole_jobs.worker.cancel import CancelScope
from anole_jobs.worker.completer import Completer
from anole_jobs.worker.executor import Executor
from anole_jobs.worker.outcomes import give_back
from anole_jobs.worker.runs import Run, RunRegistry

logger = logging.getLogger("anole_jobs.worker")

_STOP = object()
CLAIM_AHEAD = 1  # batches of `concurrency` claimed beyond the free slots


class Dispatcher(BackgroundThread):
    """Claims for one queue whenever slots are free; sleeps on the queue's wake-ups."""

    def __init__(self, pool: QueueWorker) -> None:
        super().__init__(name=f"anole-{pool.name}-dispatch")
        self.pool = pool
        self.relaxed = False

    def wake(self) -> None:
        self.pool.service.store.wakeups.wake([self.pool.name])

    def pause(self, seconds: float) -> None:
        if seconds and not self.stopping:
            self.pool.subscription.wait(seconds)

    def run_once(self) -> float:
        pool = self.pool
        store = pool.service.store
        if not self.relaxed:
            # This thread's connection only claims (and gives back): R22 makes a lost claim safe.
            store.relax_claim_durability()
            self.relaxed = True
        free = pool.free_slots()
        if free <= 0:
            return pool.poll_interval
        now = pool.service.clock()
        claimed = store.claim(
            pool.name,
            kinds=pool.service.registry.handled_kinds(),
            limit=free,
            now=now,
            lease_until=now + pool.service.settings.lease,
            worker=pool.worker_name,
        )
        if self.stopping and claimed:
            # Stopped between the claim and now: give the jobs back (attempt not counted).
            pool.give_back(claimed)
            return 0.0
        for job in claimed:
            pool.hand_out(job)
        if claimed and len(claimed) == free:
            return 0.0  # there may be more: claim again as soon as a slot frees
        return pool.poll_interval


class QueueWorker:
    def __init__(
        self,
        service: Jobs,
        config: QueueConfig,
        *,
        executor: Executor,
        completer: Completer,
        runs: RunRegistry,
        worker_name: str,
        poll_interval: float,
    ) -> None:
        self.service = service
        self.config = config
        self.name = config.name
        self.executor = executor
        self.completer = completer
        self.runs = runs
        self.worker_name = worker_name
        self.poll_interval = poll_interval
        self._inbox: queue_module.SimpleQueue[object] = queue_module.SimpleQueue()
        self._busy = 0
        self._busy_lock = threading.Lock()
        self.subscription = service.store.subscribe([config.name])
        self.dispatcher = Dispatcher(self)
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        for index in range(self.config.concurrency):
            thread = threading.Thread(
                target=self._slot, name=f"anole-{self.name}-{index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        self.dispatcher.start()

    def stop_claiming(self) -> None:
        self.dispatcher.request_stop()  # its wake-up unblocks the dispatcher's wait

    def join_dispatcher(self, timeout: float) -> None:
        self.dispatcher.join(timeout)
        self.subscription.close()

    def take_unstarted(self) -> list[ClaimedJob]:
        """Claimed jobs no slot has started yet (the drain gives them back)."""
        taken: list[ClaimedJob] = []
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue_module.Empty:
                return taken
            if isinstance(item, Run):
                self._release(item)
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

    def hand_out(self, job: ClaimedJob) -> None:
        with self._busy_lock:
            self._busy += 1
        # Registered before a slot takes it, so a drain never misses it.
        run = Run(job, CancelScope())
        self.runs.add(run)
        self._inbox.put(run)

    def give_back(self, claimed: list[ClaimedJob]) -> None:
        """Put claimed jobs that never started back (fenced, attempt not counted)."""
        now = self.service.clock()
        self.service.store.finish([give_back(job.run, now) for job in claimed])

    def _release(self, run: Run) -> None:
        self.runs.remove(run)
        with self._busy_lock:
            self._busy -= 1

    # -- running ---------------------------------------------------------------------------
    def _slot(self) -> None:
        from django.db import close_old_connections

        from anole_jobs.background import close_connections

        while True:
            item = self._inbox.get()
            if item is _STOP:
                break
            assert isinstance(item, Run)
            run = item
            if run.ended:
                # The drain already gave it back before any slot started it.
                self._release(run)
                continue
            try:
                # As around a request: drop connections that broke or outlived CONN_MAX_AGE.
                close_old_connections()
                run.span = self.executor.start_span(run.claimed)
                attempt = self.executor.run(run.claimed, run.scope, run.span)
                run.finish_by_handler(lambda: self.completer.submit(attempt))  # noqa: B023
            except Exception:  # noqa: BLE001 - a bug here must not kill the slot
                logger.exception(
                    "job %s: the runtime failed around its handler", run.claimed.record.id
                )
            finally:
                close_old_connections()
                self._release(run)
                # A slot is free: let the dispatcher claim again without waiting for a poll.
                self.service.store.wakeups.wake([self.name])
        close_connections()
