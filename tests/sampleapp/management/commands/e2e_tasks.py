"""`manage.py e2e_tasks enqueue TASK JSON_ARGS` / `e2e_tasks result ID` (tests only).

`enqueue` calls ``tests.sampleapp.tasks.TASK.enqueue(*args)`` and prints the result id;
`result` prints the task result as JSON: status, return value (when successful), attempts
and the errors' exception classes.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from anole_jobs.tasks.compat import task_backends
from tests.sampleapp import tasks


class Command(BaseCommand):
    help = "Enqueue a sample task or print a task result (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["enqueue", "result"])
        parser.add_argument("target", help="a task name of tests.sampleapp.tasks, or a result id")
        parser.add_argument("arguments", nargs="?", default="[]", help="JSON list of args")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "enqueue":
            task = getattr(tasks, options["target"])
            result = task.enqueue(*json.loads(options["arguments"]))
            self.stdout.write(result.id)
            return
        result = task_backends["default"].get_result(options["target"])
        self.stdout.write(
            json.dumps(
                {
                    "status": str(result.status),
                    "return_value": result.return_value if result.status == "SUCCESSFUL" else None,
                    "attempts": result.attempts,
                    "errors": [error.exception_class_path for error in result.errors],
                }
            )
        )
