"""`manage.py chaos_workflow SECONDS [--hold STEP=SECONDS ...]`: enqueue the chaos scenarios'
50-step diamond-heavy workflow of `chaos.step` jobs (each waits SECONDS, or the seconds a
``--hold`` gives that step) and print ``{"id": workflow id, "jobs":
{step name: job id}, "after": {step name: [its dependencies]}}`` as JSON (tests only).

The shape, layer by layer: a root; 12 steps after it; a join after all 12; 12 steps after
the join; 11 steps each after two neighbours of the layer before (a lattice of diamonds); a
second join after those 11; 11 steps after it; the end after all of them. Fan-out and fan-in
three times, and every lattice step has two dependencies finishing at about the same moment.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from anole_jobs import Workflow, jobs
from tests.chaos.jobs import ChaosStep


def build(
    seconds: float, hold: dict[str, float] | None = None
) -> tuple[Workflow, dict[str, list[str]]]:
    wf = Workflow("chaos diamonds")
    after: dict[str, list[str]] = {}
    hold = hold or {}

    def add(name: str, deps: list[str]) -> str:
        after[name] = deps
        return wf.add(ChaosStep(seconds=hold.get(name, seconds)), name=name, after=deps)

    root = add("root", [])
    fan1 = [add(f"a{i}", [root]) for i in range(12)]
    join1 = add("join1", fan1)
    fan2 = [add(f"b{i}", [join1]) for i in range(12)]
    lattice = [add(f"c{i}", [fan2[i], fan2[i + 1]]) for i in range(11)]
    join2 = add("join2", lattice)
    fan3 = [add(f"d{i}", [join2]) for i in range(11)]
    add("end", fan3)
    return wf, after


class Command(BaseCommand):
    help = "Enqueue the chaos 50-step diamond-heavy workflow and print its ids (tests only)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("seconds", type=float)
        parser.add_argument(
            "--hold",
            action="append",
            default=[],
            metavar="STEP=SECONDS",
            help="let this step wait longer than the others (repeatable)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        hold = {}
        for given in options["hold"]:
            name, _, seconds = given.partition("=")
            hold[name] = float(seconds)
        wf, after = build(options["seconds"], hold)
        created = jobs.enqueue_workflow(wf)
        printed = {"id": created.id, "jobs": dict(created.jobs), "after": after}
        self.stdout.write(json.dumps(printed))
