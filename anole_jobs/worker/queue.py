"""One queue's worker pool: a dispatcher that claims in batches, and `concurrency` slot threads
that run the attempts and hand each finished attempt straight to the completer.

A claimed job is stored ``running`` from its claim, so the pool claims only what it can start
at once, plus a small reserve **claimed ahead** for queues of short jobs, so that a slot that
frees finds its next job waiting instead of a claim round trip. The reserve is about
`AHEAD_SECONDS` of this queue's measured work (its rate of finished runs), at most
`AHEAD_MAX`, and none until a rate is measured: a queue of one-second jobs finishes a few jobs
a second, well under one job per `AHEAD_SECONDS`, so it claims exactly its free slots and
leaves the rest of the queue to other workers; a queue of no-op jobs keeps enough to cover a
claim round trip, claimed in batches of at least half of it. That bounds what claiming ahead
costs: a job enqueued later at a higher priority waits behind at most about `AHEAD_SECONDS`
of work, and a job waits that long at most between its claim and its handler's start (its
`attempted_at` is rewritten to the handler's start by the run's write).

Slots are daemon threads: a sync handler that never reaches a wait cannot keep the process
alive past its drain deadline (the exit bound in `runner`).
"""

from __future__ import annotations

import logging
import queue as queue_module
import threading
from datetime import datetime

from anole_jobs.background import BackgroundThread
from anole_jobs.clock import monotonic
from anole_jobs.conf import QueueConfig
from anole_jobs.limits import Limits
from anole_jobs.service import JobService
from anole_jobs.stores.base import ClaimedJob
from anole_jobs.worker.cancel import CancelScope, install_query_checks
from anole_jobs.worker.completer import Completer
from anole_jobs.worker.executor import Executor
from anole_jobs.worker.outcomes import give_back
from anole_jobs.worker.runs import Run, RunRegistry

logger = logging.getLogger("anole_jobs.worker")

_STOP = object()
#: Seconds of this queue's recent work kept claimed ahead of the slots (see the docstring).
AHEAD_SECONDS = 0.02
#: The most jobs a pool keeps claimed ahead, whatever its rate.
AHEAD_MAX = 1000
#: How quickly the measured rate follows a change (weight of the newest measurement).
RATE_WEIGHT = 0.3
#: Seconds between looks for limits set at runtime on a queue with none in its settings.
RUNTIME_LIMITS_EVERY = 1.0


def _nothing() -> None:
    """The completer's callback when the slot was already counted free."""


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
            # This thread's connection only claims (and gives back): a claim lost in a crash only
            # leaves its job available, and the fenced writes refuse the stale run's outcome.
            store.relax_claim_durability()
            self.relaxed = True
        wanted = pool.wanted()
        if wanted <= 0:
            return pool.poll_interval  # a slot wakes us when the pool runs low
        now = pool.service.clock()
        limits = pool.limits_in_force()
        if limits is not None:
            return self._claim_limited(limits, wanted, now)
        claimed = store.claim(
            pool.name,
            kinds=pool.service.registry.handled_kinds(),
            limit=wanted,
            now=now,
            lease_until=now + pool.service.settings.lease,
            worker=pool.worker_name,
        )
        if self.stopping and claimed:
            # Stopped between the claim and now: give the jobs back (attempt not counted).
            pool.give_back(claimed)
            return 0.0
        pool.hand_out(claimed)
        if claimed and len(claimed) == wanted:
            return 0.0  # there may be more: claim again once the pool runs low
        return pool.poll_interval

    def _claim_limited(self, limits: Limits, wanted: int, now: datetime) -> float:
        """A claim within the queue's limits (docs/limits.md). When a limit held jobs back,
        sleep until its rate window reopens (or a wake-up, or the poll: a job finishing
        anywhere makes room for a concurrency limit)."""
        pool = self.pool
        result = pool.service.store.claim_limited(
            pool.name,
            limits=limits,
            kinds=pool.service.registry.handled_kinds(),
            limit=wanted,
            now=now,
            lease_until=now + pool.service.settings.lease,
            worker=pool.worker_name,
        )
        claimed = result.jobs
        if self.stopping and claimed:
            pool.give_back(claimed)
            return 0.0
        pool.hand_out(claimed)
        if result.held:
            if result.reopens_at is None:
                return pool.poll_interval
            return min(pool.poll_interval, max(0.0, (result.reopens_at - now).total_seconds()))
        if claimed and len(claimed) == wanted:
            return 0.0
        return pool.poll_interval


class QueueWorker:
    def __init__(
        self,
        service: JobService,
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
        self._busy = 0  # claimed and not yet finished: running, or waiting in the inbox
        self._busy_lock = threading.Lock()
        self._finished = 0  # runs ended since the pool started (for the rate)
        self._rate_since: tuple[float, int] | None = None  # (monotonic, _finished) then
        self._rate = 0.0  # jobs per second, smoothed
        self.ahead = 0  # jobs kept claimed beyond the slots (adaptive; none until measured)
        #: Seconds of handler time run by each slot (each slot adds to its own entry only),
        #: and (their sum, _finished) at the last measurement: the mean run time since then.
        self._slot_work = [0.0] * config.concurrency
        self._work_since = (0.0, 0)
        self._run_seconds = 0.0  # mean run time of the queue's jobs, smoothed
        #: The queue's limits in the settings; those set at runtime are looked up now and
        #: then (`limits_in_force`), so a queue without limits never pays for them.
        self.settings_limits = service.settings.queues[config.name].limits
        self._runtime_limits_at = -RUNTIME_LIMITS_EVERY
        self._runtime_limits = False
        self.subscription = service.store.subscribe([config.name])
        self.dispatcher = Dispatcher(self)
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        for index in range(self.config.concurrency):
            thread = threading.Thread(
                target=self._slot, args=(index,), name=f"anole-{self.name}-{index}", daemon=True
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
    def limits_in_force(self) -> Limits | None:
        """The limits to claim within, None when the queue has none (a plain claim): those of
        the settings, or, once `jobs.set_limits` stored some for this queue (looked up every
        `RUNTIME_LIMITS_EVERY` seconds), whatever the store holds (it reads them itself)."""
        if self.settings_limits.active:
            return self.settings_limits
        now = monotonic()
        if now - self._runtime_limits_at >= RUNTIME_LIMITS_EVERY:
            self._runtime_limits_at = now
            try:
                self._runtime_limits = self.name in self.service.store.runtime_limits()
            except NotImplementedError:
                self._runtime_limits = False
        return self.settings_limits if self._runtime_limits else None

    def wanted(self) -> int:
        """How many jobs to claim now: enough to fill the slots and the claimed-ahead reserve,
        but nothing while the pool still holds more than half of its reserve (so claims come
        in batches, not one per finished job)."""
        self._update_ahead()
        with self._busy_lock:
            busy = self._busy
        if busy > self.low_water():
            return 0
        return self.config.concurrency + self.ahead - busy

    def low_water(self) -> int:
        """Claim again once the pool holds no more than this: half the reserve used, or, with
        no reserve, as soon as a slot is free."""
        if not self.ahead:
            return self.config.concurrency - 1
        return self.config.concurrency + self.ahead // 2

    def _update_ahead(self) -> None:
        now = monotonic()
        with self._busy_lock:
            finished = self._finished
        work = sum(self._slot_work)
        since = self._rate_since
        self._rate_since = (now, finished)
        if since is None or now <= since[0]:
            return
        rate = (finished - since[1]) / (now - since[0])
        self._rate = rate if not self._rate else self._rate + RATE_WEIGHT * (rate - self._rate)
        ahead = min(AHEAD_MAX, int(self._rate * AHEAD_SECONDS))
        # The rate alone misleads when slow jobs started together end together (four
        # one-second jobs ending 2 ms apart read as hundreds a second), so the reserve is also
        # bounded by the jobs' own run time: the jobs all slots finish in AHEAD_SECONDS. A
        # slow kind then keeps none ahead, however its ends bunch up.
        work_since, finished_since = self._work_since
        if finished > finished_since:
            mean = (work - work_since) / (finished - finished_since)
            self._work_since = (work, finished)
            self._run_seconds = (
                mean
                if not self._run_seconds
                else self._run_seconds + RATE_WEIGHT * (mean - self._run_seconds)
            )
        if self._run_seconds > 0:
            ahead = min(ahead, int(self.config.concurrency * AHEAD_SECONDS / self._run_seconds))
        self.ahead = ahead

    def hand_out(self, claimed: list[ClaimedJob]) -> None:
        if not claimed:
            return
        with self._busy_lock:
            self._busy += len(claimed)
        runs = [Run(job, CancelScope()) for job in claimed]
        # Registered before a slot takes them, so a drain never misses one; one lock a batch.
        self.runs.add_all(runs)
        for run in runs:
            self._inbox.put(run)

    def give_back(self, claimed: list[ClaimedJob]) -> None:
        """Put claimed jobs that never started back (fenced, attempt not counted)."""
        now = self.service.clock()
        self.service.store.finish([give_back(job.run, now) for job in claimed])

    def _release(self, run: Run) -> None:
        """A run left the inbox without an outcome to write (the drain gave it back)."""
        self.runs.remove(run)
        self._settled()

    def _settled(self) -> None:
        """A claimed job no longer shows as running in the store (its outcome is written, or
        it was given back): when that brings the pool down to its low water, wake the
        dispatcher to claim the next batch (once per batch, not per job). Counting a slot
        free only now, not when its handler returns, is what keeps the jobs stored as
        running within the slots while the completer writes the last ones' outcomes (on a
        queue with no reserve claimed ahead: see `_run`)."""
        with self._busy_lock:
            self._busy -= 1
            self._finished += 1
            low = self._busy == self.low_water()
        if low:
            self.service.store.wakeups.wake([self.name])

    # -- running ---------------------------------------------------------------------------
    def _slot(self, index: int) -> None:
        from django.db import close_old_connections

        from anole_jobs.background import close_connections

        install_query_checks()
        close_old_connections()  # as a request starts; after that, once after each run
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
            handed_on = False
            try:
                handed_on = self._run(run, index)
            finally:
                # As a request ends: drop connections that broke or outlived CONN_MAX_AGE
                # (which also readies the health check of CONN_HEALTH_CHECKS for the next run).
                close_old_connections()
                self.runs.remove(run)
                if not handed_on:  # else the completer calls `_settled` once it wrote
                    self._settled()
        close_connections()

    def _run(self, run: Run, index: int) -> bool:
        """Run one claimed job in this slot; True once its outcome is the completer's to
        write (then the completer settles it), False when nothing was handed on."""
        handed_on = False

        def hand_on() -> None:
            nonlocal handed_on
            if self.ahead:
                # A reserve is claimed ahead anyway (short jobs), so the running count
                # already exceeds the slots by it; waiting for the write before claiming
                # would only put the store's round trip between every batch.
                self.completer.submit(attempt, _nothing)
            else:
                self.completer.submit(attempt, self._settled)
                handed_on = True

        try:
            run.span = self.executor.start_span(run.claimed)
            attempt = self.executor.run(run.claimed, run.scope, run.span)
            self._slot_work[index] += attempt.seconds
            if run.finish_by_handler(hand_on):
                self.executor.report(attempt)  # after the hand-off: never delays the write
        except BaseException:  # noqa: BLE001 - a bug here must not kill the slot
            # (the executor already turns whatever a handler raises into its attempt)
            logger.exception("job %s: the runtime failed around its handler", run.claimed.record.id)
        return handed_on
