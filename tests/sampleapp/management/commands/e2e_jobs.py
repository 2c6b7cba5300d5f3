"""`manage.py e2e_jobs [ID ...]`: print the named jobs (default: the newest 1000) as a JSON
list of ``{id, kind, queue, state, attempt, max_attempts, errors}`` (tests only)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from anole_jobs import jobs


class Command(BaseCommand):
    help = "Print jobs as JSON (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("ids", nargs="*", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        ids = options["ids"]
        if ids:
            records = [r for r in (jobs.get(job_id) for job_id in ids) if r is not None]
        else:
            records = jobs.list(limit=1000)
        self.stdout.write(
            json.dumps(
                [
                    {
                        "id": r.id,
                        "kind": r.kind,
                        "queue": r.queue,
                        "state": r.state,
                        "attempt": r.attempt,
                        "max_attempts": r.max_attempts,
                        "errors": [
                            {"type": e["type"], "attempt": e["attempt"], "message": e["message"]}
                            for e in r.errors
                        ],
                    }
                    for r in records
                ]
            )
        )
