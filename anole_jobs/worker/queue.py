"""One queue's worker pool: a dispatcher that claims in batches, and `concurrency` slot threads
that run the attempts and hand each finished attempt straight to the completer.

A claimed job is stored ``running`` from its claim, so the pool claims only what it can start
at once, plus a small reserve **claimed ahead** for queues of short jobs, so that a slot that
frees finds its next job waiting instead of a claim round trip. The reserve is about
`AHEAD_SECONDS` of this queue's measured work (its rate of finished runs, over at least
`RATE_WINDOW`), or `CLAIM_COVER` of the pool's recent claim round trips when those take
longer, at most `AHEAD_MAX`, and none until a rate is measured: a queue of one-second jobs
finishes a few jobs a second, well under one job per `AHEAD_SECONDS`, so it claims exactly
its free slots and leaves the rest of the queue to other workers; a queue of no-op jobs keeps
enough to cover a claim round trip, refilled when half of it is used, in claims of at most
`CLAIM_CHUNK` jobs in a row. That bounds what claiming ahead costs: a job waits about that
long at most between its claim and its handler's start (its `attempted_at` is rewritten to
the handler's start by the run's write).

The reserve follows the mix of jobs **within one run**, not over the rate's slow average: a
slot whose job has run past what the queue's jobs take (`OVERDUE_RUNS` times the measured
mean, and at least `AHEAD_SECONDS`) counts as no longer finishing jobs at once, so its
share of the learned rate and of the run-time bound drops out of the reserve. And when the
pool then holds more unstarted jobs than its other slots start within `GIVE_BACK_COVERS`
covers, it gives the rest back (fenced, attempt not counted, in their place in the queue) and
wakes the other workers, which claim them at once. So a burst of slow jobs right after
thousands of fast ones, claimed by one worker on its fast reserve, is back with the other
workers a few tens of milliseconds later instead of one slow job's length later; the
dispatcher looks when the first running job can become overdue while it holds unstarted jobs.

The jobs held are started highest priority first (then in claim order), not in the order they
were claimed, so a job claimed later at a higher priority overtakes those held ahead of it.
And a job enqueued at a higher priority than some job held does not wait for the next batch:
its wake-up announces its priority (stores/wakeups.py), and the dispatcher claims at once,
into a **lane** of at most `LANE` jobs beyond the slots and the reserve (a claim takes the
highest priority first: the announced job, then maybe the next few of the queue). Nothing is
held ahead of slow jobs, so they never use the lane: a slot's next job is still claimed when
the slot is free.

A queue's `concurrency` counts its running jobs, sync and async alike: a job starts when one
of the `concurrency` slots is free. A sync job's slot runs in a thread (slot threads are made
as sync jobs need them, never more than `concurrency`, and wait for the next sync job once
made); an async job's runs as a task on the process's event loop (`aloop`), without a thread,
so a queue of concurrency 1000 runs a thousand async jobs at once with a handful of threads.
Sync and async kinds share a queue. Cancels of running async jobs made elsewhere are looked
for by the pool's `CancelWatch`, which cancels their tasks at once.

Slot threads are daemon threads: a sync handler that never reaches a wait cannot keep the
process alive past its drain deadline (the exit bound in `runner`).
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import logging
import queue as queue_module
import threading
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from anole_jobs.background import BackgroundThread, start_thread
from anole_jobs.clock import monotonic
from anole_jobs.conf import QueueConfig
from anole_jobs.limits import Limits
from anole_jobs.service import JobService
from anole_jobs.stores.base import ClaimedJob
from anole_jobs.worker import aloop, claims
from anole_jobs.worker.cancel import CancelScope, install_query_checks
from anole_jobs.worker.cancelwatch import CancelWatch
from anole_jobs.worker.completer import Completer
from anole_jobs.worker.executor import Executor
from anole_jobs.worker.outcomes import Attempt, give_back
from anole_jobs.worker.runs import Run, RunRegistry

logger = logging.getLogger("anole_jobs.worker")

_STOP = object()
#: Seconds of this queue's recent work kept claimed ahead of the slots (see the docstring).
AHEAD_SECONDS = 0.02
#: ... or this many of the pool's recent claim round trips, when that is longer (a loaded
#: machine or a distant store): the next batch is claimed at half the reserve, so what is
#: left must last the claim, or slots wait for it.
CLAIM_COVER = 2.0
#: The most jobs a pool keeps claimed ahead, whatever its rate.
AHEAD_MAX = 1000
#: The most jobs one claim takes: a larger refill is claimed in several round trips in a row,
#: so that a job enqueued meanwhile at a higher priority (taken first by the next one) never
#: waits for one long claim of hundreds of rows.
CLAIM_CHUNK = 100
#: How quickly the measured rate follows a change (weight of the newest measurement).
RATE_WEIGHT = 0.3
#: The shortest time a rate is measured over (seconds). The dispatcher looks at every wake-up,
#: often a moment apart: over such a moment, runs that ended together read as a rate several
#: times the queue's, and the reserve (and each claim, and its round trip) grew with it.
RATE_WINDOW = 0.1
#: A run counts as overdue once it lasts this many times the queue's measured mean run time
#: (and at least `AHEAD_SECONDS`): twice the mean is well past what the queue's jobs take, so
#: it says the mix changed, while the spread of near-instant jobs on a busy machine (a few
#: ms) stays under the floor. (A false alarm only costs that slot's share of the reserve
#: for a moment: the jobs held stay while the other slots start them soon.)
OVERDUE_RUNS = 2.0
#: Unstarted jobs a pool keeps while some slots are overdue: what its other slots start
#: within this many covers; the rest goes back to the queue for other workers.
GIVE_BACK_COVERS = 2.0
#: Seconds between looks for limits set at runtime on a queue with none in its settings.
RUNTIME_LIMITS_EVERY = 1.0
#: The most jobs a pool holds beyond its slots and reserve, claimed at once because their
#: wake-up announced a priority above a job it held (see the docstring).
LANE = 4


def _nothing() -> None:
    """The completer's callback when the slot was already counted free."""


class Dispatcher(BackgroundThread):
    """Claims for one queue whenever slots are free; sleeps on the queue's wake-ups."""

    def __init__(self, pool: QueueWorker) -> None:
        super().__init__(name=f"anole-{pool.name}-dispatch")
        self.pool = pool
        #: The highest priority the wake-ups since the last round announced, if any.
        self.announced: int | None = None

    def wake(self) -> None:
        self.pool.service.store.wakeups.wake([self.pool.name])

    def pause(self, seconds: float) -> None:
        if seconds and not self.stopping:
            _woken, top = self.pool.subscription.wait_announced(seconds)
            if top is not None and (self.announced is None or top > self.announced):
                self.announced = top

    def run_once(self) -> float:
        pool = self.pool
        wanted = pool.wanted()
        announced, self.announced = self.announced, None
        lane = False
        if wanted <= 0:
            wanted = 0 if announced is None else pool.lane_room(announced)
            if wanted <= 0:
                pool.give_back_overdue()
                # A slot wakes us when the pool runs low; and while it holds unstarted jobs,
                # we look again when a running job would become overdue.
                return pool.next_look(pool.poll_interval)
            lane = True
        return self._claim(pool.limits_in_force(), wanted, pool.service.clock(), lane=lane)

    def _claim(self, limits: Limits | None, wanted: int, now: datetime, *, lane: bool) -> float:
        """Claim `wanted` jobs, within the queue's limits when it has some (docs/limits.md);
        how long to sleep then. When a limit held jobs back, sleep until its rate window
        reopens (or a wake-up, or the poll: a job finishing anywhere makes room for a
        concurrency limit)."""
        pool = self.pool
        started = monotonic()
        result = claims.claim(
            pool.service,
            pool.name,
            limits,
            kinds=pool.service.registry.handled_kinds(),
            limit=wanted,
            now=now,
            worker=pool.worker_name,
        )
        pool.claim_took(monotonic() - started)
        claimed = result.jobs
        if self.stopping and claimed:
            # Stopped between the claim and now: give the jobs back (attempt not counted).
            pool.give_back(claimed)
            return 0.0
        pool.hand_out(claimed)
        if not lane:
            # All it asked for: there may be more. Claim on at once while the pool is not
            # full (a refill in chunks), then again once it runs low.
            pool.filling = not result.held and len(claimed) == wanted
        if result.held:
            if result.reopens_at is None:
                return pool.next_look(pool.poll_interval)
            reopens = max(0.0, (result.reopens_at - now).total_seconds())
            return pool.next_look(min(pool.poll_interval, reopens))
        if pool.filling:
            return 0.0
        return pool.next_look(pool.poll_interval)


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
        #: The claimed jobs no slot has started: a heap of (-priority, claim order, run), so
        #: slots start the highest priority first. `_inbox` holds the sync jobs started
        #: for the slot threads, (run, slot index) each, or `_STOP`.
        self._held: list[tuple[int, int, Run]] = []
        self._held_lock = threading.Lock()
        self._order = itertools.count()
        self._inbox: queue_module.SimpleQueue[object] = queue_module.SimpleQueue()
        self._busy = 0  # claimed and not yet finished: running, or waiting in the heap
        self._busy_lock = threading.Lock()
        self._finished = 0  # runs ended since the pool started (for the rate)
        self._rate_since: tuple[float, int] | None = None  # (monotonic, _finished) then
        self._rate = 0.0  # jobs per second, smoothed
        self._claim_seconds = 0.0  # a claim's round trip, smoothed
        self.ahead = 0  # jobs kept claimed beyond the slots (adaptive; none until measured)
        #: Seconds of handler time run by each slot (each slot adds to its own entry only),
        #: and (their sum, _finished) at the last measurement: the mean run time since then.
        self._slot_work = [0.0] * config.concurrency
        self._work_since = (0.0, 0)
        self._run_seconds = 0.0  # mean run time of the queue's jobs, smoothed
        #: When each slot's current run started (monotonic), None while the slot is free:
        #: each slot writes its own entry; the dispatcher reads them to see overdue runs.
        self._slot_started: list[float | None] = [None] * config.concurrency
        self._overdue_seen = 0  # overdue slots at the last look (the reserve follows them)
        #: Set while a refill goes on in chunks (the last claim got all it asked for).
        self.filling = False
        #: The queue's limits in the settings; those set at runtime are looked up now and
        #: then (`limits_in_force`), so a queue without limits never pays for them.
        self.settings_limits = service.settings.queues[config.name].limits
        self._runtime_limits = claims.RuntimeLimitsLookup(service, RUNTIME_LIMITS_EVERY)
        self.subscription = service.store.subscribe([config.name])
        self.dispatcher = Dispatcher(self)
        #: Slot threads (for sync jobs), made as they are needed: see `_start_ready`.
        self._threads: list[threading.Thread] = []
        #: Slots free to start a held job (their indices), and slot threads waiting for a
        #: sync job: both under `_held_lock`.
        self._free_slots = list(range(config.concurrency - 1, -1, -1))
        self._idle_threads = 0
        self._running = False  # set by `start`: a pool not started only holds what it claims
        self._released = False
        self.cancels = CancelWatch(service, config.name)
        #: What each async job's context starts from: the context the pool was made in.
        self._context = contextvars.copy_context()

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        with self._held_lock:
            self._running = True
        self._start_ready()
        self.dispatcher.start()

    def stop_claiming(self) -> None:
        self.dispatcher.request_stop()  # its wake-up unblocks the dispatcher's wait

    def join_dispatcher(self, timeout: float) -> None:
        self.dispatcher.join(timeout)
        self.subscription.close()

    def take_unstarted(self) -> list[ClaimedJob]:
        """Claimed jobs no slot has started yet (the drain gives them back)."""
        taken: list[ClaimedJob] = []
        with self._held_lock:
            held, self._held = self._held, []
        held.sort()  # in the order slots would have started them
        for _key, _order, run in held:
            self._release(run)
            if run.interrupt_by_runtime():
                taken.append(run.claimed)
        return taken  # (their tokens stay in the inbox: a slot that takes one finds none)

    def release_slots(self) -> None:
        with self._held_lock:
            self._released = True
            threads = len(self._threads)
        for _ in range(threads):
            self._inbox.put(_STOP)
        self.cancels.stop()

    # -- dispatching -----------------------------------------------------------------------
    def limits_in_force(self) -> Limits | None:
        """The limits to claim within, None when the queue has none (a plain claim): see
        `worker/claims.py`; limits set at runtime are looked up every
        `RUNTIME_LIMITS_EVERY` seconds, only for a queue with none in its settings."""
        if self.settings_limits.active:
            return self.settings_limits
        return claims.limits_in_force(
            self.settings_limits, self.name, self._runtime_limits.queues()
        )

    def wanted(self) -> int:
        """How many jobs to claim now: enough to fill the slots and the claimed-ahead reserve,
        at most `CLAIM_CHUNK`, but nothing while the pool still holds more than half of its
        reserve (so claims come in batches, not one per finished job), unless a refill is
        going on."""
        self._update_ahead()
        with self._busy_lock:
            busy = self._busy
        if busy > self.low_water() and not self.filling:
            return 0
        wanted = self.config.concurrency + self.ahead - busy
        if wanted <= 0:
            self.filling = False
            return 0
        return min(wanted, CLAIM_CHUNK)

    def low_water(self) -> int:
        """Claim again once the pool holds no more than this: half the reserve used, or, with
        no reserve, as soon as a slot is free."""
        if not self.ahead:
            return self.config.concurrency - 1
        return self.config.concurrency + self.ahead // 2

    def _update_ahead(self) -> None:
        now = monotonic()
        learned = self._learn(now)
        overdue = self._overdue(now)[1]
        if learned or overdue or self._overdue_seen:
            self.ahead = self._reserve(overdue)
        self._overdue_seen = overdue

    def _cover(self) -> float:
        """Seconds of work the reserve covers."""
        return max(AHEAD_SECONDS, CLAIM_COVER * self._claim_seconds)

    def _learn(self, now: float) -> bool:
        """Measure the queue's rate of finished runs and their mean run time, over at least
        `RATE_WINDOW` since the last measurement; True when it measured."""
        with self._busy_lock:
            finished = self._finished
        work = sum(self._slot_work)
        since = self._rate_since
        if since is None:
            self._rate_since = (now, finished)
            return False
        if now - since[0] < RATE_WINDOW:
            return False  # too short to say: a burst of runs ending together is not a rate
        self._rate_since = (now, finished)
        rate = (finished - since[1]) / (now - since[0])
        self._rate = rate if not self._rate else self._rate + RATE_WEIGHT * (rate - self._rate)
        work_since, finished_since = self._work_since
        if finished > finished_since:
            mean = (work - work_since) / (finished - finished_since)
            self._work_since = (work, finished)
            self._run_seconds = (
                mean
                if not self._run_seconds
                else self._run_seconds + RATE_WEIGHT * (mean - self._run_seconds)
            )
        return True

    def _reserve(self, overdue: int) -> int:
        """How many jobs to keep claimed ahead: `cover` seconds of the measured rate, bounded
        by the jobs' own run time, counting only the slots that still finish jobs at that
        pace. Jobs that take longer than that between them keep none ahead: a slow kind
        claims no more than its free slots."""
        concurrency = self.config.concurrency
        # An overdue slot finishes nothing at the learned pace while its job runs: its share
        # of the learned rate drops out now, not after the smoothed rate has decayed (which
        # takes about a second of windows, during which a burst of slow jobs would be
        # claimed by one worker on a reserve learned from fast ones).
        finishing = concurrency - overdue
        cover = self._cover()
        ahead = min(AHEAD_MAX, int(self._rate * cover * finishing / concurrency))
        # The rate alone misleads when slow jobs started together end together (four
        # one-second jobs ending within the rate's window read as a fast queue), so the
        # reserve is also bounded by the jobs' own run time: what the slots finish in
        # `cover`. A slow kind then keeps none ahead, however its ends bunch up.
        if self._run_seconds > 0:
            ahead = min(ahead, int(finishing * cover / self._run_seconds))
        return ahead

    def _overdue(self, now: float) -> tuple[list[float], int]:
        """The start times of the slots' current runs, and how many of them are overdue."""
        after = self._overdue_after()
        running = [started for started in self._slot_started if started is not None]
        return running, sum(1 for started in running if now - started > after)

    def _overdue_after(self) -> float:
        """Seconds a run lasts before it counts as overdue (see `OVERDUE_RUNS`)."""
        return max(OVERDUE_RUNS * self._run_seconds, AHEAD_SECONDS)

    def next_look(self, seconds: float) -> float:
        """How long the dispatcher may sleep, at most `seconds`: while the pool holds
        unstarted jobs, no later than the moment the first running job becomes overdue (its
        slot then stops counting, and what the others will not start soon goes back)."""
        with self._held_lock:
            holding = bool(self._held)
        if not holding or not self._run_seconds:
            return seconds
        now = monotonic()
        after = self._overdue_after()
        due = [started + after - now for started in self._slot_started if started is not None]
        upcoming = [left for left in due if left > 0]
        # With none upcoming (the slots have not started the jobs just handed out yet, or
        # every run is overdue already and the rest is kept), look again one period later.
        return min(seconds, min(upcoming) if upcoming else after)

    def give_back_overdue(self) -> int:
        """While some slots run overdue jobs, give back the unstarted jobs beyond what the free
        slots and the other running slots start within `GIVE_BACK_COVERS` covers (the lowest
        priority, latest claimed first), and wake the other workers so that they claim them;
        the number given back. Before any run time is measured nothing is held ahead."""
        if not self._run_seconds:
            return 0
        running, overdue = self._overdue(monotonic())
        if not overdue:
            return 0
        pace = GIVE_BACK_COVERS * self._cover() / self._run_seconds
        keep = self.config.concurrency - len(running) + int((len(running) - overdue) * pace)
        with self._held_lock:
            if len(self._held) <= keep:
                return 0
            self._held.sort()  # a sorted list is a heap
            self._held, excess = self._held[:keep], self._held[keep:]
        runs = [run for _key, _order, run in excess if run.interrupt_by_runtime()]
        now = self.service.clock()
        try:
            # In its place in the queue (its `scheduled_at`), not behind the jobs after it.
            self.service.store.finish(
                [
                    replace(give_back(run.ref, now), scheduled_at=run.claimed.record.scheduled_at)
                    for run in runs
                ]
            )
        except BaseException:
            # Held again (as new runs: these ones are ended), so that a slot starts them or
            # the next look gives them back; the store's error goes up to the thread's loop.
            with self._busy_lock:
                self._busy -= len(excess) - len(runs)
            self.hold_again([run.claimed for run in runs])
            raise
        # (A run a drain took over meanwhile is the drain's to write.)
        for _key, _order, run in excess:
            self.runs.remove(run)
        with self._busy_lock:
            self._busy -= len(excess)
        self.service.store.wake([self.name])
        logger.debug(
            "queue %s: gave back %d unstarted jobs (%d of %d slots overdue)",
            self.name,
            len(runs),
            overdue,
            self.config.concurrency,
        )
        return len(runs)

    def claim_took(self, seconds: float) -> None:
        """Note how long a claim took (the dispatcher's, the only thread that claims)."""
        last = self._claim_seconds
        self._claim_seconds = seconds if not last else last + RATE_WEIGHT * (seconds - last)

    def lane_room(self, priority: int) -> int:
        """How many jobs to claim now for a wake-up that announced `priority`, while the pool
        holds its fill: none unless a job at that priority would start before one held
        unstarted, else what the lane has room for. None either while nothing is kept ahead
        (slow jobs, or no rate measured yet): a slot that frees claims its own next job."""
        if not self.ahead:
            return 0
        with self._busy_lock:
            busy = self._busy
        room = min(LANE, self.config.concurrency + self.ahead + LANE - busy)
        if room <= 0:
            return 0
        with self._held_lock:
            # Keys are -priority: the largest is the lowest priority held.
            lower = bool(self._held) and max(self._held)[0] > -priority
        return room if lower else 0

    def hand_out(self, claimed: list[ClaimedJob]) -> None:
        if not claimed:
            return
        with self._busy_lock:
            self._busy += len(claimed)
        self.hold_again(claimed)

    def hold_again(self, claimed: list[ClaimedJob]) -> None:
        """Put claimed jobs (already counted busy) where the slots take them."""
        runs = [Run(job, CancelScope()) for job in claimed]
        # Registered before a slot takes them, so a drain never misses one; one lock a batch.
        self.runs.add_all(runs)
        order = self._order
        with self._held_lock:
            for run in runs:
                heapq.heappush(self._held, (-run.claimed.record.priority, next(order), run))
        self._start_ready()

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
    def _start_ready(self, *, freed: int | None = None) -> tuple[Run, int] | None:
        """Start held jobs while slots are free, highest priority first: an async one as a
        task on the loop, a sync one in a slot thread (made when none waits). With `freed`
        (from the slot thread that just ran a job in that slot), the slot is free again and
        the thread counted idle in the same step (so no thread is made meanwhile), and the
        first sync job is that thread's own, returned to it: no hand-off through the inbox,
        which would wake another thread for it while this one goes to sleep."""
        tasks: list[tuple[Run, int]] = []
        mine: tuple[Run, int] | None = None
        take = freed is not None
        handler_of = self.service.registry.handler
        with self._held_lock:
            held, free = self._held, self._free_slots  # under the lock: a drain takes `_held`
            if freed is not None:
                free.append(freed)
                self._idle_threads += 1
            while held and free and self._running and not self._released:
                run = heapq.heappop(held)[2]
                index = free.pop()
                handler = handler_of(run.claimed.record.kind)
                if handler is not None and handler.is_async:
                    tasks.append((run, index))
                    continue
                if take and mine is None and self._idle_threads:
                    self._idle_threads -= 1
                    mine = (run, index)
                    continue
                self._inbox.put((run, index))
                if self._idle_threads:
                    self._idle_threads -= 1
                else:
                    number = len(self._threads)
                    self._threads.append(
                        start_thread(self._slot, name=f"anole-{self.name}-{number}")
                    )
        if tasks:
            loop = aloop.shared_loop()
            if aloop.in_loop_thread():
                self._spawn_tasks(tasks)
            else:
                loop.call_soon_threadsafe(self._spawn_tasks, tasks)
        return mine

    def _spawn_tasks(self, tasks: list[tuple[Run, int]]) -> None:
        """On the loop: one task per async job, each in a context of its own, copied from
        the pool's (never from the job whose end started it)."""
        loop = asyncio.get_running_loop()
        for run, index in tasks:
            loop.create_task(self._run_async(run, index), context=self._context.copy())

    def _slot(self) -> None:
        """A slot thread: runs the sync jobs `_start_ready` hands it, one after another."""
        from django.db import close_old_connections

        from anole_jobs.background import close_connections

        install_query_checks()
        close_old_connections()  # as a request starts; after that, once after each run
        while True:
            item = self._inbox.get()
            if item is _STOP:
                break
            mine: tuple[Run, int] | None = cast("tuple[Run, int]", item)
            while mine is not None:
                run, index = mine
                try:
                    self._take_and_run(run, index, close_old_connections)
                except Exception:  # noqa: BLE001 - a slot lives as long as its pool
                    logger.exception("queue %s: slot %d failed between two jobs", self.name, index)
                except BaseException:
                    self._slot_ended(index, thread=True)  # whatever happened: never a slot lost
                    raise
                # The slot is free again, and the next held job (if any) this thread's.
                mine = self._next_for(index)
        close_connections()

    def _next_for(self, index: int) -> tuple[Run, int] | None:
        """`_start_ready(freed=index)`, for the slot thread that just ran a job in slot
        `index`: when the next held job is a sync one, it is this thread's, in the same slot,
        under one lock and nothing else to do (no other slot can be free while jobs are
        held: every change of either starts what it can)."""
        with self._held_lock:
            held = self._held
            if held and self._running and not self._released:
                run = held[0][2]
                handler = self.service.registry.handler(run.claimed.record.kind)
                if handler is None or not handler.is_async:
                    heapq.heappop(held)
                    return (run, index)
        return self._start_ready(freed=index)

    def _slot_ended(self, index: int, *, thread: bool = False) -> None:
        """Slot `index` is free again (and, with `thread`, the slot thread that ran its job
        waits for the next: counted idle in the same step, so no thread is made meanwhile)."""
        with self._held_lock:
            self._free_slots.append(index)
            if thread:
                self._idle_threads += 1

    def _take_and_run(self, run: Run, index: int, close_old_connections: Any) -> None:
        """Run a held sync job in this slot thread (if the drain left it); the caller frees
        the slot after (`_start_ready(freed=index)`), whatever this raised."""
        if run.ended:
            # The drain already gave it back before any slot started it.
            self._release(run)
            return
        handed_on = False
        self._slot_started[index] = monotonic()
        try:
            handed_on = self._run(run, index)
        finally:
            self._slot_started[index] = None
            # As a request ends: drop connections that broke or outlived CONN_MAX_AGE
            # (which also readies the health check of CONN_HEALTH_CHECKS for the next run).
            close_old_connections()
            self.runs.remove(run)
            if not handed_on:  # else the completer calls `_settled` once it wrote
                self._settled()

    def _hand_on(self, run: Run, attempt: Attempt) -> tuple[bool, bool]:
        """Pass a finished attempt to the completer if its outcome is still the one to
        record: (handed to the completer, the completer settles it)."""
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

        finished = run.finish_by_handler(hand_on)
        return finished, handed_on

    def _run(self, run: Run, index: int) -> bool:
        """Run one claimed job in this slot; True once its outcome is the completer's to
        write (then the completer settles it), False when nothing was handed on."""
        handed_on = False
        try:
            run.span = self.executor.start_span(run.claimed)
            attempt = self.executor.run(run.claimed, run.scope, run.span)
            self._slot_work[index] += attempt.seconds
            finished, handed_on = self._hand_on(run, attempt)
            if finished:
                self.executor.report(attempt)  # after the hand-off: never delays the write
        except BaseException:  # noqa: BLE001 - a bug here must not kill the slot
            # (the executor already turns whatever a handler raises into its attempt)
            logger.exception("job %s: the runtime failed around its handler", run.claimed.record.id)
        return handed_on

    async def _run_async(self, run: Run, index: int) -> None:
        """Run one claimed async job as a task of the loop, in slot `index`."""
        handed_on = False
        if run.ended:
            self._release(run)
            self._slot_ended(index)
            self._start_ready()
            return
        self._slot_started[index] = monotonic()
        self.cancels.add(run)
        try:
            run.span = self.executor.start_span(run.claimed)
            attempt = await self.executor.arun(run.claimed, run.scope, run.span)
            self._slot_work[index] += attempt.seconds
            finished, handed_on = self._hand_on(run, attempt)
            if finished and attempt.outcome in ("retried", "dead"):
                # The error reporter may block: in the loop's executor, after the hand-off.
                asyncio.get_running_loop().run_in_executor(None, self.executor.report, attempt)
        except BaseException:  # noqa: BLE001 - a bug here must not kill the pool
            logger.exception("job %s: the runtime failed around its handler", run.claimed.record.id)
        finally:
            self.cancels.discard(run)
            self._slot_started[index] = None
            self.runs.remove(run)
            self._slot_ended(index)
            if not handed_on:
                self._settled()
            self._start_ready()
