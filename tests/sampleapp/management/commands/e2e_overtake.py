"""`manage.py e2e_overtake BACKLOG`: enqueue BACKLOG no-op jobs in batches, wait until the
worker has finished some of them (so it works the queue at its steady pace, with jobs claimed
ahead), enqueue one job at priority 100, wait until it started, and print as JSON what the
queue held then (tests only). One process does it all: a second process start would take
longer than the worker needs for the backlog."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from anole_jobs import jobs
from tests.sampleapp.e2e_jobs import Noop
from tests.support.waiting import wait_until

BATCH = 1000
TIMEOUT = 120.0


def wait_for(what: str, check: Any) -> Any:
    # Polling the store from outside, as a user would.
    try:
        return wait_until(check, what, TIMEOUT, recheck=0.005)
    except AssertionError as exc:
        raise CommandError(str(exc)) from None


class Command(BaseCommand):
    help = "Enqueue a backlog, then a priority job while it drains (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("backlog", type=int)
        parser.add_argument("--warm", type=int, default=300, help="finished before the probe")

    def handle(self, *args: Any, **options: Any) -> None:
        backlog, warm = options["backlog"], options["warm"]
        for start in range(0, backlog, BATCH):
            jobs.enqueue_many([Noop() for _ in range(min(BATCH, backlog - start))])

        def counts() -> dict[str, int]:
            return jobs.counts().get("default", {})

        wait_for(f"{warm} jobs completed", lambda: counts().get("completed", 0) >= warm)
        before = counts()
        probe = jobs.enqueue(Noop(), priority=100)
        record = wait_for(
            "the priority job to start",
            lambda: (r := jobs.get(probe.id)) is not None and r.attempted_at is not None and r,
        )
        after = counts()
        self.stdout.write(
            json.dumps(
                {
                    "waiting_before": before.get("available", 0),
                    "waiting_after": after.get("available", 0),
                    "waited_ms": (record.attempted_at - record.created_at).total_seconds() * 1000,
                }
            )
        )
