"""One `runjobs` worker process from its start to its exit status: the runtime it starts, the
signals it answers, its supervisor's requests (when it is one of the workers of `runjobs
--processes N`: `anole_jobs.worker.supervisor`), and recycling past `--max-jobs-per-process`
or `--max-memory-per-process` (`anole_jobs.worker.recycle`). The command
(`management/commands/runjobs.py`) parses its arguments and hands over here.

Signals: the first SIGTERM/SIGINT drains; a second, during the drain, gives the running jobs
back (fenced, their attempt not counted) and exits 1; a third exits at once. A worker past a
recycling limit claims nothing more, lets its running jobs finish, drains and exits with
`RECYCLE_EXIT`, for its supervisor (or service manager) to start it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from anole_jobs import events, metrics
from anole_jobs.background import THREAD_DIED_EXIT, set_death_handler, start_thread
from anole_jobs.worker import gctune, recycle
from anole_jobs.worker.supervisor import DRAIN, GIVE_BACK, RECYCLE_EXIT

if TYPE_CHECKING:
    from anole_jobs.worker.runner import Runtime

# The command's logger: a worker's lines read as runjobs's own.
logger = logging.getLogger("anole_jobs")

#: Seconds a second signal's give-back may take before runjobs exits anyway.
GIVE_BACK_TIMEOUT = 3.0
#: Seconds between checks for a signal while a recycling worker waits for its running jobs.
RECYCLE_RECHECK = 0.5


class WorkerProcess:
    """`start` installs the signal handlers (and the supervisor's pipe) and starts the
    runtime; `run` then serves until a signal, the supervisor or a recycling limit ends it,
    drains, and returns the exit status (0, `RECYCLE_EXIT`, or `THREAD_DIED_EXIT` when a
    background thread died)."""

    def __init__(
        self,
        limits: recycle.RecycleLimits,
        *,
        supervised: int | None,
        gc_threshold: int = gctune.DEFAULT_THRESHOLD,
    ) -> None:
        self.limits = limits
        self.supervised = supervised
        self.gc_threshold = gc_threshold
        self.signals = Signals()
        self.runtime: Runtime | None = None
        self.gc_tuned: gctune.Tuned | None = None

    def start(self, start_runtime: Callable[[], Runtime]) -> None:
        signals = self.signals
        signals.install()
        # A background thread that dies wakes this thread, which drains and exits non-zero
        # (instead of the process living on with a part of its workers gone).
        set_death_handler(signals.thread_died)
        if self.supervised is not None:
            listen_to_supervisor(signals)
        self.runtime = signals.runtime = start_runtime()
        # Once the runtime is up: what start-up made is frozen out of the collector's walks.
        self.gc_tuned = gctune.tune(self.gc_threshold)
        # An operator's "stop" (the workers page, the JSON route, the CLI) drains as a first
        # SIGTERM does.
        self.runtime.control.on_stop = signals.request_drain

    def run(self, bus: events.EventBus, *, forget: Callable[[], None]) -> int:
        """Serve until asked to stop, drain, and return the exit status. `forget` lets the
        facade drop the runtime once it stopped."""
        runtime, signals = self.runtime, self.signals
        assert runtime is not None, "start() first"
        unsubscribe = None
        if self.limits.any:
            unsubscribe = recycle.RecycleWatch(self.limits, signals.recycle).subscribe(bus)
        logger.info(
            "runjobs running %d queue(s); send SIGTERM or SIGINT to drain", len(runtime.workers)
        )
        signals.wait()
        recycled = signals.recycling is not None and not signals.received and signals.died is None
        if recycled:
            given_back = runtime.stop_claiming()
            logger.info(
                "runjobs: recycling after %s: claiming nothing more (%d job(s) claimed but not "
                "started given back); waiting for %d running job(s) to finish",
                signals.recycling,
                given_back,
                runtime.runs.count(),
            )
            recycle.wait_idle(runtime.runs, lambda: signals.received, RECYCLE_RECHECK)
            recycled = not signals.received
        if signals.died is not None and not signals.received:
            reason = f"runjobs: background thread {signals.died} died"
        elif recycled:
            reason = "runjobs: recycling"
        else:
            reason = f"runjobs: {signals.first} received"
        runtime.stop(
            drain=True,
            reason=reason,
            hint="a second SIGTERM or SIGINT gives them back now and exits",
        )
        signals.drained()  # a second signal's give-back, if one began, ends the process
        if unsubscribe is not None:
            unsubscribe()
        forget()  # the runtime has stopped: this only forgets it
        metrics.process_exited()
        gctune.undo(self.gc_tuned)  # the process may live on (tests run runjobs in-process)
        self.gc_tuned = None
        if signals.died is not None:
            logger.critical(
                "runjobs: stopped after background thread %s died; exiting with status %d so "
                "that it is started again",
                signals.died,
                THREAD_DIED_EXIT,
            )
            return THREAD_DIED_EXIT
        if recycled:
            logger.info(
                "runjobs: stopped; exiting with status %d so that it is replaced", RECYCLE_EXIT
            )
            return RECYCLE_EXIT
        logger.info("runjobs: stopped")
        return 0


def listen_to_supervisor(signals: Signals) -> None:
    """A supervised worker reads its supervisor's requests from stdin (see
    `anole_jobs.worker.supervisor`): ``drain NAME``, ``give-back``; end-of-file means the
    supervisor is gone, and the worker drains."""

    def lines() -> Any:
        # os.read, not sys.stdin: a daemon thread blocked inside a buffered reader's lock
        # makes the interpreter abort at exit.
        pending = b""
        while True:
            try:
                chunk = os.read(0, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                return
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                yield raw.decode(errors="replace").strip()

    def listen() -> None:
        for line in lines():
            if line.startswith(DRAIN):
                name = line[len(DRAIN) :].strip() or "SIGTERM"
                signals.request_drain(f"{name} (from the supervisor)")
            elif line == GIVE_BACK:
                signals.request_drain("a give-back request from the supervisor")
                signals.escalate(from_signal=False)
        signals.request_drain("end of input (the supervisor is gone)")

    start_thread(listen, name="runjobs-supervisor-pipe")


class Signals:
    """SIGTERM/SIGINT: the first drains; a second, during the drain, gives the running jobs
    back (fenced, their attempt not counted) and exits 1; a third exits at once.

    The handler itself only sets flags and starts a thread: the give-back makes store calls,
    which must not run inside a signal handler that may have interrupted one."""

    def __init__(self) -> None:
        self.received = False
        self.first = "signal"
        self.runtime: Any = None
        self._aborting: threading.Thread | None = None
        self._drained = False
        #: Signals received (a supervisor's requests by pipe are not counted: they repeat
        #: what a signal to the worker itself may already have asked).
        self.count = 0
        #: Why this worker recycles (set once, by `recycle`), or None.
        self.recycling: str | None = None
        #: The name of the first background thread that died, or None.
        self.died: str | None = None
        # Taken without blocking by whoever starts the give-back (a signal handler must never
        # block): a second request, from the supervisor's pipe, sees it taken and stops there.
        self._abort_gate = threading.Lock()
        self._abort_assigned = threading.Event()
        # The handler wakes the main thread through a pipe, not a threading.Event: an Event's
        # set() takes a lock that the main thread may hold at the very moment the handler
        # interrupts it (inside Event.wait), and then the process never drains. os.write and
        # os.read take no Python lock.
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)  # as `signal.set_wakeup_fd` requires

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        # The interpreter's own C-level handler writes to the pipe too. Without it, a signal
        # that lands just before `wait` blocks in os.read (after the last point where Python
        # runs its handlers) leaves the read blocked with the handler not yet run: the
        # process never drains (seen once in a few thousand idle starts and stops).
        signal.set_wakeup_fd(self._wake_write, warn_on_full_buffer=False)

    def wait(self) -> None:
        """Block the main thread until the first SIGTERM or SIGINT."""
        while not self.received and self.recycling is None and self.died is None:
            os.read(self._wake_read, 1)  # retried after each signal handler (PEP 475)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # full: the main thread wakes anyway
            os.write(self._wake_write, b"!")

    def thread_died(self, name: str, exc: BaseException) -> None:
        """The death handler (called from the dying thread): wake the main thread, which
        drains and exits with `THREAD_DIED_EXIT`."""
        if self.died is None:
            self.died = name
            self._wake()

    def recycle(self, reason: str) -> None:
        """Past a recycling limit (called from a worker thread): wake the main thread."""
        self.recycling = reason
        self._wake()

    def request_drain(self, why: str) -> None:
        """Drain (idempotent): a first signal, or the supervisor's request."""
        if self.received:
            return
        self.first = why
        self.received = True
        self._wake()

    def _on_signal(self, signum: int, frame: object) -> None:
        self.count += 1
        if self.count == 1:
            self.request_drain(signal.Signals(signum).name)
            return
        self.escalate(from_signal=True)

    def escalate(self, *, from_signal: bool) -> None:
        """Give the running jobs back now and exit 1 (a second signal); a third signal exits
        at once."""
        if self._drained:
            return  # the drain is over: the process is about to exit anyway
        if self.runtime is None or not self._abort_gate.acquire(blocking=False):
            if not from_signal and self.runtime is not None:
                return  # the give-back already runs
            sys.stderr.flush()
            os._exit(1)
        self._aborting = threading.Thread(
            target=self._give_back_and_exit, name="runjobs-abort", daemon=True
        )
        self._aborting.start()
        if not from_signal:
            self._abort_assigned.set()  # never from a signal handler (see `drained`)

    def drained(self) -> None:
        """The drain returned. If a second signal's give-back runs, wait for it to end the
        process (with status 1): the drain may have ended only because the give-back cancelled
        the handlers, and exiting now would cut its write short."""
        # Signal handlers run in this (the main) thread, between its statements: once this
        # flag is set, no new give-back can start.
        self._drained = True
        if self._abort_gate.acquire(blocking=False):
            return  # no give-back began, and none can now
        if self._aborting is None:
            # The supervisor's give-back request took the gate a moment ago, in its own
            # thread; a signal handler would have assigned `_aborting` before returning.
            self._abort_assigned.wait()
        assert self._aborting is not None
        self._aborting.join()

    def _give_back_and_exit(self) -> None:
        name = "runjobs-give-back"
        given: list[int] = []
        worker = threading.Thread(
            target=lambda: given.append(self.runtime.give_back_running(timeout=GIVE_BACK_TIMEOUT)),
            name=name,
            daemon=True,
        )
        worker.start()
        worker.join(GIVE_BACK_TIMEOUT + 1.0)
        if given:
            logger.warning(
                "runjobs: second signal: gave back %d running job(s) (they run again at once, "
                "the attempt not counted); exiting now",
                given[0],
            )
        else:
            logger.warning(
                "runjobs: second signal: could not give the running jobs back in time; they "
                "run again after their lease; exiting now"
            )
        sys.stderr.flush()
        os._exit(1)
