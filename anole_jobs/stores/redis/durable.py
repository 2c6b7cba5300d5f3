"""The Redis store's durable execution (a mixin of `RedisStore`; see stores/durable.py), in
the job's own hash, so every script that deletes or prunes a job deletes them with it:

- ``steps``: a JSON array of ``[name, value, at]`` kept as text (record_step.lua appends to
  it without decoding, so values come back exactly as written);
- ``sig:<name>``: a signal's payload (JSON); ``wait:<name>``: the deadline kept for an
  awaited signal name (a time key); ``awaiting``: the name the job is parked for.

signal.lua stores a signal and wakes a job parked for it in one script.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from anole_jobs.stores.base import RunRef
from anole_jobs.stores.durable import DurableState, rewritten_steps, step_entry_json, steps_of
from anole_jobs.stores.redis.keys import parse_time_key, time_key
from anole_jobs.stores.redis.records import as_text

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from anole_jobs.stores.redis.keys import Keys


def _ascii(text: str) -> str:
    # redis-py encodes str as strict UTF-8, which a lone surrogate would break: re-encode
    # JSON text with ASCII escapes (its value is the same).
    return json.dumps(json.loads(text), separators=(",", ":"))


class RedisDurable:
    """`Store.durable_state`, `record_step`, `rewrite_steps`, `await_signal`, `signal` and
    `wake_signalled`."""

    if TYPE_CHECKING:  # what it uses of `RedisStore`
        keys: Keys

        def _run(self, script: str, *args: object) -> Any: ...
        def _read(self, method: str, *args: object) -> Any: ...
        def wake(self, queues: Collection[str]) -> None: ...

    def durable_state(self, job_id: int) -> DurableState | None:
        flat = self._read("hgetall", self.keys.job(job_id))
        if not flat:
            return None
        signals: dict[str, Any] = {}
        waits: dict[str, datetime] = {}
        steps: Any = None
        awaiting: str | None = None
        for raw, value in flat.items():
            field = as_text(raw)
            if field == "steps":
                steps = as_text(value)
            elif field == "awaiting":
                awaiting = as_text(value)
            elif field.startswith("sig:"):
                signals[field[4:]] = json.loads(value)
            elif field.startswith("wait:"):
                waits[field[5:]] = parse_time_key(value)
        return DurableState(steps=steps_of(steps), signals=signals, waits=waits, awaiting=awaiting)

    def record_step(self, run: RunRef, *, name: str, value: str, at: datetime) -> bool:
        entry = _ascii(step_entry_json(name, value, at))
        return self._run("record_step", run.id, run.attempt, run.token, entry) == 1

    def rewrite_steps(self, job_id: int, rewrite: Callable[[str], str]) -> bool:
        # Read, rewrite here (the keys are this process's), then write only if no step was
        # recorded in between; a step recorded meanwhile means reading again.
        while True:
            read = self._read("hget", self.keys.job(job_id), "steps")
            stored = "" if read is None else as_text(read)
            steps = rewritten_steps(stored, rewrite) if stored else None
            new = stored if steps is None else json.dumps(steps, separators=(",", ":"))
            written = int(self._run("rewrite_steps", job_id, stored, new))
            if written != 0:
                return written == 1

    def await_signal(self, run: RunRef, *, name: str | None, deadline: datetime | None) -> bool:
        return (
            self._run(
                "await_signal",
                run.id,
                run.attempt,
                run.token,
                name if name is not None else "",
                time_key(deadline) if deadline is not None and name is not None else "",
            )
            == 1
        )

    def signal(self, job_id: int, *, name: str, payload: str, now: datetime) -> bool | None:
        code, queue = self._run("signal", job_id, name, _ascii(payload), time_key(now))
        if int(code) < 0:
            return None
        if int(code) == 2:
            self.wake([as_text(queue)])
        return int(code) > 0

    def wake_signalled(self, job_id: int, *, now: datetime) -> bool:
        queue = as_text(self._run("wake_signalled", job_id, time_key(now)))
        if queue:
            self.wake([queue])
        return bool(queue)
