"""`manage.py e2e_cancel ID`: cancel a job and print the wall-clock time `jobs.cancel`
returned at (tests only: the e2e tests measure how soon a handler sees the cancel)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from anole_jobs import jobs


class Command(BaseCommand):
    help = "Cancel a job; print when jobs.cancel returned (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        jobs.cancel(options["job_id"])
        self.stdout.write(repr(time.time()))
