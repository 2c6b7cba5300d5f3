"""Recycling a worker process: `--max-jobs-per-process` and `--max-memory-per-process`.

A handler that leaks memory, or a library that grows a cache without bound, makes a
long-lived worker process bigger with every job. Past either limit, a worker claims nothing
more, gives back the jobs it claimed but did not start (their attempt not counted), lets the
jobs it runs finish (each within its own timeout; a drain's `drain_timeout` does not apply),
and exits with `RECYCLE_EXIT`, which its supervisor reads as "replace me". No job is lost and
no attempt is counted: the recycle is a drain that waits for its running jobs.

`RecycleWatch` listens to the end of every run: it counts them and reads the process's
resident memory (Linux: /proc/self/statm; elsewhere the peak, from `resource`) at each, the
moment memory grows. It calls `trigger` once, from the thread that ended the run.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from anole_jobs import events
from anole_jobs.worker.runs import RunRegistry
from anole_jobs.worker.supervisor import RECYCLE_EXIT

__all__ = [
    "RECYCLE_EXIT",
    "RecycleLimits",
    "RecycleWatch",
    "memory_limit_problem",
    "rss_bytes",
    "wait_idle",
]

MIB = 1024 * 1024


@dataclass(frozen=True)
class RecycleLimits:
    """When a worker process is replaced by a fresh one (``runjobs --max-jobs`` and
    ``--max-memory``); not the queue limits of `anole_jobs.limits`."""

    max_jobs: int | None = None
    max_memory_mib: int | None = None

    @property
    def any(self) -> bool:
        return self.max_jobs is not None or self.max_memory_mib is not None

    def describe(self) -> str:
        parts = []
        if self.max_jobs is not None:
            parts.append(f"after {self.max_jobs} job(s)")
        if self.max_memory_mib is not None:
            parts.append(f"past {self.max_memory_mib} MiB of memory")
        return " or ".join(parts)


def rss_bytes() -> int | None:
    """This process's resident memory in bytes (the peak where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class RecycleWatch:
    """Calls `trigger(reason)` once, at the end of the run that reaches a limit."""

    def __init__(
        self,
        limits: RecycleLimits,
        trigger: Callable[[str], None],
        *,
        memory: Callable[[], int | None] = rss_bytes,
    ) -> None:
        self.limits = limits
        self.trigger = trigger
        self.memory = memory
        self.finished = 0
        self.fired = False
        self._lock = threading.Lock()

    def subscribe(self, bus: events.EventBus) -> Callable[[], None]:
        return bus.subscribe(self, events.RUN_FINISHED)

    def __call__(self, event: events.Event) -> None:
        if event.name != events.RUN_FINISHED:
            return
        with self._lock:
            if self.fired:
                return
            self.finished += 1
            reason = self._past_a_limit()
            if reason is None:
                return
            self.fired = True
        self.trigger(reason)

    def _past_a_limit(self) -> str | None:
        limits = self.limits
        if limits.max_jobs is not None and self.finished >= limits.max_jobs:
            return f"{self.finished} job(s) (--max-jobs-per-process {limits.max_jobs})"
        if limits.max_memory_mib is not None:
            used = self.memory()
            if used is not None and used > limits.max_memory_mib * MIB:
                return (
                    f"{used / MIB:.0f} MiB of memory "
                    f"(--max-memory-per-process {limits.max_memory_mib})"
                )
        return None


def wait_idle(runs: RunRegistry, interrupted: Callable[[], bool], recheck: float) -> None:
    """Wait until no job of `runs` runs, or `interrupted()` (a signal came: the caller's drain takes
    over). `recheck` bounds each wait, so a signal is noticed within it."""
    while not interrupted():
        if runs.wait_empty(None, recheck):
            return


def memory_limit_problem(limits: RecycleLimits) -> str | None:
    """Why `limits`' memory limit cannot work here, or None: a limit below what a worker
    holds at its start would recycle it after every job."""
    if limits.max_memory_mib is None:
        return None
    used = rss_bytes()
    if used is None or used < limits.max_memory_mib * MIB:
        return None
    return (
        f"--max-memory-per-process {limits.max_memory_mib} is below the memory a worker "
        f"holds before it runs any job ({used / MIB:.0f} MiB here): every worker "
        "would be recycled after each job. Give a limit well above it"
    )
