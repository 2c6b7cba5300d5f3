"""The job's timeline: its progress, its log and its attempts, as stored and as read back.

What a handler reports (`job.progress`, its log records) and how each attempt ended are kept
with the job by the write that ends the attempt (see `stores.base.Finish`); a store keeps them
as JSON with times as ISO 8601 text, and this module turns them back into the shapes
`JobRecord.progress`, `JobRecord.logs` and `JobRecord.attempts` promise (times as aware UTC
datetimes). The outcome names of an attempt live here too (docs/timeline.md lists them).

Leaf module: of the package it imports only `bounds` (what a store can hold).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeGuard

from anole_jobs.bounds import storable_text

#: The longest message kept for a `job.progress` call or a log record (longer ones are cut,
#: with an ellipsis): the job's row holds them, and every page shows them.
MESSAGE_CHARS = 2000
#: The most attempts a job keeps (the newest): a job that snoozes for ever would grow its
#: row for ever otherwise.
ATTEMPTS_KEPT = 500

# -- how an attempt ended --------------------------------------------------------------------
#: The handler returned (or completed inside its own transaction).
COMPLETED = "completed"
#: The handler failed (raised, timed out, asked for a retry) and the job runs again.
FAILED = "failed"
#: The handler failed on its last attempt, or discarded the job: the job is dead.
DEAD = "dead"
#: The handler snoozed or slept (a durable sleep, a wait for a signal): not counted.
SNOOZED = "snoozed"
#: A drain gave the job back before the handler ended: not counted, it runs again.
INTERRUPTED = "interrupted"
#: An operator cancelled the job while it ran.
CANCELLED = "cancelled"
#: Its lease ended before the worker reported (the worker died or lost the store): the job
#: runs again, or is dead when that was its last attempt.
RESCUED = "rescued"
#: An operator retried the job while it ran: that run's outcome no longer counts.
RESTARTED = "restarted"

OUTCOMES = (COMPLETED, FAILED, DEAD, SNOOZED, INTERRUPTED, CANCELLED, RESCUED, RESTARTED)

#: The runtime's outcome of a run (`records.Outcome`) -> its attempt's outcome.
_BY_RUN_OUTCOME = {"retried": FAILED}


def kept(outcome: str | None) -> TypeGuard[str]:
    """Whether a store appends an attempt that ended with `outcome` to the job's attempts:
    not when there is none, nor for ``completed`` (its row says it: `unwritten_attempt`)."""
    return outcome is not None and outcome != COMPLETED


def attempt_outcome(run_outcome: str) -> str:
    """The attempt outcome kept for a run that ended with the runtime's `run_outcome`."""
    return _BY_RUN_OUTCOME.get(run_outcome, run_outcome)


# -- writing ---------------------------------------------------------------------------------
def bounded(message: str, limit: int = MESSAGE_CHARS) -> str:
    """`message`, cut to `limit` characters (the last one an ellipsis) when longer, with what
    no store can hold (a NUL, a lone surrogate) replaced (`bounds.storable_text`)."""
    message = storable_text(message)
    return message if len(message) <= limit else message[: limit - 1] + "…"


def progress_entry(done: object, total: object, message: object, at: datetime) -> dict[str, Any]:
    """The stored form of one `job.progress(done, total, message)` call made `at`; raises
    `TypeError` for a value that is not a number (or None for `total`, a string or None for
    `message`), and `ValueError` for a number that JSON cannot hold (NaN, infinities)."""
    for name, value, optional in (("done", done, False), ("total", total, True)):
        if value is None and optional:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"job.progress: {name} must be a number, got {value!r}")
        if (
            isinstance(value, float)
            and value != value
            or value
            in (
                float("inf"),
                float("-inf"),
            )
        ):
            raise ValueError(f"job.progress: {name} must be a finite number, got {value!r}")
    if message is not None and not isinstance(message, str):
        raise TypeError(f"job.progress: message must be a string or None, got {message!r}")
    return {
        "done": done,
        "total": total,
        "message": None if message is None else bounded(message),
        "at": at.isoformat(),
    }


def encode(value: object) -> str:
    """Compact JSON text, as the stores keep it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- reading ---------------------------------------------------------------------------------
TimeParser = Callable[[Any], datetime | None]


def parse_time(value: Any) -> datetime | None:
    """A stored time (ISO 8601 text, or a datetime) as an aware UTC datetime; a naive one is
    taken as UTC (what every store writes). None stays None; text that is not a time too."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _json(value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def decode_progress(raw: Any, parse: TimeParser = parse_time) -> dict[str, Any] | None:
    """`JobRecord.progress` from its stored JSON (None when the handler never reported)."""
    value = _json(raw)
    if not isinstance(value, Mapping):
        return None
    return {
        "done": value.get("done"),
        "total": value.get("total"),
        "message": value.get("message"),
        "at": parse(value.get("at")),
    }


def decode_logs(raw: Any, parse: TimeParser = parse_time) -> list[Mapping[str, Any]]:
    """`JobRecord.logs` from its stored JSON (oldest first)."""
    value = _json(raw)
    if not isinstance(value, list):
        return []
    return [
        {
            "attempt": line.get("attempt"),
            "at": parse(line.get("at")),
            "level": line.get("level"),
            "logger": line.get("logger"),
            "message": line.get("message"),
        }
        for line in value
        if isinstance(line, Mapping)
    ]


def decode_attempts(
    raw: Any,
    parse: TimeParser = parse_time,
    *,
    running: Mapping[str, Any] | None = None,
) -> list[Mapping[str, Any]]:
    """`JobRecord.attempts` from its stored JSON (the attempts that ended, oldest first),
    followed by `running` (see `unwritten_attempt`): the attempt running now, or the one that
    completed the job. Rows written before completed attempts were left out of the stored
    JSON end with that attempt already: it is not shown twice."""
    value = _json(raw)
    attempts: list[Mapping[str, Any]] = [
        {
            "attempt": entry.get("attempt"),
            "worker": entry.get("worker"),
            "started_at": parse(entry.get("started_at")),
            "finished_at": parse(entry.get("finished_at")),
            "outcome": entry.get("outcome"),
        }
        for entry in (value if isinstance(value, list) else [])
        if isinstance(entry, Mapping)
    ]
    if running is not None and not (
        running["outcome"] == COMPLETED
        and attempts
        and attempts[-1]["outcome"] == COMPLETED
        and attempts[-1]["attempt"] == running["attempt"]
    ):
        attempts.append(dict(running))
    return attempts


def unwritten_attempt(
    state: str,
    attempt: int,
    worker: str | None,
    started_at: datetime | None,
    finished_at: datetime | None = None,
) -> dict[str, Any] | None:
    """The entry of the attempt a job's row holds but its attempts do not: for a ``running``
    job the attempt running now (its end and outcome None), for a ``completed`` job the
    attempt that completed it (the stores append every other outcome, but not this one, the
    end of most jobs: the row's attempt number, claim's worker, `attempted_at` and
    `finished_at` say it all). Its number, the worker that claimed it and when it started.
    None for a job in any other state."""
    if state == "running":
        return {
            "attempt": attempt,
            "worker": worker,
            "started_at": started_at,
            "finished_at": None,
            "outcome": None,
        }
    if state == COMPLETED:
        return {
            "attempt": attempt,
            "worker": worker,
            "started_at": started_at,
            "finished_at": finished_at,
            "outcome": COMPLETED,
        }
    return None
