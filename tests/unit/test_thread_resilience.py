"""No exception ends a background thread, however long the store is down: each of the
runtime's threads (a queue's dispatcher, the completer, the heartbeat, the maintenance loop, the
start-up probe, PostgreSQL's LISTEN session and Redis's pub/sub listener) goes through 100,000
failures in a row, then does its work again once the store answers. The waits are injected
(each thread's `pause` only counts), so the outage costs no real time.

And a thread that ends anyway is not silent: one CRITICAL line names it and its error, and the
process's death handler is called (runjobs then drains and exits non-zero; see
tests/e2e/test_thread_death.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from anole_jobs import jobs
from anole_jobs.background import (
    BACKOFF_CAP,
    BackgroundThread,
    StoreHealth,
    backoff_delay,
    report_death,
    set_death_handler,
    start_thread,
)
from anole_jobs.clock import monotonic
from anole_jobs.service import JobService
from anole_jobs.testing import FakeClock
from anole_jobs.worker import completer as completer_module
from anole_jobs.worker.outcomes import Attempt, give_back
from anole_jobs.worker.runner import Runtime, StoreProbe
from tests.conftest import require
from tests.sampleapp.jobs import Work

FAILURES = 100_000
WAIT = 120.0  # seconds a thread may take for its failures and its recovery on a busy machine


# -- the arithmetic ------------------------------------------------------------------------------
@pytest.mark.parametrize("failures", [1_024, 1_025, 1_100, 100_000, 10**6])
def test_the_back_off_stays_finite_and_capped_after_any_number_of_failures(failures) -> None:
    # 2 ** 1024 does not fit a float: the 1,025th failure in a row used to raise here.
    delay = backoff_delay(failures)
    assert BACKOFF_CAP / 2 <= delay <= BACKOFF_CAP


# -- a store that is down until the test says otherwise ------------------------------------------
class Outage:
    """Wraps a store: every method call raises while `down`; counts the calls that answered."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.down = True
        self.service: Any = None
        self.answered: dict[str, int] = {}

    def wrap(self) -> Any:
        outage = self

        class Flaky:
            def __getattr__(self, name: str) -> Any:
                value = getattr(outage.store, name)
                if not callable(value) or name in (
                    "subscribe",
                    "subscribe_finished",
                    "name_sessions",
                    "shared_session",
                ):
                    return value

                def call(*args: Any, **kwargs: Any) -> Any:
                    if outage.down:
                        raise ConnectionError(f"connection refused ({name})")
                    result = value(*args, **kwargs)
                    outage.answered[name] = outage.answered.get(name, 0) + 1
                    return result

                return call

        return Flaky()


def drive(thread: BackgroundThread, outage: Outage, worked: Callable[[], bool]) -> int:
    """Run `thread` through `FAILURES` failed rounds in a row (its waits only counted), then
    end the outage and stop it once `worked()`; returns the most failures it saw in a row."""
    thread.health = StoreHealth()  # its own: the process-wide one is not the test's to touch
    peak = 0
    stopped = threading.Event()

    def pause(seconds: float) -> None:  # injected: no real waiting
        nonlocal peak
        assert 0.0 <= seconds <= BACKOFF_CAP
        peak = max(peak, thread.failures)
        if outage.down and thread.failures >= FAILURES:
            outage.down = False
        elif not outage.down and worked():
            thread.request_stop()
            stopped.set()

    thread.pause = pause  # type: ignore[method-assign]
    thread.start()
    assert thread.join(WAIT), f"{thread.name} neither recovered nor stopped"
    assert stopped.is_set(), f"{thread.name} ended without doing its work again"
    return peak


@pytest.fixture
def auto(settings: Any, recorder: Any, thread_deaths: list[Any]) -> Iterator[Outage]:
    """A runtime's service on the memory store, its store down (the threads are not started)."""
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "auto", "CLOCK": FakeClock()}
    real = jobs.service
    outage = Outage(real.store)
    service = JobService(settings=real.settings, store=outage.wrap(), registry=real.registry)
    outage.service = service
    deaths = len(thread_deaths)
    yield outage
    assert thread_deaths[deaths:] == [], "a background thread died"
    jobs.reset()


def test_a_dispatcher_claims_again_after_100000_failures(auto: Outage) -> None:
    runtime = Runtime(auto.service)
    outage = auto
    outage.down = False
    jobs_id = outage.service.enqueue(Work()).id
    outage.down = True
    pool = runtime.workers[0]
    assert drive(pool.dispatcher, outage, lambda: pool.runs.count() > 0) >= FAILURES
    (held,) = pool.take_unstarted()
    assert held.record.id == jobs_id


def test_the_completer_writes_again_after_100000_failures(auto: Outage, monkeypatch) -> None:
    monkeypatch.setattr(completer_module, "SAVE_PATIENCE", 3600.0)  # keep it through the outage
    outage = auto
    service = outage.service
    runtime = Runtime(service)
    outage.down = False
    job_id = service.enqueue(Work()).id
    now = service.clock()
    (claimed,) = service.store.claim(
        "default",
        kinds=None,
        limit=1,
        now=now,
        lease_until=now + service.settings.lease,
        worker="test",
    )
    outage.down = True
    settled = threading.Event()
    attempt = Attempt(
        claimed=claimed, outcome="interrupted", finish=give_back(claimed.run, now), seconds=0.0
    )
    runtime.completer.submit(attempt, settled.set)
    assert drive(runtime.completer, outage, settled.is_set) >= FAILURES
    assert outage.store.get(job_id).state == "available"  # the write went through


def test_the_heartbeat_extends_leases_again_after_100000_failures(auto: Outage) -> None:
    from anole_jobs.worker.cancel import CancelScope
    from anole_jobs.worker.runs import Run

    outage = auto
    service = outage.service
    runtime = Runtime(service)
    outage.down = False
    service.enqueue(Work())
    now = service.clock()
    (claimed,) = service.store.claim(
        "default",
        kinds=None,
        limit=1,
        now=now,
        lease_until=now + service.settings.lease,
        worker="test",
    )
    outage.down = True
    runtime.runs.add_all([Run(claimed, CancelScope())])
    beat = runtime.heartbeat
    assert drive(beat, outage, lambda: outage.answered.get("heartbeat", 0) > 0) >= FAILURES


def test_the_maintenance_loop_stages_again_after_100000_failures(auto: Outage) -> None:
    outage = auto
    runtime = Runtime(outage.service)
    loop = runtime.maintenance
    assert drive(loop, outage, lambda: outage.answered.get("stage", 0) > 0) >= FAILURES


def test_the_start_up_probe_answers_after_100000_failures(auto: Outage) -> None:
    outage = auto
    probe = StoreProbe(outage.service, monotonic() + 3600)
    peak = drive(probe, outage, probe.answered.is_set)
    assert peak >= FAILURES and probe.answered.is_set()


def test_the_start_up_probe_stops_at_its_deadline_instead_of_spinning(auto: Outage) -> None:
    # It used to retry with zero waits between its deadline and the caller's stop: thousands
    # of failures in a moment, which is how its back-off overflowed in the suite.
    outage = auto
    probe = StoreProbe(outage.service, monotonic() - 1.0)
    probe.start()
    assert probe.join(WAIT)
    assert probe.failures == 0 and not probe.answered.is_set()


# -- the listeners: a connection each, opened again after every failure ---------------------------
def test_the_postgres_listener_listens_again_after_100000_failures(monkeypatch) -> None:
    require("postgres")
    import psycopg
    from django.conf import settings

    from anole_jobs.stores.database import pg_session

    db = settings.DATABASES["pg"]
    params = {"host": db["HOST"], "port": db["PORT"], "user": db["USER"], "dbname": "postgres"}
    monkeypatch.setattr(pg_session, "connect_params", lambda alias: dict(params))
    down = [True]
    real_connect = psycopg.connect

    def connect(*args: Any, **kwargs: Any) -> Any:
        if down[0]:
            raise psycopg.OperationalError("connection refused")
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(psycopg, "connect", connect)
    listener = pg_session.Listener("pg", "anole_resilience_test", lambda payloads: None)
    listener.health = StoreHealth()
    peak = 0

    def pause(seconds: float) -> None:
        nonlocal peak
        peak = max(peak, listener.failures)
        if listener.failures >= FAILURES:
            down[0] = False

    listener.pause = pause  # type: ignore[method-assign]
    listener.start()
    try:
        assert listener.wait_connected(WAIT), "the listener did not connect again"
    finally:
        assert listener.stop(10.0)
    assert peak >= FAILURES


def test_the_redis_listener_subscribes_again_after_100000_failures() -> None:
    require("redis")
    import redis

    from anole_jobs.stores.redis.listener import Listener
    from anole_jobs.stores.wakeups import WakeupHub

    real = redis.Redis(host="127.0.0.1", port=6379)
    down = [True]

    class Client:
        def pubsub(self) -> Any:
            if down[0]:
                raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379")
            return real.pubsub()

    listener = Listener(Client(), "anole-resilience-test", WakeupHub(), sender="test")
    listener.health = StoreHealth()
    peak = 0

    def pause(seconds: float) -> None:
        nonlocal peak
        peak = max(peak, listener.failures)
        if listener.failures >= FAILURES:
            down[0] = False

    listener.pause = pause  # type: ignore[method-assign]
    listener.start()
    try:
        assert listener.subscribed.wait(WAIT), "the listener did not subscribe again"
    finally:
        assert listener.stop(10.0)
        real.close()
    assert peak >= FAILURES


# -- the error path itself fails ------------------------------------------------------------------
class Broken(BackgroundThread):
    """Fails every round, and so does everything it calls on a failure, until `left` is 0."""

    def __init__(self, left: int) -> None:
        super().__init__(name="anole-broken", store_health=StoreHealth())
        self.left = left
        self.worked = threading.Event()

    def run_once(self) -> float:
        if self.left:
            self.left -= 1
            raise ConnectionError("down")
        self.worked.set()
        self.request_stop()
        return 0.0

    def on_failure(self, exc: Exception) -> None:
        raise RuntimeError("the error path fails too")

    def pause(self, seconds: float) -> None:
        if self.left % 2:
            raise RuntimeError("so does the wait")

    def keep_going(self) -> bool:
        if self.left % 3 == 1:
            raise RuntimeError("and the stop check")
        return super().keep_going()


def test_a_failing_error_path_does_not_end_the_thread(monkeypatch) -> None:
    from anole_jobs import background

    # The fallback wait after a failed `pause` is the stop flag's: made instant here.
    monkeypatch.setattr(background, "backoff_delay", lambda failures: 0.0)
    health = StoreHealth()
    monkeypatch.setattr(health, "failed", lambda *a, **k: (_ for _ in ()).throw(OSError("log")))
    thread = Broken(left=3_000)
    thread.health = health
    thread.start()
    assert thread.join(WAIT)
    assert thread.worked.is_set()


# -- a thread that dies anyway ---------------------------------------------------------------------
class Fatal(BaseException):
    """Not an `Exception`: what no loop catches."""


def test_a_thread_that_dies_is_logged_at_critical_and_calls_the_death_handler(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="anole_jobs")
    died: list[tuple[str, BaseException]] = []
    reported = threading.Event()

    def handler(name: str, exc: BaseException) -> None:
        died.append((name, exc))
        reported.set()

    class Dying(BackgroundThread):
        name = "anole-dying"

        def run_once(self) -> float:
            raise Fatal("out of luck")

    previous = set_death_handler(handler)
    try:
        Dying().start()
        assert reported.wait(WAIT)
    finally:
        set_death_handler(previous)
    ((name, exc),) = died
    assert name == "anole-dying" and isinstance(exc, Fatal)
    (line,) = [r for r in caplog.records if r.levelno == logging.CRITICAL]
    assert line.getMessage().startswith("background thread anole-dying died: Fatal: out of luck")
    assert line.exc_info is not None


def test_a_plain_runtime_thread_that_dies_is_reported_too(caplog) -> None:
    died: list[str] = []
    reported = threading.Event()
    previous = set_death_handler(lambda name, exc: (died.append(name), reported.set()))
    try:

        def body() -> None:
            raise Fatal("gone")

        start_thread(body, name="anole-default-3")
        assert reported.wait(WAIT)
    finally:
        set_death_handler(previous)
    assert died == ["anole-default-3"]


def test_a_thread_ended_by_an_error_while_stopping_is_not_a_death() -> None:
    died: list[str] = []
    previous = set_death_handler(lambda name, exc: died.append(name))

    class EndsOnStop(BackgroundThread):
        name = "anole-ends-on-stop"

        def run_once(self) -> float:
            return 0.01

        def pause(self, seconds: float) -> None:
            if self.stopping:
                raise Fatal("interrupted by the stop")

    try:
        thread = EndsOnStop()
        thread.start()
        assert thread.stop(WAIT)
    finally:
        set_death_handler(previous)
    assert died == []


def test_a_failing_death_handler_is_logged(caplog) -> None:
    def handler(name: str, exc: BaseException) -> None:
        raise OSError("cannot signal")

    previous = set_death_handler(handler)
    try:
        report_death("anole-x", Fatal("gone"))
    finally:
        set_death_handler(previous)
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "the death handler failed for thread anole-x" in messages
