"""`manage.py e2e_workflow WIDTH`: enqueue a diamond-heavy workflow of `test.step` jobs and
print ``{"id": workflow id, "jobs": {step name: job id}}`` as JSON (tests only).
``--failing`` enqueues the failure shape instead (WIDTH is ignored): root; "bad" after root
fails; "blocked" after bad; "tolerant" after bad with ignore_failed; "end" after tolerant.
``--delayed`` enqueues root and "late" after it with a delay of one second (counted from the
moment root completes).

One root, WIDTH steps after it, a join after all of them, then WIDTH more after the join and a
last join: fan-out and fan-in twice, so finishes of one step's dependencies race in the
workers."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from anole_jobs import Workflow, jobs
from tests.sampleapp.workflow_jobs import Step


class Command(BaseCommand):
    help = "Enqueue a diamond-heavy workflow and print its ids as JSON (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("width", type=int)
        parser.add_argument("--failing", action="store_true")
        parser.add_argument("--delayed", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["failing"]:
            wf = Workflow("e2e failing")
            root = wf.add(Step("root"), name="root")
            bad = wf.add(Step("bad", "fail"), name="bad", after=[root])
            wf.add(Step("blocked"), name="blocked", after=[bad])
            tolerant = wf.add(Step("tolerant"), name="tolerant", after=[bad], ignore_failed=True)
            wf.add(Step("end"), name="end", after=[tolerant])
            created = jobs.enqueue_workflow(wf)
            self.stdout.write(json.dumps({"id": created.id, "jobs": dict(created.jobs)}))
            return
        if options["delayed"]:
            wf = Workflow("e2e delayed")
            root = wf.add(Step("root"), name="root")
            wf.add(Step("late"), name="late", after=[root], delay=timedelta(seconds=1))
            created = jobs.enqueue_workflow(wf)
            self.stdout.write(json.dumps({"id": created.id, "jobs": dict(created.jobs)}))
            return
        wf = Workflow("e2e diamonds")
        root = wf.add(Step("root"), name="root")
        heads = wf.group(*(Step(f"a{i}") for i in range(options["width"])), after=[root])
        join = wf.add(Step("join"), name="join", after=heads)
        tails = wf.group(*(Step(f"b{i}") for i in range(options["width"])), after=[join])
        wf.add(Step("end"), name="end", after=tails)
        created = jobs.enqueue_workflow(wf)
        self.stdout.write(json.dumps({"id": created.id, "jobs": dict(created.jobs)}))
