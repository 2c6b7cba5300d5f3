"""The SQL stores' durable execution (a mixin of `SQLStore`; see stores/durable.py): steps,
signals and the signal a job is parked for, in four nullable columns of the job table
(migration 0013). A plain job keeps them NULL, and no claim or finish reads them.

- ``steps``: a JSON array of ``[name, value, at]``, appended to in one fenced UPDATE (an
  array keeps the order recorded; a PostgreSQL ``jsonb`` object would not). Inside the
  caller's ``transaction.atomic()`` the UPDATE joins it: an atomic step's writes and its
  record commit together.
- ``signals``: ``{name: {"payload": value, "at": time}}``; ``signal_deadlines``: ``{name:
  time}``; ``awaiting``: the name the job is parked for. A signal's store and the wake-up
  of a job parked for it are one transaction, the row locked (SQLite: the write lock).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from anole_jobs.core import FINAL_STATES
from anole_jobs.stores.base import RunRef
from anole_jobs.stores.durable import (
    DurableState,
    iso,
    parse_iso,
    rewritten_steps,
    step_entry_json,
    steps_of,
)

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from django.db.backends.utils import CursorWrapper

FENCE = " WHERE id = %s AND attempt = %s AND claim_token = %s AND state = 'running'"


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value


class SQLDurable:
    """`Store.durable_state`, `record_step`, `rewrite_steps`, `await_signal`, `signal` and
    `wake_signalled`."""

    if TYPE_CHECKING:  # what it uses of `SQLStore`
        job_table: str
        json_parameter: str
        vendor: str

        def write_lock(self) -> AbstractContextManager[None]: ...
        def cursor(self) -> CursorWrapper: ...
        def encode_time(self, value: datetime | None) -> Any: ...
        def send_notify(self, queues: Sequence[str]) -> None: ...
        def wake_at_commit(self, queues: Collection[str]) -> None: ...

    def durable_state(self, job_id: int) -> DurableState | None:
        with self.cursor() as cursor:
            cursor.execute(
                f"SELECT steps, signals, signal_deadlines, awaiting FROM {self.job_table}"
                " WHERE id = %s",
                [job_id],
            )
            row = cursor.fetchone()
        if row is None:
            return None
        signals = _json(row[1]) or {}
        deadlines = _json(row[2]) or {}
        return DurableState(
            steps=steps_of(row[0]),
            signals={
                name: entry.get("payload") if isinstance(entry, dict) else None
                for name, entry in signals.items()
            },
            waits={name: parse_iso(at) for name, at in deadlines.items()},
            awaiting=row[3],
        )

    def _append_step(self) -> str:
        """The SET clause that appends one ``[name, value, at]`` (one parameter)."""
        if self.vendor == "postgresql":
            return "steps = COALESCE(steps, '[]'::jsonb) || jsonb_build_array(%s::jsonb)"
        return "steps = json_insert(COALESCE(steps, '[]'), '$[#]', json(%s))"

    def record_step(self, run: RunRef, *, name: str, value: str, at: datetime) -> bool:
        # The handler looked for the name before it ran the step, and only the run holding
        # the fence writes steps: an append never repeats a name.
        with self.cursor() as cursor:
            cursor.execute(
                f"UPDATE {self.job_table} SET {self._append_step()}{FENCE}",
                [step_entry_json(name, value, at), run.id, run.attempt, run.token],
            )
            return cursor.rowcount > 0

    def rewrite_steps(self, job_id: int, rewrite: Callable[[str], str]) -> bool:
        # Read and write in one transaction with the row locked (SQLite: the write lock), so
        # a step the job's run appends meanwhile waits and is kept.
        table = self.job_table
        with self.write_lock(), self.cursor() as cursor:
            cursor.execute(f"SELECT steps FROM {table} WHERE id = %s{self._lock()}", [job_id])
            row = cursor.fetchone()
            if row is None:
                return False
            steps = rewritten_steps(row[0], rewrite)
            if steps is not None:
                cursor.execute(
                    f"UPDATE {table} SET steps = {self.json_parameter} WHERE id = %s",
                    [json.dumps(steps), job_id],
                )
            return True

    def _lock(self) -> str:
        return " FOR UPDATE" if self.vendor == "postgresql" else ""

    def await_signal(self, run: RunRef, *, name: str | None, deadline: datetime | None) -> bool:
        table = self.job_table
        with self.write_lock(), self.cursor() as cursor:
            cursor.execute(
                f"SELECT signal_deadlines FROM {table}{FENCE}{self._lock()}",
                [run.id, run.attempt, run.token],
            )
            row = cursor.fetchone()
            if row is None:
                return False
            deadlines = _json(row[0]) or {}
            if name is not None and deadline is not None and name not in deadlines:
                deadlines[name] = iso(deadline)
            cursor.execute(
                f"UPDATE {table} SET awaiting = %s, signal_deadlines = {self.json_parameter}"
                f"{FENCE}",
                [name, json.dumps(deadlines), run.id, run.attempt, run.token],
            )
            return cursor.rowcount > 0

    def signal(self, job_id: int, *, name: str, payload: str, now: datetime) -> bool | None:
        table = self.job_table
        woken: str | None = None
        with self.write_lock(), self.cursor() as cursor:
            cursor.execute(
                f"SELECT state, signals, awaiting, queue FROM {table} WHERE id = %s{self._lock()}",
                [job_id],
            )
            row = cursor.fetchone()
            if row is None:
                return None
            state, stored, awaiting, queue = row
            signals = _json(stored) or {}
            if state in FINAL_STATES or name in signals:
                return False
            signals[name] = {"payload": json.loads(payload), "at": iso(now)}
            encoded = json.dumps(signals, ensure_ascii=False)
            if state == "scheduled" and awaiting == name:
                cursor.execute(
                    f"UPDATE {table} SET signals = {self.json_parameter}, state = 'available',"
                    " scheduled_at = %s WHERE id = %s",
                    [encoded, self.encode_time(now), job_id],
                )
                woken = queue
                self.send_notify([queue])  # delivered if this transaction commits
            else:
                cursor.execute(
                    f"UPDATE {table} SET signals = {self.json_parameter} WHERE id = %s",
                    [encoded, job_id],
                )
        if woken is not None:
            self.wake_at_commit({woken})
        return True

    def wake_signalled(self, job_id: int, *, now: datetime) -> bool:
        table = self.job_table
        with self.write_lock(), self.cursor() as cursor:
            cursor.execute(
                f"SELECT state, signals, awaiting, queue FROM {table} WHERE id = %s{self._lock()}",
                [job_id],
            )
            row = cursor.fetchone()
            if row is None:
                return False
            state, stored, awaiting, queue = row
            signals = _json(stored) or {}
            if state != "scheduled" or awaiting is None or awaiting not in signals:
                return False
            cursor.execute(
                f"UPDATE {table} SET state = 'available', scheduled_at = %s"
                " WHERE id = %s AND state = 'scheduled'",
                [self.encode_time(now), job_id],
            )
            if cursor.rowcount == 0:
                return False
            self.send_notify([queue])
        self.wake_at_commit({queue})
        return True
