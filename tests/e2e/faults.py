"""Faults a `runjobs` subprocess of the e2e tests can be started with (an app the e2e
settings install when ``ANOLE_E2E_THREAD_DEATH`` is set):

    ANOLE_E2E_THREAD_DEATH=heartbeat   the heartbeat thread's first round raises `Fatal`, a
                                       `BaseException` that no loop catches: the thread dies.
"""

from __future__ import annotations

import os

from django.apps import AppConfig


class Fatal(BaseException):
    """What ends a thread: not an `Exception`, so no guarded loop catches it."""


class FaultsConfig(AppConfig):
    name = "tests.e2e.faults"
    label = "e2e_faults"

    def ready(self) -> None:
        if os.environ.get("ANOLE_E2E_THREAD_DEATH") == "heartbeat":
            from anole_jobs.worker.heartbeat import Heartbeat

            def run_once(self: Heartbeat) -> float:
                raise Fatal("injected by the e2e test")

            Heartbeat.run_once = run_once  # type: ignore[method-assign]
