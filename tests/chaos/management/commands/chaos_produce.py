"""`manage.py chaos_produce RATE SECONDS`: enqueue `chaos.task` jobs at about RATE per second
for SECONDS, in small batches, each stamped with its enqueue time; print the ids as JSON."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from anole_jobs import jobs
from tests.chaos.jobs import ChaosTask

BATCHES_PER_SECOND = 10


class Command(BaseCommand):
    help = "Enqueue chaos.task jobs at a steady rate (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("rate", type=float)
        parser.add_argument("seconds", type=float)

    def handle(self, *args: Any, **options: Any) -> None:
        per_batch = max(1, round(options["rate"] / BATCHES_PER_SECOND))
        started = time.monotonic()
        ids: list[int] = []
        batch = 0
        while time.monotonic() - started < options["seconds"]:
            sent = time.monotonic_ns()
            enqueued = jobs.enqueue_many([ChaosTask(sent=sent) for _ in range(per_batch)])
            ids.extend(e.id for e in enqueued if e.id is not None)
            batch += 1
            # A steady rate: the next batch is due at a fixed time from the start.
            delay = started + batch / BATCHES_PER_SECOND - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        self.stdout.write(json.dumps(ids))
