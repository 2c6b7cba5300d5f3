"""``manage.py jobs show ID``: the job's timeline in words — its progress, its attempts (worker,
start, duration, outcome), its durable steps and its log (docs/timeline.md)."""

from __future__ import annotations

import json
from datetime import datetime

from anole_jobs.core import JobRecord
from anole_jobs.operations import timeline


def describe(record: JobRecord, now: datetime) -> list[str]:
    lines: list[str] = []
    if record.progress is not None:
        lines.append(f"progress      {timeline.progress_text(record.progress)}")
    rows = timeline.attempt_rows(record, now)
    if rows:
        lines.append("attempts")
        width = max(len(row.worker) for row in rows)
        for row in rows:
            started = row.started_at.isoformat() if row.started_at is not None else "-"
            lines.append(
                f"  {row.attempt!s:>3}  {row.outcome:<11}  {row.worker:<{width}}  "
                f"started {started}  took {row.duration}"
            )
    if record.steps:
        lines.append("steps")
        for name, step in record.steps.items():
            at = step.get("at")
            when = at.isoformat() if isinstance(at, datetime) else str(at)
            value = json.dumps(step.get("result"), ensure_ascii=False)
            lines.append(f"  {name}  {when}  {value}")
    if record.logs:
        lines.append(f"log ({len(record.logs)} lines, the newest kept)")
        for line in record.logs:
            at = line.get("at")
            when = at.isoformat() if isinstance(at, datetime) else str(at)
            message = str(line.get("message")).replace("\n", "\n      ")
            lines.append(
                f"  [{line.get('attempt')}] {when} {line.get('level')} {line.get('logger')}: "
                f"{message}"
            )
    return lines
