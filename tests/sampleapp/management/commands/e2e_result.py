"""`manage.py e2e_result ID [--timeout SECONDS]`: print ``jobs.result(ID, timeout=...)`` as JSON
``{"result": value}``, or ``{"error": type, "state": ...}`` when it raises (tests only). It
prints ``waiting`` first, once subscribed, so a test can start the workers after it waits."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from anole_jobs import JobFailed, JobNotFinished, jobs


class Command(BaseCommand):
    help = "Wait for a job's result and print it as JSON (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", type=int)
        parser.add_argument("--timeout", type=float, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write("waiting")
        self.stdout.flush()
        try:
            out: dict[str, Any] = {"result": jobs.result(options["id"], timeout=options["timeout"])}
        except (JobFailed, JobNotFinished) as exc:
            out = {"error": type(exc).__name__, "state": exc.record.state}
        self.stdout.write(json.dumps(out))
