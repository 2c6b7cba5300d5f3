"""``manage.py jobs workers [--json]``: the worker processes alive now, one line each, then
the jobs each holds, then the queues with waiting jobs that no worker serves. ``--json`` prints
what ``GET /workers`` answers. (Kept apart from the command's module so that it stays a
table of subcommands.)"""

from __future__ import annotations

from typing import Any

from anole_jobs.management.text import Output, relative, table
from anole_jobs.operations import audit, payloads
from anole_jobs.operations.workers import Overview, control, overview

HELP = "the worker processes alive now and the jobs each holds"


def do_workers(command: Output, options: dict[str, Any]) -> None:
    view = overview()
    command.emit(payloads.workers(view), lambda: human(view))


def human(view: Overview) -> str:
    now = view.now
    if not view.workers:
        text = "no workers alive (start one with manage.py runjobs)"
    else:
        rows = []
        for status in view.workers:
            record = status.record
            queues = ", ".join(f"{q.name} {q.busy}/{q.total}" for q in record.queues)
            rows.append(
                (
                    record.id,
                    record.host,
                    record.pid,
                    record.version,
                    f"{record.busy}/{record.slots}",
                    record.held,
                    relative(record.started_at, now),
                    relative(record.last_seen, now) + (" LATE" if status.late else ""),
                    _control(record.control),
                    queues,
                )
            )
        text = table(
            (
                "WORKER",
                "HOST",
                "PID",
                "VERSION",
                "BUSY",
                "HELD",
                "STARTED",
                "SEEN",
                "CONTROL",
                "QUEUES",
            ),
            rows,
        )
        lines = []
        for status in view.workers:
            record = status.record
            for job in record.jobs:
                doing = "running" if job.running else "waiting for a slot"
                lines.append(
                    f"  job {job.id}  {job.kind}  ({job.queue}, attempt {job.attempt}) {doing}"
                    f", claimed {relative(job.started_at, now)}, on {record.id}"
                )
            if record.held > len(record.jobs):
                lines.append(f"  … and {record.held - len(record.jobs)} more on {record.id}")
        if lines:
            text += "\njobs held:\n" + "\n".join(lines)
        if any(status.late for status in view.workers):
            text += (
                "\nLATE: no heartbeat for over half its record's lifetime; the process may be"
                " stuck or cut off from the store"
            )
    if view.queues_without_workers:
        text += "\nqueues with waiting jobs and no worker: " + ", ".join(
            view.queues_without_workers
        )
    return text


def _control(request: Any) -> str:
    if request is None:
        return "-"
    state = "stopping" if request.action == "stop" else "quiet"
    return f"{state} (by {request.by})"


QUIET_HELP = (
    "ask one worker process (its id, as `jobs workers` lists it) to claim nothing more and "
    "finish its running jobs, within about a second"
)
STOP_HELP = (
    "ask one worker process (its id) to drain and exit, as SIGTERM does, within about a second"
)
AUDIT_HELP = "the operators' actions (who, what, which target, when, from where), newest first"


def do_worker_control(command: Output, options: dict[str, Any], action: str) -> None:
    worker_id = options["id"]
    control(worker_id, action)
    actor, surface = audit.current()
    command.emit(
        {"worker": worker_id, "action": action, "by": actor, "surface": surface},
        lambda: f"asked worker {worker_id} to {action}",
    )


def do_audit(command: Output, options: dict[str, Any]) -> None:
    found = audit.entries(action=options.get("action"), limit=options.get("limit") or 100)
    next_before = found[-1].id if found and len(found) == (options.get("limit") or 100) else None

    def human() -> str:
        if not found:
            return "no actions recorded"
        return table(
            ("ID", "AT", "WHO", "ACTION", "TARGET", "FROM", "DETAIL"),
            [
                (
                    e.id,
                    e.at.isoformat(timespec="seconds"),
                    e.actor,
                    e.action,
                    e.target,
                    e.surface,
                    e.detail,
                )
                for e in found
            ],
        )

    command.emit({"entries": [e.as_json() for e in found], "next_before": next_before}, human)
