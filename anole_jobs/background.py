"""One base for the runtime's background threads, and how they ride out a store outage.

Every long-lived thread of the runtime (queue dispatchers, the completer, the heartbeat, the
maintenance loop) and of the stores (PostgreSQL's LISTEN session, Redis's pub/sub listener)
shares the same life: start, loop, fail, back off, recover, stop, close its connections.
`BackgroundThread` owns that life once (River's `baseservice` plays this part there); a
subclass says only what one round does (`run_once`) and how it waits (`pause`).

While the store does not answer, each thread backs off on its own, exponentially with jitter
up to `BACKOFF_CAP`, so an outage costs a few calls a minute instead of a storm. What a person
reads is owned by `StoreHealth`, one per process: one WARNING when the store stops answering
(a thread failed twice in a row, so one stale connection is not an outage) and one when it
answers again, however many threads noticed; tracebacks only at DEBUG.

No exception ends a background thread: a failed round backs off and tries again, however
long the outage (the back-off's arithmetic is bounded, and its error path is guarded too).
A thread that ends anyway (something that is not an `Exception`, or a bug in this module) is
reported by `report_death`: one CRITICAL line naming the thread and the error, then the
process's death handler, which by default asks the process to stop (SIGTERM) so that its
supervisor or platform starts a new one; `runjobs` installs its own, which drains and exits
with `THREAD_DIED_EXIT`. A worker never lives on as a process whose threads are gone.

Leaf module: imports only `clock` (and Django's connection handling).
"""

from __future__ import annotations

import logging
import os
import random
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from anole_jobs.clock import monotonic

logger = logging.getLogger("anole_jobs.store")
runtime_logger = logging.getLogger("anole_jobs.runtime")

BACKOFF_BASE = 0.25  # seconds before the first retry
BACKOFF_CAP = 10.0  # the longest a thread waits between two tries while the store is down
#: The largest power of two a back-off multiplies its base by: 2**64 times any base in use is
#: far past any cap, and a float power that large stays finite (2**1024 does not).
BACKOFF_MAX_EXPONENT = 64
#: The exit status of a `runjobs` whose background thread died (EX_SOFTWARE, sysexits.h).
THREAD_DIED_EXIT = 70


class Idle(float):
    """What `run_once` returns to wait when the round made no store call: it then says
    nothing about the store's health (a heartbeat with no runs to extend)."""


def backoff_delay(failures: int, *, base: float = BACKOFF_BASE, cap: float = BACKOFF_CAP) -> float:
    """Seconds to wait after the `failures`-th failure in a row: doubling, capped, and
    jittered down by up to half so threads that failed together do not retry together."""
    exponent = min(max(failures - 1, 0), BACKOFF_MAX_EXPONENT)
    ceiling = min(cap, base * 2.0**exponent)
    return ceiling * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not security


# -- the runtime's threads share the store's sessions ----------------------------------------------
class _Sharing(threading.local):
    #: False until a thread's `sharing_store_sessions` sets it (a class default: reading it
    #: raises and catches no AttributeError, on every store call of every other thread).
    on = False


_sharing = _Sharing()


def shares_store_sessions() -> bool:
    """Whether this thread's store calls borrow one of the store's shared sessions (a
    runtime thread: dispatchers, the completer, the heartbeat, maintenance, the drain) rather
    than the thread's own Django connection (a handler's thread, a request's)."""
    return _sharing.on


@contextmanager
def sharing_store_sessions() -> Iterator[None]:
    """Within this block, this thread's store calls borrow the store's shared sessions (a
    database store keeps a small pool per process, see docs/deployment.md); each call holds
    one only while it runs. Nested blocks are fine."""
    before = shares_store_sessions()
    _sharing.on = True
    try:
        yield
    finally:
        _sharing.on = before


# -- a thread that died ----------------------------------------------------------------------------
#: What the process does once a background thread died: `(thread name, error) -> None`.
DeathHandler = Callable[[str, BaseException], None]


def stop_the_process(name: str, exc: BaseException) -> None:
    """The default death handler: SIGTERM to this process, which then stops as it would
    for its service manager (a web server drains and is restarted; `runjobs` installs a
    handler of its own)."""
    os.kill(os.getpid(), signal.SIGTERM)


_death_handler: DeathHandler = stop_the_process
_death_lock = threading.Lock()


def set_death_handler(handler: DeathHandler) -> DeathHandler:
    """Install what the process does once a background thread died; returns the previous."""
    global _death_handler
    with _death_lock:
        previous, _death_handler = _death_handler, handler
    return previous


def report_death(name: str, exc: BaseException) -> None:
    """A background thread ended by `exc`: say so at CRITICAL, then call the death handler."""
    runtime_logger.critical(
        "background thread %s died: %s; this worker can no longer do its work, so the process "
        "stops to be started again",
        name,
        describe_error(exc),
        exc_info=exc,
        extra={"thread_died": name},
    )
    with _death_lock:
        handler = _death_handler
    try:
        handler(name, exc)
    except Exception:  # noqa: BLE001 - the CRITICAL line above has told the operator
        runtime_logger.exception("the death handler failed for thread %s", name)


def start_thread(
    target: Callable[..., Any], *, name: str, args: tuple[Any, ...] = ()
) -> threading.Thread:
    """Start a daemon thread of the runtime; if `target` ends by an exception (any
    `BaseException`), `report_death` hears of it. Threads whose end is the end of their
    work return normally."""

    def watched() -> None:
        try:
            target(*args)
        except BaseException as exc:  # noqa: BLE001 - reported, never silent
            report_death(name, exc)

    thread = threading.Thread(target=watched, name=name, daemon=True)
    thread.start()
    return thread


def describe_error(exc: BaseException) -> str:
    """The error in one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    first = text[0].strip() if text else ""
    name = type(exc).__name__
    return f"{name}: {first[:300]}" if first else name


class StoreHealth:
    """Whether the store answers, as this process last saw it; logs only the changes."""

    def __init__(self, log: logging.Logger = logger) -> None:
        self._log = log
        self._lock = threading.Lock()
        self._down_since: float | None = None

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(
        self, exc: BaseException, *, where: str, failures: int, retry_in: float | None = None
    ) -> None:
        """A store call of `where` failed, its `failures`-th failure in a row.

        The outage is announced (one WARNING) at the second failure in a row of any thread:
        a first failure is often a connection that went stale while idle, and the retry on
        a fresh connection succeeds; a second one, after reconnecting, means the store is down.
        """
        announce = False
        if failures >= 2:
            with self._lock:
                if self._down_since is None:
                    self._down_since = monotonic()
                    announce = True
        if announce:
            retry = f"retrying in {retry_in:.1f} s" if retry_in is not None else "retrying"
            self._log.warning(
                "store unreachable: %s (%s); %s, backing off up to %.0f s; work waits meanwhile",
                describe_error(exc),
                where,
                retry,
                BACKOFF_CAP,
                extra={"store_state": "unreachable"},
            )
        self._log.debug("%s: store call failed (%d in a row)", where, failures, exc_info=exc)

    def answered(self) -> None:
        """A store call succeeded: the end of an outage is a WARNING too (it pairs the first)."""
        if self._down_since is None:  # the common case, without the lock
            return
        with self._lock:
            since, self._down_since = self._down_since, None
        if since is not None:
            self._log.warning(
                "store reachable again after %.0f s",
                monotonic() - since,
                extra={"store_state": "reachable"},
            )


#: The process-wide view every thread reports to.
health = StoreHealth()


def close_broken_connections() -> None:
    """After a store error, drop this thread's broken Django connections so the next call
    reconnects (Django does this per request; a worker thread has no requests)."""
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()


def close_connections() -> None:
    """Close this thread's Django connections (a thread that ends must not leak them)."""
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        connection.close()


class BackgroundThread:
    """A daemon thread that calls `run_once` until stopped, backing off while it fails.

    `run_once` returns how long to wait before the next round (`pause`), as an `Idle` when the
    round touched no store (then it says nothing about the store's health). An exception is a
    failed round: broken connections are closed, `health` hears of it, and the thread waits
    `backoff_delay(failures)` before it tries again.
    """

    #: The thread's name, also what `health` names as the place that failed (unless `label`).
    name = "anole-background"
    label: str | None = None

    def __init__(self, *, name: str | None = None, store_health: StoreHealth | None = None) -> None:
        if name is not None:
            self.name = name
        self.health = store_health or health
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.failures = 0

    # -- what a subclass says ------------------------------------------------------------------
    def run_once(self) -> float:
        """One round; returns the seconds to wait before the next one."""
        raise NotImplementedError

    def pause(self, seconds: float) -> None:
        """Wait up to `seconds`; ends early when stopping (override to wait on more)."""
        self._stopping.wait(max(seconds, 0.0))

    def keep_going(self) -> bool:
        """Whether to run another round (override to finish work after a stop)."""
        return not self._stopping.is_set()

    def on_exit(self) -> None:
        """Called in the thread once the loop ends (resign, flush ...)."""

    def wake(self) -> None:
        """Interrupt a `pause` (override when `pause` waits on something else)."""

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def start(self) -> None:
        self._thread = start_thread(self._main, name=self.name)

    def request_stop(self) -> None:
        self._stopping.set()
        self.wake()

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` for the thread to end; True if it did."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(max(timeout, 0.0))
        return not thread.is_alive()

    def stop(self, timeout: float = 5.0) -> bool:
        self.request_stop()
        return self.join(timeout)

    def _main(self) -> None:
        """The thread's life: rounds until stopped. Nothing that is an `Exception` ends it,
        wherever it is raised (a round, its error path, the wait, the stop check); anything
        else ends it, and `start_thread` reports that as a death unless it was stopping."""
        # Its store calls borrow the store's shared sessions, its clean-up's too.
        with sharing_store_sessions():
            try:
                while self._keep_going():
                    self._pause(self.round())
            except BaseException:
                if self.stopping:
                    logger.debug("%s: ended by an error while stopping", self.name, exc_info=True)
                    return
                raise
            finally:
                self._clean_up()

    def round(self) -> float:
        """Run one round with the failure handling; the seconds to wait before the next."""
        try:
            wait = self.run_once()
        except Exception as exc:  # noqa: BLE001 - a background thread outlives store outages
            return self._failed(exc)
        try:
            if not isinstance(wait, Idle):
                self.recovered()
            return max(float(wait), 0.0)
        except Exception as exc:  # noqa: BLE001 - a bad wait or a failing health report
            return self._failed(exc)

    def _failed(self, exc: Exception) -> float:
        """A failed round: close broken connections, let the subclass and `health` hear of
        it, and return the back-off. Each of those is guarded: a failure in the error path
        is logged and the thread backs off all the same."""
        self.failures += 1
        delay = backoff_delay(self.failures)
        for step in (
            close_broken_connections,
            lambda: self.on_failure(exc),
            lambda: self.health.failed(
                exc, where=self.label or self.name, failures=self.failures, retry_in=delay
            ),
        ):
            try:
                step()
            except Exception:  # noqa: BLE001 - the back-off below still happens
                logger.debug("%s: error while handling a failed round", self.name, exc_info=True)
        return delay

    def _keep_going(self) -> bool:
        try:
            return self.keep_going()
        except Exception:  # noqa: BLE001 - fall back to the plain stop flag
            logger.debug("%s: keep_going failed", self.name, exc_info=True)
            return not self.stopping

    def _pause(self, seconds: float) -> None:
        try:
            self.pause(seconds)
        except Exception:  # noqa: BLE001 - wait on the stop flag instead, backing off
            self.failures += 1
            logger.debug("%s: its wait failed", self.name, exc_info=True)
            self._stopping.wait(max(seconds, backoff_delay(self.failures)))

    def _clean_up(self) -> None:
        try:
            self.on_exit()
        except Exception:  # noqa: BLE001 - the thread is ending either way
            logger.debug("%s: clean-up failed", self.name, exc_info=True)
        try:
            close_connections()
        except Exception:  # noqa: BLE001 - the thread is ending either way
            logger.debug("%s: closing its connections failed", self.name, exc_info=True)

    def recovered(self) -> None:
        """A store call succeeded: the back-off starts over and `health` hears of it. The base
        calls it after each successful round; a thread whose round lasts as long as its
        connection (a listener) calls it once connected."""
        if self.failures:
            self.failures = 0
            self.health.answered()

    def on_failure(self, exc: Exception) -> None:
        """Called with a failed round's error before the back-off (override to requeue)."""
