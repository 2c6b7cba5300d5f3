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

Leaf module: imports only `clock` (and Django's connection handling).
"""

from __future__ import annotations

import logging
import random
import threading

from anole_jobs.clock import monotonic

logger = logging.getLogger("anole_jobs.store")

BACKOFF_BASE = 0.25  # seconds before the first retry
BACKOFF_CAP = 10.0  # the longest a thread waits between two tries while the store is down


class Idle(float):
    """What `run_once` returns to wait when the round made no store call: it then says
    nothing about the store's health (a heartbeat with no runs to extend)."""


def backoff_delay(failures: int, *, base: float = BACKOFF_BASE, cap: float = BACKOFF_CAP) -> float:
    """Seconds to wait after the `failures`-th failure in a row: doubling, capped, and
    jittered down by up to half so threads that failed together do not retry together."""
    ceiling = min(cap, base * 2 ** max(failures - 1, 0))
    return ceiling * random.uniform(0.5, 1.0)  # noqa: S311 - jitter, not security


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

    #: The thread's name, also what `health` names as the place that failed.
    name = "anole-background"

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
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

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
        try:
            while self.keep_going():
                self.pause(self.round())
        finally:
            try:
                self.on_exit()
            except Exception:  # noqa: BLE001 - the thread is ending either way
                logger.debug("%s: clean-up failed", self.name, exc_info=True)
            close_connections()

    def round(self) -> float:
        """Run one round with the failure handling; the seconds to wait before the next."""
        try:
            wait = self.run_once()
        except Exception as exc:  # noqa: BLE001 - a background thread outlives store outages
            self.failures += 1
            close_broken_connections()
            delay = backoff_delay(self.failures)
            self.on_failure(exc)
            self.health.failed(exc, where=self.name, failures=self.failures, retry_in=delay)
            return delay
        if isinstance(wait, Idle):
            return float(wait)
        if self.failures:
            self.failures = 0
            self.health.answered()
        return wait

    def on_failure(self, exc: Exception) -> None:
        """Called with a failed round's error before the back-off (override to requeue)."""
