"""The job's timeline as the surfaces show it (the CLI's ``jobs show``, the dashboard's job
page): each attempt with its worker, duration and outcome, the progress as a share, and
durations in words. Built from a `JobRecord` only (docs/timeline.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from anole_jobs.core import JobRecord


@dataclass(frozen=True, kw_only=True)
class AttemptRow:
    """One attempt: `outcome` is ``running`` for the attempt running now; `seconds` is how
    long it ran (so far, for the running one), None when its start is unknown."""

    attempt: Any
    worker: str
    started_at: datetime | None
    finished_at: datetime | None
    outcome: str
    seconds: float | None

    @property
    def running(self) -> bool:
        return self.finished_at is None and self.outcome == "running"

    @property
    def duration(self) -> str:
        return duration(self.seconds)


def attempt_rows(record: JobRecord, now: datetime) -> list[AttemptRow]:
    """The job's attempts, oldest first, as rows to show."""
    rows = []
    for entry in record.attempts:
        started, finished = entry.get("started_at"), entry.get("finished_at")
        end = finished if isinstance(finished, datetime) else now
        seconds = (
            max(0.0, (end - started).total_seconds()) if isinstance(started, datetime) else None
        )
        rows.append(
            AttemptRow(
                attempt=entry.get("attempt"),
                worker=str(entry.get("worker") or "-"),
                started_at=started if isinstance(started, datetime) else None,
                finished_at=finished if isinstance(finished, datetime) else None,
                outcome=str(entry.get("outcome") or "running"),
                seconds=seconds,
            )
        )
    return rows


def percent(progress: Any) -> int | None:
    """The share of `progress` done, 0 to 100, when it has a positive total; else None."""
    if not isinstance(progress, dict):
        return None
    done, total = progress.get("done"), progress.get("total")
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (done, total))
    if not numbers or total <= 0:  # type: ignore[operator]
        return None
    return max(0, min(100, int(100 * done / total)))  # type: ignore[operator]


def progress_text(progress: Any) -> str:
    """``7 of 10 (70%): message`` / ``7: message``."""
    if not isinstance(progress, dict):
        return "-"
    done, total = progress.get("done"), progress.get("total")
    text = f"{_number(done)}" if total is None else f"{_number(done)} of {_number(total)}"
    share = percent(progress)
    if share is not None:
        text += f" ({share}%)"
    message = progress.get("message")
    return f"{text}: {message}" if message else text


def duration(seconds: float | None) -> str:
    """``0.123 s``, ``12.5 s``, ``3m 05s``, ``2h 04m``, ``3d 02h``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.3f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    for unit, size, small, small_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60)):
        if whole >= size:
            return f"{whole // size}{unit} {(whole % size) // small_size:02d}{small}"
    return f"{whole // 60}m {whole % 60:02d}s"


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
