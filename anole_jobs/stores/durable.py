"""Durable execution as the stores keep it: a job's recorded steps, its signals and the signal
it waits for (see docs/durable.md). Values shared by every store; imports nothing above the
store layer.

- A step is ``(name, value, at)``: its JSON value (as text when written) and when it was
  recorded. Steps keep the order they were recorded in (a JSON array, never an object: a
  PostgreSQL ``jsonb`` object reorders its keys). Sleeps are steps too (their value is the
  wake-up time).
- A signal is ``name -> payload`` (JSON), stored once per name.
- ``waits`` holds, per signal name, the deadline of the first `wait_for_signal` of that name,
  so a rerun keeps it; ``awaiting`` is the name the job is parked for (None when none). A
  signal of that name sent while the job is ``scheduled`` makes it ``available`` in the same
  write that stores it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True, kw_only=True)
class StepEntry:
    """One recorded step: its name, its JSON value (decoded) and when it was recorded."""

    name: str
    value: Any
    at: datetime


@dataclass(frozen=True, kw_only=True)
class DurableState:
    """What a job's durable calls read back: its steps in order, its signals' payloads, the
    deadline recorded per awaited signal name, and the name it is parked for."""

    steps: tuple[StepEntry, ...] = ()
    signals: Mapping[str, Any] = field(default_factory=dict)
    waits: Mapping[str, datetime] = field(default_factory=dict)
    awaiting: str | None = None

    def step_map(self) -> dict[str, StepEntry]:
        """The steps by name (the first record of a name wins)."""
        found: dict[str, StepEntry] = {}
        for entry in self.steps:
            found.setdefault(entry.name, entry)
        return found


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def parse_iso(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def step_entry_json(name: str, value: str, at: datetime) -> str:
    """One step as the JSON array ``[name, value, at]`` (`value` is JSON text already)."""
    return f"[{json.dumps(name)},{value},{json.dumps(iso(at))}]"


def steps_of(stored: Any) -> tuple[StepEntry, ...]:
    """Steps as the SQL and Redis stores keep them (a JSON array of ``[name, value, at]``,
    as text or decoded) back as entries, the first record of a name only (an append never
    repeats one, see `Store.record_step`); anything else reads as none."""
    if stored is None:
        return ()
    if isinstance(stored, (str, bytes)):
        try:
            stored = json.loads(stored)
        except ValueError:
            return ()
    if not isinstance(stored, list):
        return ()
    entries = []
    seen: set[str] = set()
    for item in stored:
        if (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], str)
            and item[0] not in seen
        ):
            seen.add(item[0])
            try:
                at = parse_iso(item[2])
            except (TypeError, ValueError):
                continue
            entries.append(StepEntry(name=item[0], value=item[1], at=at))
    return tuple(entries)


def rewritten_steps(stored: Any, rewrite: Callable[[str], str]) -> list[Any] | None:
    """The steps array as stored (text or decoded) with each step's value replaced by
    `rewrite` of its compact JSON text, or None when `rewrite` changed none (or nothing that
    reads as steps is stored). For `Store.rewrite_steps`."""
    if isinstance(stored, (str, bytes)):
        try:
            stored = json.loads(stored)
        except ValueError:
            return None
    if not isinstance(stored, list):
        return None
    changed = False
    steps: list[Any] = []
    for item in stored:
        if isinstance(item, list) and len(item) == 3:
            text = json.dumps(item[1], separators=(",", ":"))
            new = rewrite(text)
            if new != text:
                item, changed = [item[0], json.loads(new), item[2]], True
        steps.append(item)
    return steps if changed else None


def record_steps(entries: Sequence[StepEntry]) -> dict[str, dict[str, Any]]:
    """`JobRecord.steps`: ``{name: {"result": value, "at": datetime}}`` in recorded order."""
    steps: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if entry.name not in steps:
            steps[entry.name] = {"result": entry.value, "at": entry.at}
    return steps
