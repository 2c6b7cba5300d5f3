"""Async kinds of the async runtime's tests (unit, contract and e2e).

`BOARD` is how in-process tests see what a handler did and when, without sleeping: a handler
notes a name (with the `monotonic` time) and a test waits for it. In a `runjobs` process the
same handlers return what the e2e tests read (the loop they ran on, the process's threads)
or touch marker files (`e2e_jobs.touch`), with the wall-clock time in the file.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anole_jobs import Job, jobs, kind

from . import e2e_jobs

#: A value each job sets in its own context: another job never sees it.
OWN = contextvars.ContextVar("async_jobs_own", default=None)


class Board:
    """Names handlers noted, with when (monotonic); waited for by tests."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.notes: dict[str, Any] = {}
        self.running = 0
        self.most = 0

    def clear(self) -> None:
        with self.cond:
            self.notes.clear()
            self.running = self.most = 0

    def note(self, name: str, value: Any = None) -> None:
        with self.cond:
            self.notes[name] = (time.monotonic(), value)
            self.cond.notify_all()

    def wait(self, name: str, timeout: float = 10.0) -> tuple[float, Any]:
        with self.cond:
            assert self.cond.wait_for(lambda: name in self.notes, timeout), (
                f"timed out after {timeout} s waiting for {name!r}; saw {sorted(self.notes)}"
            )
            return self.notes[name]  # type: ignore[no-any-return]

    def enter(self) -> None:
        with self.cond:
            self.running += 1
            self.most = max(self.most, self.running)
            self.cond.notify_all()

    def leave(self) -> None:
        with self.cond:
            self.running -= 1
            self.cond.notify_all()


BOARD = Board()
#: Set by a test to let `AsyncHold` handlers return (an asyncio-free gate: any thread sets it).
RELEASE = threading.Event()
#: What `AsyncShared` handlers keep between jobs (built on the loop by the first one).
SHARED: dict[str, Any] = {}


@kind("asyncrt.nap", attempts=3)
@dataclass
class AsyncNap:
    """Awaits `asyncio.sleep(seconds)`; returns the loop it ran on, the process and its
    threads at that moment."""

    seconds: float = 0.1
    fail: bool = False
    #: A directory: each job writes what it returns (and when it ran) to ``<id>.nap`` there.
    marker: str = ""


@jobs.handler(AsyncNap)
async def async_nap(job: Job, args: AsyncNap) -> dict[str, Any]:
    BOARD.enter()
    began = time.time()
    try:
        await asyncio.sleep(args.seconds)
    finally:
        BOARD.leave()
    if args.fail:
        raise ValueError("failed on purpose")
    seen = {
        "loop": id(asyncio.get_running_loop()),
        "pid": os.getpid(),
        "threads": threading.active_count(),
    }
    if args.marker:
        ran = {**seen, "began": began, "ended": time.time()}
        Path(args.marker, f"{job.id}.nap").write_text(json.dumps(ran))
    return seen


@kind("asyncrt.hold", attempts=1)
@dataclass
class AsyncHold:
    """Notes ``<name>.started`` (and logs `say` at INFO, if given), waits for `RELEASE`
    (checked between short awaits), notes ``<name>.canceled`` with the `CancelledError`'s
    type if its task is cancelled (and logs `say_on_cancel`, if given), and lets the cancel
    go up."""

    name: str = ""
    marker: str = ""
    seconds: float = 30.0
    say: str = ""
    say_on_cancel: str = ""


@jobs.handler(AsyncHold)
async def async_hold(job: Job, args: AsyncHold) -> str:
    name = args.name or str(job.id)
    BOARD.enter()
    BOARD.note(f"{name}.started")
    if args.say:
        logging.getLogger("tests.asyncrt").info(args.say)
    _touch(args.marker, job, "started")
    try:
        end = time.monotonic() + args.seconds
        while not RELEASE.is_set() and time.monotonic() < end:
            await asyncio.sleep(0.01)
    except asyncio.CancelledError as exc:
        if args.say_on_cancel:
            logging.getLogger("tests.asyncrt").info(args.say_on_cancel)
        BOARD.note(f"{name}.canceled", type(exc).__name__)
        _touch(args.marker, job, "canceled")
        raise
    finally:
        BOARD.leave()
    return name


@kind("asyncrt.hold_timeout", attempts=1, timeout=0.3)
@dataclass
class AsyncHoldTimeout(AsyncHold):
    """`AsyncHold` whose kind times out after 0.3 s."""


@jobs.handler(AsyncHoldTimeout)
async def async_hold_timeout(job: Job, args: AsyncHoldTimeout) -> str:
    return await async_hold(job, args)


@kind("asyncrt.shared", attempts=1)
@dataclass
class AsyncShared:
    """Uses an object the first job built on the loop (an `asyncio.Queue`, bound to its loop
    once used); returns whether it was there already."""

    n: int = 0


@jobs.handler(AsyncShared)
async def async_shared(job: Job, args: AsyncShared) -> dict[str, Any]:
    reused = "queue" in SHARED
    if not reused:
        SHARED["queue"] = asyncio.Queue()
    queue: asyncio.Queue[int] = SHARED["queue"]
    await queue.put(args.n)
    await queue.get()
    seen = OWN.get()
    OWN.set(job.id)  # this job's context only
    await asyncio.sleep(0)
    return {"reused": reused, "seen": seen, "own": OWN.get() == job.id}


@kind("asyncrt.enqueues", attempts=1)
@dataclass
class AsyncEnqueues:
    """Enqueues `count` `AsyncNap` jobs with `aenqueue_many`, reads one with `aget` and
    lists them with `alist`: the facade's async twins from a handler on the loop."""

    count: int = 2


@jobs.handler(AsyncEnqueues)
async def async_enqueues(job: Job, args: AsyncEnqueues) -> list[int]:
    first = await jobs.aenqueue(AsyncNap(seconds=0))
    more = await jobs.aenqueue_many([AsyncNap(seconds=0) for _ in range(args.count - 1)])
    ids = [first.id, *(e.id for e in more)]
    record = await jobs.aget(first.id)
    assert record is not None and record.kind == "asyncrt.nap"
    listed = {r.id for r in await jobs.alist(kind="asyncrt.nap")}
    assert set(ids) <= listed
    return ids


@kind("asyncrt.sync_calls", attempts=1)
@dataclass
class AsyncSyncCalls:
    """Calls the job's sync methods that write to the store from an async handler (as a user
    may, instead of their async twins): each must work on every store, without Django's
    `SynchronousOnlyOperation` on the database store."""

    tag: str = "x"


def _off_the_loop() -> bool:
    # A sync step's fn runs off the loop's thread: it may use the ORM as a sync handler does
    # (Django refuses its connections on a thread that runs an event loop).
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


@jobs.handler(AsyncSyncCalls)
async def async_sync_calls(job: Job, args: AsyncSyncCalls) -> dict[str, Any]:
    job.record_meta("tag", args.tag)
    job.record_output({"half": True})
    doubled = job.step("double", lambda: 21 * 2)
    off_loop = job.step("off_loop", _off_the_loop)
    job.progress(1, 1, "done")
    return {
        "doubled": doubled,
        "off_loop": off_loop,
        "deps": job.dependency_results(),
        "loop": id(asyncio.get_running_loop()),
    }


def _touch(marker: str, job: Job, what: str) -> None:
    """An e2e marker file (``<id>.<attempt>.<what>``) holding the wall-clock time."""
    e2e_jobs.touch(marker, job, what, repr(time.time()))
