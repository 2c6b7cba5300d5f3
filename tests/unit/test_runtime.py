"""The runtime in this process (timeouts, cancellation, leases, fencing, drain, start
and stop), on the memory store with RUN="auto".

`jobs.start()` runs real worker threads. Tests observe them through the event bus
(`RUN_STARTED`/`RUN_FINISHED`) and through handlers that block on `threading.Event`s the test
controls; every wait is a condition wait with a deadline, never a sleep. The clock is a
`FakeClock` unless a test needs leases to pass in real time, so rescue never fires by accident.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from anole_jobs import Canceled, events, jobs
from anole_jobs.clock import monotonic
from anole_jobs.stores.base import Finish
from anole_jobs.testing import FakeClock
from tests.sampleapp import e2e_jobs
from tests.sampleapp.jobs import HOOKS, Work

WAIT = 10.0  # the longest any condition may take before the test fails


class Log(logging.Handler):
    """Events of the bus and `anole_jobs` log lines, in the order they happened."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.cond = threading.Condition()
        self.items: list[Any] = []

    def __call__(self, event: events.Event) -> None:  # an event-bus listener
        with self.cond:
            self.items.append(event)
            self.cond.notify_all()

    def emit(self, record: logging.LogRecord) -> None:  # a logging handler
        with self.cond:
            self.items.append(record)
            self.cond.notify_all()

    def events(self, name: str, **match: Any) -> list[events.Event]:
        with self.cond:
            return [
                item
                for item in self.items
                if isinstance(item, events.Event)
                and item.name == name
                and all(item.fields.get(k) == v for k, v in match.items())
            ]

    def finished(self, **match: Any) -> list[events.Event]:
        return self.events(events.RUN_FINISHED, **match)

    def wait_for(self, predicate: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        with self.cond:
            result = self.cond.wait_for(predicate, timeout)
        assert result, f"timed out after {timeout} s waiting for {what}; saw {self.items!r}"
        return result

    def wait_finished(self, count: int = 1, timeout: float = WAIT, **match: Any) -> list[Any]:
        self.wait_for(
            lambda: len(self.finished(**match)) >= count, f"{count} RUN_FINISHED {match}", timeout
        )
        return self.finished(**match)


@dataclass
class Runtime:
    """What a test gets: the facade, its settings, the clock and the log."""

    settings: Any
    clock: FakeClock
    log: Log
    gates: list[threading.Event] = field(default_factory=list)

    def configure(self, **extra: Any) -> None:
        self.settings.ANOLE_JOBS = {
            "STORE": "memory",
            "RUN": "auto",
            "CLOCK": self.clock,
            "QUEUES": {"default": {"concurrency": 3, "drain_timeout": 1}},
            **extra,
        }

    def gate(self) -> threading.Event:
        """An event a handler waits on; set at teardown so no handler outlives its test."""
        event = threading.Event()
        self.gates.append(event)
        return event

    def hook(self, func: Callable[[Any, Any], None]) -> str:
        """Register `func(job, args)` as the behaviour of `Work(action=<name>)`."""
        name = f"hook{len(HOOKS)}"
        HOOKS[name] = func
        return name

    @property
    def store(self) -> Any:
        return jobs.service.store


@pytest.fixture
def rt(settings: Any, recorder: Any) -> Iterator[Runtime]:
    log = Log()
    unsubscribe = events.bus.subscribe(log)
    package_logger = logging.getLogger("anole_jobs")
    level = package_logger.level
    package_logger.addHandler(log)
    package_logger.setLevel(logging.DEBUG)
    runtime = Runtime(settings=settings, clock=FakeClock(), log=log)
    runtime.configure()
    try:
        yield runtime
    finally:
        for gate in runtime.gates:
            gate.set()
        jobs.stop(drain=False)
        unsubscribe()
        package_logger.removeHandler(log)
        package_logger.setLevel(level)


def wait_event(event: threading.Event, what: str, timeout: float = WAIT) -> None:
    assert event.wait(timeout), f"timed out after {timeout} s waiting for {what}"


def handler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("anole-default-")]


# -- pools -----------------------------------------------------------------------------------
def test_a_queue_runs_exactly_its_concurrency_at_once(rt: Runtime) -> None:
    concurrency = 3
    cond = threading.Condition()
    running = {"now": 0, "peak": 0}
    release = rt.gate()

    def gated(job: Any, args: Any) -> None:
        with cond:
            running["now"] += 1
            running["peak"] = max(running["peak"], running["now"])
            cond.notify_all()
        try:
            release.wait(WAIT)
        finally:
            with cond:
                running["now"] -= 1

    action = rt.hook(gated)
    total = 3 * concurrency
    ids = [e.id for e in jobs.enqueue_many([Work(action=action) for _ in range(total)])]
    jobs.start()
    with cond:
        assert cond.wait_for(lambda: running["now"] == concurrency, WAIT)
    # Every slot is busy and nothing more is claimed (no rate measured yet, and these jobs
    # are slow): the rest wait unclaimed, for this or another worker.
    assert jobs.counts()["default"] == {"running": concurrency, "available": 2 * concurrency}
    release.set()
    finished = rt.log.wait_finished(total)
    assert {e["job_id"] for e in finished} == set(ids)
    assert {e["outcome"] for e in finished} == {"completed"}
    assert running["peak"] == concurrency
    assert jobs.counts()["default"] == {"completed": total}


def test_claims_in_batches_sized_to_the_free_slots(rt: Runtime) -> None:
    calls: list[tuple[int, int]] = []
    store = rt.store
    claim = store.claim

    def spy(queue: str, **kwargs: Any) -> Any:
        claimed = claim(queue, **kwargs)
        calls.append((kwargs["limit"], len(claimed)))
        return claimed

    store.claim = spy
    jobs.enqueue_many([Work() for _ in range(3)])
    jobs.start()
    rt.log.wait_finished(3)
    # One round trip took the three jobs (concurrency 3, nothing claimed ahead before a rate
    # is measured), not one call per job.
    assert calls[0] == (3, 3)


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def idle_pool(monkeypatch: pytest.MonkeyPatch, concurrency: int) -> tuple[Any, FakeMonotonic]:
    """A queue's pool, not started, whose rate is measured on a clock the test moves."""
    from anole_jobs.conf import QueueConfig
    from anole_jobs.worker import queue as worker_queue
    from anole_jobs.worker.runs import RunRegistry

    clock = FakeMonotonic()
    monkeypatch.setattr(worker_queue, "monotonic", clock)
    pool = worker_queue.QueueWorker(
        jobs.service,
        QueueConfig(name="default", concurrency=concurrency),
        executor=None,  # type: ignore[arg-type]
        completer=None,  # type: ignore[arg-type]
        runs=RunRegistry(),
        worker_name="test",
        poll_interval=1.0,
    )
    return pool, clock


def finish(pool: Any, count: int) -> None:
    """`count` runs of the pool end (what a slot does after each run)."""
    for run in [*pool.runs][:count]:
        pool._release(run)


def test_claim_ahead_follows_the_queue_rate_within_its_bounds(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anole_jobs.worker.queue import AHEAD_MAX, AHEAD_SECONDS, CLAIM_CHUNK, CLAIM_COVER

    pool, clock = idle_pool(monkeypatch, concurrency=10)
    jobs.enqueue_many([Work() for _ in range(5000)])
    # No rate yet: the free slots only.
    assert pool.wanted() == 10
    # Slow jobs (1 per second): none ahead, so nothing to claim until a slot is free.
    pool.hand_out(claim(10))
    clock.now += 1.0
    finish(pool, 1)
    assert pool.wanted() == 1  # 9 held: exactly the free slot
    assert pool.ahead == 0
    pool.hand_out(claim(1))
    assert pool.wanted() == 0  # every slot busy, nothing held ahead
    # A fast queue: 2,000 jobs/s keeps AHEAD_SECONDS of them claimed ahead.
    finish(pool, 10)
    pool._rate = 0.0  # forget the slow past: the next measurement stands alone
    pool._finished += 2000 - 10  # 10 just finished: 2,000 in the second
    clock.now += 1.0
    expected = int(2000 * AHEAD_SECONDS)
    assert pool.wanted() == 10 + expected and pool.ahead == expected
    # A faster one is capped, and claimed in chunks.
    pool._rate = 0.0
    pool._finished += int(10 * AHEAD_MAX / AHEAD_SECONDS)
    clock.now += 1.0
    assert pool.wanted() == CLAIM_CHUNK and pool.ahead == AHEAD_MAX
    # Claims that take longer than AHEAD_SECONDS: the reserve lasts CLAIM_COVER of them.
    pool._rate = 0.0
    pool._finished += 2000
    clock.now += 1.0
    pool.claim_took(AHEAD_SECONDS * 2)
    pool.wanted()
    assert pool.ahead == int(2000 * CLAIM_COVER * AHEAD_SECONDS * 2)


def test_the_rate_is_measured_over_a_window_not_between_two_close_looks(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anole_jobs.worker.queue import AHEAD_SECONDS, RATE_WINDOW

    pool, clock = idle_pool(monkeypatch, concurrency=10)
    jobs.enqueue_many([Work() for _ in range(50)])
    pool.wanted()  # the first look starts the measurement
    pool.hand_out(claim(20))
    clock.now += RATE_WINDOW / 10
    finish(pool, 20)  # twenty runs end together, a moment after the first look
    assert pool.wanted() == 10 and pool.ahead == 0  # not 200 runs a second: too short to say
    clock.now += RATE_WINDOW  # over the whole window, 20 runs in 1.1 windows
    pool.wanted()
    assert pool.ahead == int(20 / (1.1 * RATE_WINDOW) * AHEAD_SECONDS)


def test_a_refill_larger_than_a_chunk_is_claimed_in_chunks_in_a_row(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anole_jobs.worker.queue import CLAIM_CHUNK

    pool, _clock = idle_pool(monkeypatch, concurrency=4)
    pool.ahead = 2 * CLAIM_CHUNK  # as measured on a fast queue
    jobs.enqueue_many([Work() for _ in range(3 * CLAIM_CHUNK)])
    pool.subscription.wait(0)
    rounds = [dispatch_once(pool) for _ in range(4)]
    # Three round trips in a row fill slots and reserve, then it waits for the low water.
    assert rounds == [[CLAIM_CHUNK], [CLAIM_CHUNK], [4], []]
    assert pool.filling is False and len(list(pool.runs)) == 4 + 2 * CLAIM_CHUNK


def test_slow_jobs_that_finish_together_keep_no_reserve(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty one-second jobs started together end within a tenth of a second of each other;
    the dispatcher, woken as they end, must not read that burst as a fast queue and claim a
    reserve that would sit `running` behind busy slots while another worker idles."""
    from anole_jobs.worker.queue import AHEAD_SECONDS

    slots = 20
    pool, clock = idle_pool(monkeypatch, concurrency=slots)
    jobs.enqueue_many([Work() for _ in range(4 * slots)])
    assert pool.wanted() == slots
    pool.hand_out(claim(slots))
    for _wave in range(3):
        clock.now += 0.99  # the wave ran for a second, the idle dispatcher looking in...
        assert pool.wanted() == 0
        clock.now += 0.01
        for slot in range(slots):  # ...and its jobs end 5 ms apart, waking the dispatcher
            pool._slot_work[slot] += 1.0  # what the slot records of its run
            finish(pool, 1)
            clock.now += 0.005
            wanted = pool.wanted()
            assert pool.ahead == 0, (pool._rate, pool._run_seconds)
            assert wanted <= slots - len([*pool.runs]), (wanted, [*pool.runs])
            pool.hand_out(claim(wanted))
    # The bursts alone read as a queue fast enough for a reserve; the run time says not.
    assert int(pool._rate * AHEAD_SECONDS) > 0, pool._rate
    assert pool._run_seconds == pytest.approx(1.0)


def learn_fast(pool: Any, clock: FakeMonotonic, *, per_second: int) -> None:
    """The pool measures `per_second` near-instant runs a second (1 ms each)."""
    pool.wanted()  # the first look starts the measurement
    pool._finished += per_second
    for slot in range(len(pool._slot_work)):
        pool._slot_work[slot] += 0.001 * per_second / len(pool._slot_work)
    clock.now += 1.0
    pool.wanted()


def test_slow_jobs_after_fast_ones_drop_the_reserve_and_go_back_within_a_run(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reserve learned from 2,000 near-instant jobs a second takes a burst of slow jobs
    with it: four start, four wait behind them. Once the running ones last past what the
    queue's jobs took (twice the mean, at least AHEAD_SECONDS), their slots stop
    counting: the reserve is gone at once, and the four unstarted jobs go back to the store
    (attempt not counted, in their place) for another worker, with a wake-up."""
    from anole_jobs.worker.queue import AHEAD_SECONDS

    pool, clock = idle_pool(monkeypatch, concurrency=4)
    learn_fast(pool, clock, per_second=2000)
    assert pool.ahead == int(2000 * AHEAD_SECONDS)
    ids = [e.id for e in jobs.enqueue_many([Work() for _ in range(8)])]
    assert pool.wanted() == 4 + pool.ahead
    pool.hand_out(claim(8))
    with pool._held_lock:  # four slots take a job each (what `_slot` does)
        for slot in range(4):
            heapq.heappop(pool._held)
            pool._slot_started[slot] = clock.now
    woken: list[set[str]] = []
    wake = pool.service.store.wake
    monkeypatch.setattr(pool.service.store, "wake", lambda q: (woken.append(set(q)), wake(q)))
    # Not overdue yet: nothing goes back, and the dispatcher looks again when it would be.
    assert pool.give_back_overdue() == 0
    assert pool.next_look(1.0) == pytest.approx(AHEAD_SECONDS)
    clock.now += AHEAD_SECONDS * 1.01
    assert pool.wanted() == 0 and pool.ahead == 0
    assert pool.give_back_overdue() == 4 and woken == [{"default"}]
    states = {i: jobs.get(i).state for i in ids}
    assert sorted(states.values()) == ["available"] * 4 + ["running"] * 4
    back = [jobs.get(i) for i in ids if states[i] == "available"]
    assert all(r.attempt == 0 for r in back), back  # the attempt given back
    assert len(list(pool.runs)) == 4 and pool._held == []
    # The pool itself does not claim them again while its slots run the slow ones.
    assert pool.wanted() == 0


def test_one_overdue_slot_among_fast_ones_keeps_what_the_others_start_soon(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single long job among near-instant ones costs its slot's share of the reserve, not
    the reserve: the other slots still start the jobs held ahead within the cover."""
    from anole_jobs.worker.queue import AHEAD_SECONDS

    pool, clock = idle_pool(monkeypatch, concurrency=4)
    learn_fast(pool, clock, per_second=2000)
    full = pool.ahead
    jobs.enqueue_many([Work() for _ in range(4 + full)])
    pool.hand_out(claim(4 + full))
    with pool._held_lock:
        for slot in range(4):
            heapq.heappop(pool._held)
            pool._slot_started[slot] = clock.now
    clock.now += AHEAD_SECONDS * 1.01
    for slot in range(1, 4):  # three slots moved on to their next near-instant job
        pool._slot_started[slot] = clock.now
    pool.wanted()
    assert pool.ahead == int(2000 * AHEAD_SECONDS * 3 / 4)
    assert pool.give_back_overdue() == 0 and len(pool._held) == full


def test_limits_set_at_runtime_reach_a_pool_whose_settings_have_none(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queue without limits in its settings claims plainly until `jobs.set_limits` stores
    some: the pool looks them up now and then, and then claims within them."""
    from anole_jobs.worker.queue import RUNTIME_LIMITS_EVERY

    pool, _clock = idle_pool(monkeypatch, concurrency=4)
    assert pool.limits_in_force() is None
    jobs.set_limits("default", global_concurrency=1)
    assert pool.limits_in_force() is None  # not looked up again before RUNTIME_LIMITS_EVERY
    pool._runtime_limits._at -= RUNTIME_LIMITS_EVERY
    assert pool.limits_in_force() is pool.settings_limits
    jobs.enqueue_many([Work() for _ in range(3)])
    pool.subscription.wait(0)
    pool.dispatcher.run_once()
    assert len(list(pool.runs)) == 1  # the store applied the stored concurrency


def test_a_slot_wakes_the_dispatcher_once_per_batch_at_the_low_water(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool, _clock = idle_pool(monkeypatch, concurrency=4)
    pool.ahead = 4  # as measured on a queue of short jobs (the clock does not move here)
    jobs.enqueue_many([Work() for _ in range(8)])
    pool.hand_out(claim(8))  # 4 slots + 4 ahead; low water 4 + 2 = 6
    woken: list[set[str]] = []
    wake = pool.service.store.wakeups.wake
    monkeypatch.setattr(
        pool.service.store.wakeups, "wake", lambda q: (woken.append(set(q)), wake(q))
    )
    finish(pool, 1)
    assert woken == [] and pool.wanted() == 0  # 7 held
    finish(pool, 1)
    assert woken == [{"default"}] and pool.wanted() == 2  # 6 held: claim the next 2 now
    finish(pool, 6)
    assert woken == [{"default"}]  # below the low water the dispatcher is already claiming


def test_with_nothing_ahead_each_freed_slot_wakes_the_dispatcher(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool, _clock = idle_pool(monkeypatch, concurrency=4)
    jobs.enqueue_many([Work() for _ in range(8)])
    assert pool.wanted() == 4 and pool.ahead == 0
    pool.hand_out(claim(4))
    woken: list[set[str]] = []
    wake = pool.service.store.wakeups.wake
    monkeypatch.setattr(
        pool.service.store.wakeups, "wake", lambda q: (woken.append(set(q)), wake(q))
    )
    assert pool.wanted() == 0  # every slot busy
    finish(pool, 1)
    assert woken == [{"default"}] and pool.wanted() == 1  # the one free slot, no more
    pool.hand_out(claim(1))
    finish(pool, 1)
    assert woken == [{"default"}, {"default"}] and pool.wanted() == 1


def claim(limit: int) -> list[Any]:
    now = jobs.service.clock()
    return jobs.service.store.claim(
        "default", kinds=None, limit=limit, now=now, lease_until=now, worker="test"
    )


class StartOrder:
    """An executor and completer for a pool's slot run in the test's thread: records the id of
    each job a slot starts, in order, and runs nothing."""

    def __init__(self) -> None:
        self.started: list[int] = []

    def start_span(self, claimed: Any) -> None:
        return None

    def run(self, claimed: Any, scope: Any, span: Any) -> Any:
        self.started.append(claimed.record.id)
        return claimed

    def report(self, attempt: Any) -> None:
        pass

    def submit(self, attempt: Any, settled: Any) -> None:
        settled()


def run_slot(pool: Any) -> list[int]:
    """Start every job the pool holds, in one slot in this thread; the ids in start order.

    The slot's connection hygiene (Django's `close_old_connections` around each run) is left
    out: these tests have no database access, and a connection another test left open in
    this thread would otherwise be checked."""
    from unittest import mock

    from anole_jobs.worker.queue import _STOP

    order = StartOrder()
    pool.executor = pool.completer = order
    with pool._held_lock:  # the pool is not started: it starts nothing by itself
        held, pool._held = sorted(pool._held), []
    for _key, _order, run in held:
        pool._inbox.put((run, 0))
    pool._inbox.put(_STOP)
    with (
        mock.patch("django.db.close_old_connections"),
        mock.patch("anole_jobs.background.close_connections"),
    ):
        pool._slot()
    return order.started


def test_held_jobs_start_highest_priority_first_then_in_claim_order(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool, _clock = idle_pool(monkeypatch, concurrency=2)
    low = [jobs.enqueue(Work(), priority=p).id for p in (0, 0, 5, 0)]
    pool.hand_out(claim(4))  # the store's claim order: 5, then the zeros oldest first
    later = [jobs.enqueue(Work(), priority=p).id for p in (100, 0)]
    pool.hand_out(claim(2))  # claimed after them, but the 100 overtakes every job held
    assert run_slot(pool) == [later[0], low[2], low[0], low[1], low[3], later[1]]
    assert pool.wanted() == 2  # every held job ran and left: the slots are free again


def test_the_drain_takes_back_unstarted_jobs_and_their_slots_find_none(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool, _clock = idle_pool(monkeypatch, concurrency=2)
    ids = [jobs.enqueue(Work(), priority=p).id for p in (0, 100, 0)]
    pool.hand_out(claim(3))
    taken = pool.take_unstarted()
    assert [c.record.id for c in taken] == [ids[1], ids[0], ids[2]]
    assert list(pool.runs) == [] and run_slot(pool) == []  # three tokens, no job behind them


def test_a_slot_outlives_an_error_between_two_jobs(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An error around a run (here: counting its slot free) used to end the slot's thread, and
    # the pool ran one job fewer at a time from then on, silently.
    pool, _clock = idle_pool(monkeypatch, concurrency=1)
    ids = [jobs.enqueue(Work()).id for _ in range(3)]
    pool.hand_out(claim(3))
    settled = pool._settled
    failures = [RuntimeError("the wake-up hub broke")]

    def settle_once_badly() -> None:
        settled()
        if failures:
            raise failures.pop()

    monkeypatch.setattr(pool, "_settled", settle_once_badly)
    assert run_slot(pool) == ids  # the slot went on to the next jobs
    lines = [i.getMessage() for i in rt.log.items if isinstance(i, logging.LogRecord)]
    assert "queue default: slot 0 failed between two jobs" in lines


def announcing_pool(monkeypatch: pytest.MonkeyPatch, *, concurrency: int, ahead: int) -> Any:
    """A pool of a queue of short jobs holding its slots and reserve full of priority-0 jobs
    (claimed, none started), with the backlog's wake-ups already read."""
    pool, _clock = idle_pool(monkeypatch, concurrency=concurrency)
    pool.ahead = ahead  # as measured on a queue of short jobs (the clock does not move here)
    jobs.enqueue_many([Work() for _ in range(concurrency + ahead + 20)])
    pool.hand_out(claim(concurrency + ahead))
    pool.subscription.wait(0)
    return pool


def dispatch_once(pool: Any) -> list[int]:
    """One round of the dispatcher after the wake-ups so far (no wait); the limits of the
    store's claims it made."""
    limits: list[int] = []
    store = pool.service.store
    claim_ = store.claim

    def spy(queue: str, **kwargs: Any) -> Any:
        limits.append(kwargs["limit"])
        return claim_(queue, **kwargs)

    store.claim = spy
    try:
        pool.dispatcher.pause(0.001)  # returns at once while a wake-up is pending
        pool.dispatcher.run_once()
    finally:
        del store.claim
    return limits


def test_a_wake_up_announcing_a_higher_priority_claims_it_at_once_into_the_lane(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anole_jobs.worker.queue import LANE

    pool = announcing_pool(monkeypatch, concurrency=2, ahead=4)
    assert pool.wanted() == 0  # full: no batch before it is down to its low water
    assert dispatch_once(pool) == []  # no wake-up, no claim
    jobs.enqueue(Work())  # at the priority held: waits for the next batch as before
    assert dispatch_once(pool) == []
    urgent = jobs.enqueue(Work(), priority=100).id
    assert dispatch_once(pool) == [LANE]  # claimed at once, the highest priority first
    started = run_slot(pool)
    assert started[0] == urgent and len(started) == 2 + 4 + LANE


def test_the_lane_is_bounded_and_unused_when_nothing_lower_is_held(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from anole_jobs.worker.queue import LANE

    pool = announcing_pool(monkeypatch, concurrency=2, ahead=4)
    jobs.enqueue(Work(), priority=50)
    assert dispatch_once(pool) == [LANE]
    jobs.enqueue(Work(), priority=100)
    assert dispatch_once(pool) == []  # the lane is full until held jobs start
    assert pool.lane_room(100) == 0
    # Once a job of the lane started and left, there is room for one more.
    run = next(r for r in pool.runs if r.claimed.record.priority == 50)
    with pool._held_lock:
        pool._held = [item for item in pool._held if item[2] is not run]
    pool._release(run)
    assert pool.lane_room(100) == 1 and pool.lane_room(0) == 0

    # Slow jobs keep nothing ahead: the pool claims its free slots only, and no lane even
    # while the jobs just claimed have not reached their slots yet.
    slow, _clock = idle_pool(monkeypatch, concurrency=2)
    slow.hand_out(claim(2))
    slow.subscription.wait(0)
    jobs.enqueue(Work(), priority=100)
    assert slow.ahead == 0 and dispatch_once(slow) == []


def test_announced_priorities_reach_the_dispatcher_as_the_highest_since_its_last_round(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = announcing_pool(monkeypatch, concurrency=1, ahead=2)
    store = pool.service.store
    store.wakeups.wake({"default": 3})
    store.wakeups.wake({"other": 100})  # not this pool's queue
    store.wakeups.wake({"default": 7})
    store.wakeups.wake(["default"])  # a plain wake-up (a retry, a rescue) announces nothing
    pool.dispatcher.pause(0.001)
    assert pool.dispatcher.announced == 7


@pytest.mark.django_db(transaction=True)
def test_a_query_cancel_in_one_run_does_not_reach_the_next_run_of_its_slot(
    rt: Runtime, tmp_path: Path
) -> None:
    # One slot: both runs go through the same thread and its one installed query check.
    rt.configure(QUEUES={"default": {"concurrency": 1, "drain_timeout": 1}})
    first = jobs.enqueue(e2e_jobs.QueryPastTimeout(marker=str(tmp_path)), priority=1).id
    second = jobs.enqueue(e2e_jobs.Query(marker=str(tmp_path))).id
    jobs.start()
    (cancelled,) = rt.log.wait_finished(job_id=first)
    (done,) = rt.log.wait_finished(job_id=second)
    assert cancelled["outcome"] == "dead" and cancelled["error_type"] == "Timeout"
    assert done["outcome"] == "completed"
    assert (tmp_path / f"{second}.1.finished").exists()


def test_a_job_enqueued_while_idle_is_woken_at_once_not_polled(rt: Runtime) -> None:
    runtime = jobs.start()
    for worker in runtime.workers:
        worker.poll_interval = 3600.0  # only a wake-up can start the next job in time
    first = jobs.enqueue(Work(tag="first")).id
    rt.log.wait_finished(job_id=first)
    second = jobs.enqueue(Work(tag="second")).id
    rt.log.wait_finished(job_id=second, outcome="completed")


def test_start_is_idempotent_and_stop_is_a_no_op_when_stopped(rt: Runtime) -> None:
    first = jobs.start()
    assert jobs.start() is first
    dispatchers = [t for t in handler_threads() if t.name.endswith("dispatch")]
    assert len(dispatchers) == 1
    # One dispatcher; slot threads are made as sync jobs need them (none ran yet).
    assert len(handler_threads()) == 1
    jobs.stop()
    jobs.stop()
    assert first.stopped.is_set()
    # A later start begins a new runtime that runs jobs.
    again = jobs.start()
    assert again is not first
    job_id = jobs.enqueue(Work()).id
    rt.log.wait_finished(job_id=job_id, outcome="completed")


def test_start_logs_the_start_up_line_before_any_job_runs(rt: Runtime) -> None:
    job_id = jobs.enqueue(Work()).id
    jobs.start()
    rt.log.wait_finished(job_id=job_id)
    with rt.log.cond:
        items = list(rt.log.items)
    starting = [
        i
        for i, item in enumerate(items)
        if isinstance(item, logging.LogRecord) and "workers starting" in item.getMessage()
    ]
    first_run = next(
        i
        for i, item in enumerate(items)
        if isinstance(item, events.Event) and item.name == events.RUN_STARTED
    )
    assert starting and starting[0] < first_run
    line = items[starting[0]].getMessage()
    assert "store memory" in line and "default (concurrency 3)" in line


def test_start_is_refused_under_lambda_and_manual(rt: Runtime) -> None:
    rt.configure(DEPLOYMENT="lambda")
    with pytest.raises(ImproperlyConfigured, match="lambda"):
        jobs.start()
    rt.configure(RUN="manual")
    with pytest.raises(ImproperlyConfigured, match="manual"):
        jobs.start()


# -- fencing: a stale worker cannot write ------------------------------------------------------
@pytest.mark.parametrize("how", ["retry", "cancel", "rescue"])
@pytest.mark.parametrize("then", ["complete", "fail", "snooze"])
def test_a_stale_worker_cannot_complete_fail_or_snooze_its_job(
    rt: Runtime, how: str, then: str
) -> None:
    started = threading.Event()
    proceed = rt.gate()

    def stale(job: Any, args: Any) -> None:
        if job.attempt > 1:
            return  # the fresh run, after the stale one lost the job
        started.set()
        proceed.wait(WAIT)  # ignores cancellation: it will try to write after losing the job
        if then == "fail":
            raise ValueError("a stale failure")
        if then == "snooze":
            job.snooze(60)

    job_id = jobs.enqueue(Work(action=rt.hook(stale))).id
    runtime = jobs.start()
    wait_event(started, "the handler to start")
    if how == "retry":
        assert jobs.retry(job_id).state == "available"
    elif how == "cancel":
        assert jobs.cancel(job_id).state == "cancelled"
    else:
        rt.clock.advance(rt.settings.ANOLE_JOBS.get("LEASE", 30) + 1)
        rescued = runtime.maintenance.rescuer.run_once(rt.clock())
        assert [(r.id, r.state) for r in rescued] == [(job_id, "available")]
        rt.store.wake(["default"])
    if how != "cancel":
        # The job is available again: this runtime runs it afresh (attempt 2) and completes it.
        rt.log.wait_finished(job_id=job_id, attempt=2, outcome="completed")
    proceed.set()
    (lost,) = rt.log.wait_finished(job_id=job_id, attempt=1)
    assert lost["outcome"] == "lost"
    record = jobs.get(job_id)
    if how == "cancel":
        assert (record.state, record.attempt, record.errors) == ("cancelled", 1, ())
    else:
        assert (record.state, record.attempt) == ("completed", 2)
        # Only the rescue's own LeaseExpired entry; nothing from the stale run.
        assert [e["type"] for e in record.errors] == (["LeaseExpired"] if how == "rescue" else [])


# -- heartbeats and leases ---------------------------------------------------------------------
def _wait_in_sleep(rt: Runtime, seen: list[str], started: threading.Event) -> str:
    def sleeper(job: Any, args: Any) -> None:
        started.set()
        try:
            job.sleep(60)
        except Canceled as exc:
            seen.append(exc.reason)
            raise

    return rt.hook(sleeper)


def test_a_heartbeat_cancels_a_run_whose_job_was_cancelled(rt: Runtime) -> None:
    seen: list[str] = []
    started = threading.Event()
    job_id = jobs.enqueue(Work(action=_wait_in_sleep(rt, seen, started))).id
    runtime = jobs.start()  # LEASE 30 s: the heartbeat thread would not beat during this test
    wait_event(started, "the handler to start")
    jobs.cancel(job_id)
    assert runtime.heartbeat.beat() == 1
    (event,) = rt.log.wait_finished(job_id=job_id)
    assert event["outcome"] == "lost"
    assert seen == ["lost"]
    assert jobs.get(job_id).state == "cancelled"


def test_the_heartbeat_thread_finds_a_lost_lease_within_a_lease(rt: Runtime) -> None:
    rt.configure(LEASE=1, CLOCK=None)
    seen: list[str] = []
    started = threading.Event()
    job_id = jobs.enqueue(Work(action=_wait_in_sleep(rt, seen, started))).id
    jobs.start()
    wait_event(started, "the handler to start")
    jobs.cancel(job_id)
    rt.log.wait_finished(job_id=job_id, outcome="lost", timeout=3.0)  # beats every LEASE/3
    assert seen == ["lost"]


def test_heartbeats_keep_the_lease_of_a_run_longer_than_the_lease(rt: Runtime) -> None:
    rt.configure(LEASE=1, CLOCK=None)
    # The handler sleeps 2.5 leases; rescue looks every LEASE/2 and would take it if the
    # heartbeats did not extend the lease.
    job_id = jobs.enqueue(e2e_jobs.Block(seconds=2.5)).id
    jobs.start()
    (event,) = rt.log.wait_finished(job_id=job_id)
    assert event["outcome"] == "completed"
    record = jobs.get(job_id)
    assert (record.state, record.attempt, record.errors) == ("completed", 1, ())
    assert rt.log.events(events.RESCUED) == []


# -- timeouts and cancellation -----------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(e2e_jobs.SleepPastTimeout(), id="job.sleep"),
        pytest.param(e2e_jobs.SpinPastTimeout(), id="job.check_cancelled"),
        pytest.param(e2e_jobs.AsyncSleepPastTimeout(), id="async-await"),
        pytest.param(e2e_jobs.AsyncExceptException(), id="async-except-Exception"),
        pytest.param(
            e2e_jobs.QueryPastTimeout(),
            id="django-query",
            marks=pytest.mark.django_db(transaction=True),
        ),
    ],
)
def test_a_timeout_cancels_the_run_at_its_next_wait_and_records_Timeout(
    rt: Runtime, args: Any, tmp_path: Path
) -> None:
    args.marker = str(tmp_path)
    job_id = jobs.enqueue(args).id
    began = monotonic()
    jobs.start()
    (event,) = rt.log.wait_finished(job_id=job_id)
    assert event["outcome"] == "dead"  # attempts=1: the timeout was its last attempt
    assert 0.9 <= event["seconds"] < 5.0  # timeout=1 s
    assert monotonic() - began < WAIT
    record = jobs.get(job_id)
    assert record.state == "dead"
    (error,) = record.errors
    assert error["type"] == "Timeout" and error["attempt"] == 1
    assert (tmp_path / f"{job_id}.1.started").exists()
    assert not (tmp_path / f"{job_id}.1.finished").exists()


def test_a_handler_that_swallows_Canceled_and_returns_is_completed(
    rt: Runtime, tmp_path: Path
) -> None:
    job_id = jobs.enqueue(e2e_jobs.SwallowCancel(marker=str(tmp_path))).id
    jobs.start()
    (event,) = rt.log.wait_finished(job_id=job_id)
    assert event["outcome"] == "completed"
    assert (tmp_path / f"{job_id}.1.swallowed").exists()
    assert jobs.get(job_id).state == "completed"


# -- drain -------------------------------------------------------------------------------------
def test_drain_cancels_a_waiting_handler_at_the_deadline_and_gives_the_attempt_back(
    rt: Runtime,
) -> None:
    seen: list[str] = []
    started = threading.Event()
    job_id = jobs.enqueue(Work(action=_wait_in_sleep(rt, seen, started))).id
    jobs.start()
    wait_event(started, "the handler to start")
    began = monotonic()
    jobs.stop()
    took = monotonic() - began
    assert 0.9 <= took < 1.0 + 3.0  # drain_timeout 1 s, + the 3 s write allowance at most
    record = jobs.get(job_id)
    assert (record.state, record.attempt, record.errors) == ("available", 0, ())
    assert [e["outcome"] for e in rt.log.finished(job_id=job_id)] == ["interrupted"]
    rt.log.wait_for(lambda: seen == ["drain"], "the handler to see Canceled('drain')")


def test_drain_puts_back_a_handler_that_ignores_cancellation_and_fences_it(
    rt: Runtime,
) -> None:
    started = threading.Event()
    release = rt.gate()

    def stubborn(job: Any, args: Any) -> None:
        started.set()
        release.wait(WAIT)  # never reaches a wait the runtime can cancel

    job_id = jobs.enqueue(Work(action=rt.hook(stubborn))).id
    runtime = jobs.start()
    wait_event(started, "the handler to start")
    (run,) = runtime.runs.snapshot()
    began = monotonic()
    jobs.stop()
    took = monotonic() - began
    assert 0.9 <= took < 1.0 + 3.0
    record = jobs.get(job_id)
    assert (record.state, record.attempt) == ("available", 0)
    assert [e["outcome"] for e in rt.log.finished(job_id=job_id)] == ["interrupted"]
    # The drained run is stale: none of its writes may land.
    now = rt.clock()
    for finish in (
        Finish(run=run.ref, state="completed", at=now),
        Finish(run=run.ref, state="retrying", at=now, scheduled_at=now),
        Finish(run=run.ref, state="scheduled", at=now, scheduled_at=now, give_back_attempt=True),
    ):
        assert rt.store.finish([finish]) == [False]
    # When the handler finally returns, the runtime writes nothing for it either.
    release.set()
    for thread in runtime.workers[0]._threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert jobs.get(job_id) == record
    assert [e["outcome"] for e in rt.log.finished(job_id=job_id)] == ["interrupted"]


def test_a_run_that_finishes_during_the_drain_keeps_its_outcome(rt: Runtime) -> None:
    started = threading.Event()
    proceed = rt.gate()

    def finishing(job: Any, args: Any) -> None:
        started.set()
        proceed.wait(WAIT)

    job_id = jobs.enqueue(Work(action=rt.hook(finishing))).id
    runtime = jobs.start()
    wait_event(started, "the handler to start")
    draining = threading.Event()
    worker = runtime.workers[0]
    stop_claiming = worker.stop_claiming

    def spy() -> None:
        stop_claiming()
        draining.set()

    worker.stop_claiming = spy
    stopper = threading.Thread(target=jobs.stop)
    stopper.start()
    wait_event(draining, "the drain to begin")
    proceed.set()
    stopper.join(WAIT)
    assert not stopper.is_alive()
    assert [e["outcome"] for e in rt.log.finished(job_id=job_id)] == ["completed"]
    record = jobs.get(job_id)
    assert (record.state, record.attempt) == ("completed", 1)


def test_each_queue_drains_for_its_own_drain_timeout(rt: Runtime) -> None:
    rt.configure(
        QUEUES={
            "default": {"concurrency": 1, "drain_timeout": 0.2},
            "mail": {"concurrency": 1, "drain_timeout": 1.5},
        }
    )
    cancelled_at: dict[str, float] = {}
    started = {"default": threading.Event(), "mail": threading.Event()}

    def sleeper(job: Any, args: Any) -> None:
        started[job.queue].set()
        try:
            job.sleep(60)
        except Canceled:
            cancelled_at[job.queue] = monotonic()
            raise

    action = rt.hook(sleeper)
    jobs.enqueue(Work(action=action))
    jobs.enqueue(Work(action=action), queue="mail")
    jobs.start()
    for queue, event in started.items():
        wait_event(event, f"the {queue} handler to start")
    began = monotonic()
    jobs.stop()
    took = monotonic() - began
    assert 1.4 <= took < 1.5 + 3.0
    rt.log.wait_for(lambda: len(cancelled_at) == 2, "both handlers to be cancelled")
    assert cancelled_at["default"] - began < 1.0
    assert cancelled_at["mail"] - began >= 1.4
    assert {e["outcome"] for e in rt.log.finished()} == {"interrupted"}
    assert jobs.counts() == {"default": {"available": 1}, "mail": {"available": 1}}


def test_stop_without_drain_puts_running_jobs_back_at_once(rt: Runtime) -> None:
    rt.configure(QUEUES={"default": {"concurrency": 2, "drain_timeout": 30}})
    seen: list[str] = []
    started = threading.Event()
    job_id = jobs.enqueue(Work(action=_wait_in_sleep(rt, seen, started))).id
    jobs.start()
    wait_event(started, "the handler to start")
    began = monotonic()
    jobs.stop(drain=False)
    assert monotonic() - began < 3.0
    assert jobs.get(job_id).state == "available"
