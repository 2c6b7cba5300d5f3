"""A job as the Redis store holds it (a hash of `keys.RECORD_FIELDS`) read back into a
`JobRecord`: the one decoding the store and its limits part share."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from anole_jobs import timeline
from anole_jobs.core import JobRecord
from anole_jobs.stores.durable import record_steps, steps_of
from anole_jobs.stores.redis.keys import RECORD_FIELDS, parse_time_key


def as_text(value: bytes | str) -> str:
    """A Redis reply (bytes, or str with decode_responses) as text."""
    return value.decode() if isinstance(value, bytes) else value


def optional_time(fields: Mapping[str, bytes | str], name: str) -> datetime | None:
    value = fields.get(name)
    return parse_time_key(value) if value else None


def fields_of(encoded: bytes | str) -> dict[str, bytes | str]:
    """A record as the scripts return it (a JSON array of RECORD_FIELDS) as a field mapping."""
    values = json.loads(encoded)
    return {f: v for f, v in zip(RECORD_FIELDS, values, strict=True) if v is not None}


def record_of(fields: Mapping[str, bytes | str]) -> JobRecord:
    """A job's fields (its hash, or `fields_of` a script's reply) as a `JobRecord`."""
    unique_key = fields.get("ukey")
    return JobRecord(
        id=int(fields["id"]),
        kind=as_text(fields["kind"]),
        queue=as_text(fields["queue"]),
        state=as_text(fields["state"]),  # type: ignore[arg-type]
        args=stored_json(fields.get("args"), fallback=None),
        meta=stored_json(fields.get("meta"), fallback={}),
        priority=int(fields["priority"]),
        attempt=int(fields["attempt"]),
        max_attempts=int(fields["max"]),
        errors=tuple(stored_json(fields.get("errors"), fallback=[])),
        created_at=parse_time_key(fields["created"]),
        scheduled_at=parse_time_key(fields["sched"]),
        attempted_at=optional_time(fields, "attempted"),
        finished_at=optional_time(fields, "finished"),
        unique_key=None if unique_key is None else as_text(unique_key),
        result=stored_json(fields.get("result"), fallback=None),
        workflow_id=as_text(fields["wf"]) if fields.get("wf") else None,
        step_name=as_text(fields["step"]) if fields.get("step") is not None else None,
        steps=record_steps(steps_of(fields.get("steps"))) if fields.get("steps") else {},
        version=int(fields.get("ver") or 1),
    )


def with_timeline(record: JobRecord, fields: Mapping[str, bytes | str]) -> JobRecord:
    """`record` with its timeline, from the job's hash (`get` reads it whole)."""
    worker = fields.get("worker")
    running = timeline.unwritten_attempt(
        record.state,
        record.attempt,
        None if worker is None else as_text(worker),
        record.attempted_at,
        record.finished_at,
    )
    return replace(
        record,
        progress=timeline.decode_progress(fields.get("progress")),
        logs=timeline.decode_logs(fields.get("logs")),
        attempts=timeline.decode_attempts(fields.get("attempts"), running=running),
    )


def stored_json(value: bytes | str | None, *, fallback: Any) -> Any:
    """A JSON field as stored. A field missing or not JSON (written behind the store's back)
    reads as its raw text (`fallback` when absent or None): the worker then discards the job
    with a message instead of every claim failing on it."""
    if value is None:
        return fallback
    try:
        return json.loads(value)
    except ValueError:
        return as_text(value) if fallback is None else fallback
