"""A kind whose handler reports progress and logs, failing its first attempt, for the timeline
tests (imported at the end of `tests.sampleapp.jobs`, so `runjobs` processes have it too)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import timedelta

from anole_jobs import Canceled, Job, jobs, kind

log = logging.getLogger("tests.timeline_jobs")


@kind("e2e.timeline", attempts=3)
@dataclass
class Timeline:
    fail_first: bool = True


@jobs.handler(Timeline)
def timeline(job: Job, args: Timeline) -> None:
    log.info("attempt %d starts", job.attempt)
    job.progress(job.attempt, 2, f"attempt {job.attempt}")
    if args.fail_first and job.attempt == 1:
        job.retry_in(0)
    log.warning("attempt %d done", job.attempt)


@kind("test.timeline_async", attempts=2)
@dataclass
class AsyncTimeline:
    reports: int = 3


@jobs.handler(AsyncTimeline)
async def async_timeline(job: Job, args: AsyncTimeline) -> None:
    import asyncio

    async def child() -> None:
        log.warning("from a task the handler started")

    log.info("async attempt %d", job.attempt)
    for done in range(1, args.reports + 1):
        job.progress(done, args.reports)
        await asyncio.sleep(0)
    await asyncio.gather(asyncio.create_task(child()))


#: Set by a test to let `LiveLog` and `AsyncLiveLog` handlers log their last line and return.
LIVE_GATE = threading.Event()


@kind("test.timeline_live", attempts=1)
@dataclass
class LiveLog:
    """Logs a line, then runs until `LIVE_GATE` is set; cancelled meanwhile, it logs that it
    cleans up and lets the cancel end it."""

    name: str = "live"


@jobs.handler(LiveLog)
def live_log(job: Job, args: LiveLog) -> None:
    log.info("%s: before the gate", args.name)
    try:
        while not LIVE_GATE.is_set():
            job.sleep(timedelta(seconds=0.02))  # cancel-aware
    except Canceled:
        log.info("%s: cancelled, cleaning up", args.name)
        raise
    log.info("%s: after the gate", args.name)


@kind("test.timeline_live_deaf", attempts=1)
@dataclass
class DeafLiveLog:
    """`LiveLog` that never looks for a cancel: it waits on `LIVE_GATE` alone, then logs its
    last line and returns (its end is refused if the job was cancelled meanwhile)."""

    name: str = "deaf"


@jobs.handler(DeafLiveLog)
def deaf_live_log(job: Job, args: DeafLiveLog) -> None:
    log.info("%s: before the gate", args.name)
    LIVE_GATE.wait()
    log.info("%s: after the gate", args.name)


@kind("test.timeline_live_async", attempts=1)
@dataclass
class AsyncLiveLog:
    name: str = "live"


@jobs.handler(AsyncLiveLog)
async def async_live_log(job: Job, args: AsyncLiveLog) -> None:
    import asyncio

    log.info("%s: before the gate", args.name)
    try:
        while not LIVE_GATE.is_set():
            await asyncio.sleep(0.02)  # a cancel raises CancelledError here
    except asyncio.CancelledError:
        log.info("%s: cancelled, cleaning up", args.name)
        raise
    log.info("%s: after the gate", args.name)
