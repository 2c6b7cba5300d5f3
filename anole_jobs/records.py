"""Public result types: `Enqueued`, `StepReport` and its `RunRecord`s, `QueueRecord`. Leaf
module."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["completed", "retried", "dead", "snoozed", "interrupted", "lost"]
OUTCOMES: tuple[Outcome, ...] = ("completed", "retried", "dead", "snoozed", "interrupted", "lost")


@dataclass(frozen=True)
class Enqueued:
    """What `enqueue` returns: the job's id, and False when a unique duplicate was returned.

    `id` is None only for ``on_commit=True`` on a memory or Redis store while the transaction
    is still open: the write happens at commit.
    """

    id: int | None
    inserted: bool


@dataclass(frozen=True)
class RunRecord:
    job_id: int
    kind: str
    queue: str
    attempt: int
    outcome: Outcome


@dataclass(frozen=True, kw_only=True)
class StepReport:
    """What one `jobs.step()` did."""

    runs: list[RunRecord] = field(default_factory=list)
    staged: int = 0
    rescued: int = 0
    pruned: int = 0
    cron_enqueued: int = 0
    leader: bool = False

    def outcomes(self) -> dict[int, Outcome]:
        """``{job_id: outcome}`` of this step's runs (the last run of each job)."""
        return {run.job_id: run.outcome for run in self.runs}


@dataclass(frozen=True, kw_only=True)
class QueueRecord:
    """One queue as `jobs.queues()` reports it: whether it is paused, and its jobs
    counted by state (``{state: n}``, states with none omitted)."""

    name: str
    paused: bool
    counts: Mapping[str, int]
