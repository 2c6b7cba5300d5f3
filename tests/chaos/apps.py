"""The chaos app, installed only in `tests.chaos.settings` (the `runjobs` processes a chaos
scenario starts): it records the runtime's events in the process's run log and arms the kill
points named by ``ANOLE_CHAOS_KILL_AT``.

``ANOLE_CHAOS_KILL_AT=point:N`` makes the process ``os._exit(137)`` (as abrupt as kill -9: no
drain, no write, no atexit) the N-th time it passes `point`; several points, comma-separated,
arm each (the first one reached kills the process):

    after_claim    a claim returned jobs, before any of them started
    before_finish  an outcome write is about to go to the store (it never arrives)
    after_finish   an outcome write was accepted, before the worker hears of it
    cron_tick      the leader recorded a cron tick and inserted its job (``ANOLE_CHAOS_CRON``
                   adds a cron entry that ticks every minute; see `tests.chaos.settings`)
    in_handler     a `chaos.task` handler started (the job's own code kills the process)
    in_step        a `chaos.durable` step's fn returned, before its record (on the database
                   store: inside the step's transaction, which then never commits)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from django.apps import AppConfig

from tests.chaos import runlog

KILL_POINTS = (
    "after_claim",
    "before_finish",
    "after_finish",
    "cron_tick",
    "in_handler",
    "in_step",
)


class KillSwitch:
    """Counts passes through the named points and exits the process at an armed pass."""

    def __init__(self, spec: str) -> None:
        self.at: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            point, _, count = part.partition(":")
            if point not in KILL_POINTS:
                raise ValueError(
                    f"ANOLE_CHAOS_KILL_AT: unknown point {point!r}; one of {KILL_POINTS}"
                )
            self.at[point] = int(count or "1")
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def passing(self, point: str) -> None:
        if point not in self.at:
            return
        with self._lock:
            self._seen[point] = self._seen.get(point, 0) + 1
            fire = self._seen[point] == self.at[point]
        if fire:
            runlog.write("kill", point=point)
            os._exit(137)


SWITCH: KillSwitch | None = None


def passing(point: str) -> None:
    """Called at each kill point; exits the process when this pass is the armed one."""
    if SWITCH is not None:
        SWITCH.passing(point)


def _wrap(cls: type, name: str, before: str | None, after: str | None) -> None:
    original: Callable[..., Any] = getattr(cls, name)

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if before:
            passing(before)
        result = original(self, *args, **kwargs)
        if after and result:
            passing(after)
        return result

    setattr(cls, name, wrapper)


def _arm(spec: str) -> None:
    global SWITCH
    SWITCH = KillSwitch(spec)
    from anole_jobs.stores.database.base import SQLStore
    from anole_jobs.stores.redis.store import RedisStore

    for cls in (SQLStore, RedisStore):
        _wrap(cls, "claim", None, "after_claim")
        _wrap(cls, "finish", "before_finish", "after_finish")
        _wrap(cls, "cron_advance", None, "cron_tick")


class ChaosConfig(AppConfig):
    name = "tests.chaos"
    label = "chaos"

    def ready(self) -> None:
        if not runlog.enabled():
            return
        runlog.listen()
        spec = os.environ.get("ANOLE_CHAOS_KILL_AT", "")
        if spec:
            _arm(spec)
