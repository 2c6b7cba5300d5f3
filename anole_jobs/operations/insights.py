"""What went wrong, grouped, and how each kind of job fares: read models for the dashboard's
Errors and Kinds pages, from the newest jobs (never a scan of the whole store).

- `top_errors`: the failed jobs (dead, and retrying after a failure) grouped by their last
  error's type and the first line of its message, numbers aside (``invoice 907`` and
  ``invoice 914`` are one group), most frequent first. Each group carries the
  filter that lists its jobs (``state`` and ``error``, the jobs list's "last error contains"),
  so the jobs list and the bulk actions act on that group.
- `kinds`: per kind, the jobs by state, how many failed, and the run time of its completed
  jobs (from the claim of the last attempt to the end), among the newest jobs.

- `recent_workflows`: the workflows the newest jobs belong to, with their progress.

Each says how many jobs it looked at (`looked`), and whether older ones were left out.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from anole_jobs.api import jobs
from anole_jobs.core import LIST_LIMIT_MAX, JobRecord
from anole_jobs.operations.display import display_kind
from anole_jobs.operations.listing import SEARCH_TEXT_MAX
from anole_jobs.workflows import WorkflowRecord

#: Failed jobs `top_errors` reads per state, newest first.
ERRORS_WINDOW = 2_000
#: Jobs `kinds` reads, newest first.
KINDS_WINDOW = 2_000
#: How much of a message a group keeps (its first line, at most this many characters).
MESSAGE_MAX = 300
FAILED_STATES = ("dead", "retrying")


def _newest(state: str | None, count: int) -> tuple[list[JobRecord], bool]:
    """Up to `count` newest jobs in `state`, and whether older ones were left out."""
    found: list[JobRecord] = []
    after = None
    while len(found) < count:
        want = min(LIST_LIMIT_MAX, count - len(found))
        page = jobs.list(state=state, limit=want, after=after)
        found.extend(page)
        if len(page) < want:
            return found, False
        after = page[-1].id
    return found, bool(jobs.list(state=state, limit=1, after=found[-1].id))


#: Runs of digits in a message: what differs between the failures of one cause (an id, a
#: count, a code), so a group holds them all.
_NUMBERS = re.compile(r"\d+")


def _common_prefix(a: str, b: str) -> str:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return a[:size]


@dataclass
class ErrorGroup:
    type: str
    #: The first line of the message with each number written ``N``.
    message: str
    #: The longest text every job of the group's last error starts with ("<type>: <message>").
    common: str = ""
    count: int = 0
    states: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    queues: Counter[str] = field(default_factory=Counter)
    latest_id: int = 0
    latest_at: datetime | None = None

    @property
    def search(self) -> str:
        """The jobs list's "last error contains" text of this group: the text its jobs' last
        errors all start with (it may match a few more, which the bulk pages count)."""
        text = self.common.strip() or self.type
        return text.replace("\x00", "")[:SEARCH_TEXT_MAX]

    def add(self, text: str) -> None:
        self.common = text if self.count == 0 else _common_prefix(self.common, text)
        self.count += 1

    @property
    def only_state(self) -> str | None:
        return next(iter(self.states)) if len(self.states) == 1 else None


@dataclass(frozen=True)
class ErrorReport:
    groups: list[ErrorGroup]
    looked: int
    more: bool


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= MESSAGE_MAX else line[: MESSAGE_MAX - 1] + "…"


def top_errors(window: int = ERRORS_WINDOW) -> ErrorReport:
    groups: dict[tuple[str, str], ErrorGroup] = {}
    looked, more = 0, False
    for state in FAILED_STATES:
        records, left = _newest(state, window)
        looked += len(records)
        more = more or left
        for record in records:
            if not record.errors:
                continue
            last = record.errors[-1]
            kind = str(last.get("type") or "Error")
            line = _first_line(str(last.get("message") or ""))
            key = (kind, _NUMBERS.sub("N", line))
            group = groups.get(key) or groups.setdefault(key, ErrorGroup(*key))
            group.add(f"{kind}: {line}" if line else kind)
            group.states[record.state] += 1
            group.kinds[display_kind(record.kind, record.args)] += 1
            group.queues[record.queue] += 1
            if record.id > group.latest_id:
                group.latest_id = record.id
                group.latest_at = record.finished_at or record.attempted_at or record.created_at
    ordered = sorted(groups.values(), key=lambda g: (-g.count, -g.latest_id))
    return ErrorReport(ordered, looked, more)


@dataclass
class KindRow:
    kind: str
    states: Counter[str] = field(default_factory=Counter)
    failed: int = 0  # dead, or retrying after a failure
    runs_ms: list[float] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.states.values())

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.runs_ms) if self.runs_ms else None

    @property
    def longest_ms(self) -> float | None:
        return max(self.runs_ms) if self.runs_ms else None

    @property
    def failure_rate(self) -> float | None:
        ended = self.states.get("completed", 0) + self.failed
        return self.failed / ended if ended else None


@dataclass(frozen=True)
class KindReport:
    rows: list[KindRow]
    looked: int
    more: bool


def kinds(window: int = KINDS_WINDOW) -> KindReport:
    records, more = _newest(None, window)
    rows: dict[str, KindRow] = {}
    for record in records:
        name = display_kind(record.kind, record.args)
        row = rows.get(name) or rows.setdefault(name, KindRow(name))
        row.states[record.state] += 1
        if record.state in FAILED_STATES:
            row.failed += 1
        if record.state == "completed" and record.attempted_at and record.finished_at:
            row.runs_ms.append((record.finished_at - record.attempted_at).total_seconds() * 1000)
    ordered = sorted(rows.values(), key=lambda r: (-r.total, r.kind))
    return KindReport(ordered, len(records), more)


# -- workflows ----------------------------------------------------------------------------------

#: Jobs `recent_workflows` reads to find workflows, newest first; and the most it shows.
WORKFLOWS_WINDOW = 2_000
WORKFLOWS_SHOWN = 50
ENDED = ("completed", "dead", "cancelled")


@dataclass(frozen=True)
class WorkflowRow:
    record: WorkflowRecord
    steps: int
    ended: int

    @property
    def percent(self) -> int:
        return round(100 * self.ended / self.steps) if self.steps else 100


@dataclass(frozen=True)
class WorkflowReport:
    rows: list[WorkflowRow]
    looked: int
    more: bool


def recent_workflows(
    window: int = WORKFLOWS_WINDOW, shown: int = WORKFLOWS_SHOWN, state: str | None = None
) -> WorkflowReport:
    """The workflows of the newest jobs, newest first: state, steps ended of all, age."""
    records, more = _newest(None, window)
    ids: dict[str, None] = {}
    for record in records:
        if record.workflow_id:
            ids.setdefault(record.workflow_id)
    rows = []
    for workflow_id in ids:
        found = jobs.workflow(workflow_id)
        if found is None or (state is not None and found.state != state):
            continue
        total = sum(found.counts.values())
        ended = sum(found.counts.get(name, 0) for name in ENDED)
        rows.append(WorkflowRow(found, total, ended))
        if len(rows) >= shown:
            break
    rows.sort(key=lambda row: row.record.created_at, reverse=True)
    return WorkflowReport(rows, len(records), more)
