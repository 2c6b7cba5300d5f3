"""The run log: what each `runjobs` process did, kept outside the store it is checked against.

Each process appends JSON lines to ``$ANOLE_CHAOS_LOG/<pid>.jsonl`` with one ``os.write`` per
record on an ``O_APPEND`` descriptor: a record is in the kernel before the code after it runs,
so a ``kill -9`` never loses or tears one (only a machine crash would, which these tests do not
cause). Every record has ``e`` (what happened), ``pid`` and ``t`` (``CLOCK_MONOTONIC`` in ns,
one clock for every process on the machine, so records of several processes can be ordered).

Records: ``start``/``end`` (a `chaos.task` handler began/returned: id, attempt), ``run``
(the runtime's RUN_FINISHED: id, attempt, outcome, saved), ``rescued`` (id, state),
``leader`` (leader), ``kill`` (a kill point fired: point).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

ENV = "ANOLE_CHAOS_LOG"
_fd: int | None = None
_fd_lock = threading.Lock()


def enabled() -> bool:
    return bool(os.environ.get(ENV))


def _descriptor() -> int:
    global _fd
    with _fd_lock:
        if _fd is None:
            path = Path(os.environ[ENV], f"{os.getpid()}.jsonl")
            _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return _fd


def write(event: str, **fields: Any) -> None:
    """Append one record (a no-op when no log directory is configured)."""
    if not enabled():
        return
    record = {"e": event, "pid": os.getpid(), "t": time.monotonic_ns(), **fields}
    os.write(_descriptor(), (json.dumps(record) + "\n").encode())


def listen() -> None:
    """Record the runtime's events (run ends, rescues, leadership) in this process's log."""
    from anole_jobs import events

    def on_event(event: events.Event) -> None:
        fields = event.fields
        if event.name == events.RUN_FINISHED:
            write(
                "run",
                id=fields["job_id"],
                attempt=fields["attempt"],
                outcome=fields["outcome"],
                saved=fields.get("saved", fields["outcome"] != "lost"),
            )
        elif event.name == events.RESCUED:
            write("rescued", id=fields["job_id"], state=fields["state"])
        elif event.name == events.LEADERSHIP:
            write("leader", leader=fields["leader"])

    events.bus.subscribe(on_event)


def complete_lines(text: str) -> list[str]:
    """The lines of `text` that end with a newline. A reader running beside a writer may catch
    a record whose write crosses a page boundary with only its first page in the file; the
    rest follows at once, and the next read has it whole."""
    return text[: text.rfind("\n") + 1].splitlines()


def read(directory: Path) -> list[dict[str, Any]]:
    """Every record of every process in `directory`, in time order."""
    records = []
    for path in directory.glob("*.jsonl"):
        for line in complete_lines(path.read_text()):
            if line.strip():
                records.append(json.loads(line))
    records.sort(key=lambda r: r["t"])
    return records
