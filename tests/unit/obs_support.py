"""Helpers shared by the metrics and tracing tests: one-off handler behaviours and a runtime
(RUN="auto", memory store) whose run ends a test can wait for."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from anole_jobs import events, jobs
from tests.sampleapp.jobs import HOOKS

WAIT = 10.0  # the longest any condition may take before the test fails


def hook(func: Any) -> str:
    """Register `func(job, args)` as the behaviour of `Work(action=<returned name>)`."""
    name = f"obs-hook-{len(HOOKS)}"
    HOOKS[name] = func
    return name


class Finished:
    """RUN_FINISHED events as they come, with a bounded wait."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.events: list[events.Event] = []

    def __call__(self, event: events.Event) -> None:
        if event.name == events.RUN_FINISHED:
            with self.cond:
                self.events.append(event)
                self.cond.notify_all()

    def wait(self, count: int) -> list[events.Event]:
        with self.cond:
            done = self.cond.wait_for(lambda: len(self.events) >= count, WAIT)
        assert done, f"timed out waiting for {count} run ends; saw {self.events}"
        return self.events


@pytest.fixture
def auto(settings: Any, clock: Any, recorder: Any) -> Iterator[Finished]:
    """Workers in this process (`jobs.start()` is the test's), drain_timeout 0.2 s."""
    settings.ANOLE_JOBS = {
        "STORE": "memory",
        "RUN": "auto",
        "CLOCK": clock,
        "QUEUES": {"default": {"concurrency": 2, "drain_timeout": 0.2}},
    }
    finished = Finished()
    unsubscribe = events.bus.subscribe(finished)
    try:
        yield finished
    finally:
        jobs.stop(drain=False)
        unsubscribe()
        jobs.reset()
