"""`manage.py e2e_enqueue BATCHES`: enqueue jobs and print their ids as JSON (tests only).

BATCHES is a JSON list of ``{"kind": K, "args": {...}, "count": N, "queue": Q, "spread": S}``
(``args``, ``count``, ``queue`` and ``spread`` optional; with ``spread``, the N jobs are
enqueued one by one, evenly over S seconds, each with ``n`` set to its index: a burst); the
output is one list of ids per spec, in order, so one process start enqueues everything a test
needs. K is a kind name (``e2e.block``) or a short
name of `tests.sampleapp.e2e_jobs.KINDS`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from anole_jobs import NewQueue, jobs
from anole_jobs.kinds import registry
from tests.sampleapp.e2e_jobs import KINDS


class Command(BaseCommand):
    help = "Enqueue jobs and print their ids as JSON (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("specs", help='a JSON list of {"kind", "args", "count", "queue"}')

    def handle(self, *args: Any, **options: Any) -> None:
        out = []
        for spec in json.loads(options["specs"]):
            name = spec["kind"]
            args_type = KINDS.get(name)
            if args_type is None:
                kind_spec = registry.kind(name)
                if kind_spec is None:
                    raise CommandError(f"unknown kind {name!r}")
                args_type = kind_spec.args_type
            values = spec.get("args", {})
            queue = spec.get("queue")
            if spec.get("spread") is not None:
                count = spec.get("count", 1)
                gap = float(spec["spread"]) / max(count - 1, 1)
                ids = []
                for n in range(count):
                    if n:
                        time.sleep(gap)  # the burst's pace is what the test is about
                    ids.append(jobs.enqueue(args_type(**{**values, "n": n})).id)
                out.append(ids)
                continue
            enqueued = jobs.enqueue_many(
                [args_type(**values) for _ in range(spec.get("count", 1))],
                # The test names the queue it runs workers for: a queue used on purpose.
                queue=None if queue is None else NewQueue(queue),
            )
            out.append([e.id for e in enqueued])
        self.stdout.write(json.dumps(out))
