"""Cancels of running async jobs, found at once instead of at the next heartbeat.

A job cancelled (`jobs.cancel`, the admin), deleted or rescued elsewhere while one of this
process's `async def` handlers runs it no longer holds that run's lease; the heartbeat finds
that out about every LEASE/3 and cancels the run. For an async handler the cancel itself is
immediate (its task is cancelled: its pending `await` raises `asyncio.CancelledError`), so
the watch looks sooner:

- stores that tell every process when a job ends (PostgreSQL with NOTIFY, Redis, and the
  memory store, whose only process is this one) wake it with the job's id: it asks the store
  about that run alone (`heartbeat` of one run: held or not) and cancels it if it is gone;
- the others (SQLite, PostgreSQL with NOTIFY off) are asked every `POLL_SECONDS` about the
  async runs in flight, one store call for all of them.

With push the watch still asks about all its runs when it starts and every
`PUSH_POLL_SECONDS` after: a wake-up sent before its subscription (or its store's listener)
was in place, or lost while a listener reconnects, is never waited for until the heartbeat.

Either way a cancel lands within about a second of `jobs.cancel` returning. The run's
outcome is `lost`, as when the heartbeat finds it: the store already holds what ended it.
The watch is a thread of its own, started with the first async run and ended after
`IDLE_SECONDS` without any.
"""

from __future__ import annotations

import logging
import threading

from anole_jobs.background import close_connections, sharing_store_sessions
from anole_jobs.clock import monotonic
from anole_jobs.service import JobService
from anole_jobs.stores.wakeups import EVERY_NAME
from anole_jobs.worker.runs import Run

logger = logging.getLogger("anole_jobs.worker")

#: Seconds between two looks at the store without push (SQLite; PostgreSQL with NOTIFY off).
POLL_SECONDS = 0.5
#: With push, seconds between two looks all the same (a wake-up missed or lost).
PUSH_POLL_SECONDS = 1.0
#: Seconds without async runs after which the watch's thread ends (the next run starts one).
IDLE_SECONDS = 5.0


def pushes_ends(service: JobService) -> bool:
    """Whether every process learns at once that a job ended (no polling needed)."""
    store = service.store
    inner = getattr(store, "inner", store)
    return bool(getattr(inner, "supports_cross_process_wakeups", False)) or inner.name == "memory"


class CancelWatch:
    """The async runs of one pool in flight, watched for cancels made elsewhere."""

    def __init__(self, service: JobService, name: str) -> None:
        self.service = service
        self.name = name
        self.push = pushes_ends(service)
        self._runs: dict[int, Run] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def add(self, run: Run) -> None:
        with self._lock:
            self._runs[run.claimed.record.id] = run
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(
                    target=self._watch, name=f"anole-{self.name}-cancels", daemon=True
                )
                self._thread.start()

    def discard(self, run: Run) -> None:
        with self._lock:
            if self._runs.get(run.claimed.record.id) is run:
                del self._runs[run.claimed.record.id]

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            thread = self._thread
        if thread is not None:
            self.service.store.finished_wakeups.wake(())  # its wait returns at once

    # -- the thread ------------------------------------------------------------------------
    def _watch(self) -> None:
        # The runtime's own store calls share the process's sessions (docs/deployment.md):
        # the watch holds none between its looks.
        with sharing_store_sessions():
            self._watch_shared()

    def _watch_shared(self) -> None:
        store = self.service.store
        if self.push:
            store.subscribe_finished(()).close()  # starts the store's listener, if it has one
        subscription = store.finished_wakeups.subscribe_all()
        idle_since: float | None = None
        every = PUSH_POLL_SECONDS if self.push else POLL_SECONDS
        next_poll = monotonic()  # the first round asks about every run: nothing was heard yet
        try:
            while True:
                woken = subscription.wait(POLL_SECONDS)
                with self._lock:
                    if self._stopping:
                        break
                    now = monotonic()
                    if not self._runs:
                        idle_since = idle_since or now
                        if now - idle_since >= IDLE_SECONDS:
                            self._thread = None
                            break
                        continue
                    idle_since = None
                    if EVERY_NAME in woken or now >= next_poll:
                        targets = list(self._runs.values())
                        next_poll = now + every
                    else:
                        targets = [
                            run
                            for job_id in woken
                            if (run := self._runs.get(int(job_id) if job_id.isdigit() else -1))
                        ]
                if targets:
                    self._check(targets)
        except Exception:  # noqa: BLE001 - the heartbeat still finds these cancels
            logger.exception("queue %s: the watch for cancels of async jobs failed", self.name)
            with self._lock:
                self._thread = None
        finally:
            subscription.close()
            close_connections()

    def _check(self, runs: list[Run]) -> None:
        """Cancel the runs whose lease the store no longer holds (one store call)."""
        runs = [run for run in runs if not run.ended]
        if not runs:
            return
        lease_until = self.service.clock() + self.service.settings.lease
        try:
            held = self.service.store.heartbeat({run.ref for run in runs}, lease_until=lease_until)
        except Exception as exc:  # noqa: BLE001 - the heartbeat's own round reports outages
            logger.debug("queue %s: could not look for cancels: %s", self.name, exc)
            return
        for run in runs:
            if run.ref not in held and not run.ended:
                logger.info(
                    "job %s was cancelled, deleted or rescued elsewhere; cancelling its task",
                    run.claimed.record.id,
                    extra={"job_id": run.claimed.record.id, "kind": run.claimed.record.kind},
                )
                run.scope.cancel("lost")
