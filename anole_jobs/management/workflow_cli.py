"""``manage.py jobs workflow ID``: one workflow in words (its steps in the order they run,
each with its state and what it waits for), or as the route's JSON."""

from __future__ import annotations

from datetime import datetime

from anole_jobs.workflows import WorkflowRecord


def describe(record: WorkflowRecord, now: datetime) -> str:
    counts = ", ".join(f"{n} {state}" for state, n in record.counts.items()) or "no steps left"
    lines = [
        f"workflow {record.id}  {record.name}  ({record.state})",
        f"created       {record.created_at.isoformat()}",
        f"steps         {counts}",
        "",
    ]
    width = max((len(name) for name in record.steps), default=4)
    lines.append(f"{'STEP':<{width}}  {'JOB':>8}  {'STATE':<10}  AFTER")
    for name, step in record.steps.items():
        after = ", ".join(record.dependencies.get(name, ())) or "-"
        lines.append(f"{name:<{width}}  {step.id:>8}  {step.state:<10}  {after}")
    return "\n".join(lines)
