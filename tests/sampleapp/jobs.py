"""Kinds and handlers the test suite uses; autodiscovered like any app's `jobs` module.

`Work.action` tells the handler what to do, so one kind covers every outcome. Each call is
recorded in `CALLS` (cleared by the `recorder` fixture).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.core.validators import MinValueValidator

from anole_jobs import Job, jobs, kind

CALLS: list[dict[str, Any]] = []
HOOKS: dict[str, Any] = {}  # action name -> callable(job, args) for one-off behaviour
_lock = threading.Lock()


@kind("test.work", attempts=3)
@dataclass
class Work:
    action: str = "ok"
    seconds: float = 0
    tag: str = ""


@jobs.handler(Work)
def work(job: Job, args: Work) -> None:
    with _lock:
        CALLS.append({"id": job.id, "attempt": job.attempt, "action": args.action, "tag": args.tag})
    action = args.action
    if action == "ok":
        return
    if action == "fail":
        raise ValueError(f"failed on attempt {job.attempt}")
    if action == "explain_fail":
        job.explain("calling %s", "the webhook")
        raise RuntimeError("503 from upstream")
    if action == "snooze":
        job.snooze(args.seconds)
    if action == "discard":
        job.discard("not worth retrying")
    if action == "retry_in":
        job.retry_in(args.seconds)
    if action == "bare_except":
        try:
            job.snooze(args.seconds)
        except Exception:  # noqa: BLE001 - the point: control flow is not an Exception
            raise AssertionError("snooze was swallowed by except Exception") from None
    if action in HOOKS:
        HOOKS[action](job, args)
        return
    raise AssertionError(f"unknown action {action!r}")


@kind("test.validated", attempts=5)
@dataclass
class Validated:
    count: int = field(metadata={"validators": [MinValueValidator(1)]})
    label: str = "x"

    def clean(self) -> None:
        if self.label == "bad":
            from django.core.exceptions import ValidationError

            raise ValidationError("label must not be 'bad'")


@jobs.handler(Validated)
def validated(job: Job, args: Validated) -> None:
    CALLS.append({"id": job.id, "count": args.count})


@kind("test.priority", queue="mail", priority=5)
@dataclass
class Prioritized:
    name: str


@jobs.handler(Prioritized)
def prioritized(job: Job, args: Prioritized) -> None:
    CALLS.append({"id": job.id, "name": args.name, "priority": job.priority})


@kind("test.custom_backoff", attempts=4, backoff=lambda attempt: timedelta(seconds=attempt * 10))
@dataclass
class CustomBackoff:
    pass


@jobs.handler(CustomBackoff)
def custom_backoff(job: Job, args: CustomBackoff) -> None:
    raise ValueError("always")


@kind("test.async")
@dataclass
class AsyncWork:
    fail: bool = False


@jobs.handler(AsyncWork)
async def async_work(job: Job, args: AsyncWork) -> None:
    CALLS.append({"id": job.id, "async": True})
    if args.fail:
        raise ValueError("async failure")


@kind("test.orphan")
@dataclass
class Orphan:
    """A kind with no handler in this process: its jobs wait, never lost."""

    n: int = 0


from tests.sampleapp import (  # noqa: E402,F401
    async_jobs,
    dashboard_jobs,
    deploy_jobs,
    e2e_jobs,
    result_jobs,
    rolling_jobs,
    timeline_jobs,
    workflow_jobs,
)


@kind("test.durable_wait")
@dataclass
class DurableWait:
    """Takes a step, sleeps `nap` seconds durably, then waits for signal "go" and returns its
    payload (docs/durable.md)."""

    nap: float = 0.5
    timeout: float = 60.0


@jobs.handler(DurableWait)
def durable_wait(job: Job, args: DurableWait) -> object:
    job.step("first", lambda: job.attempt)
    job.sleep_for("nap", args.nap)
    return job.wait_for_signal("go", timeout=args.timeout)
