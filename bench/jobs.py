"""The bench's job kinds, autodiscovered like any installed app's `jobs` module."""

from __future__ import annotations

from dataclasses import dataclass

from anole_jobs import Job, jobs, kind


@kind("bench.noop", attempts=3)
@dataclass
class Noop:
    """A job that does nothing: what is measured is the queue, not the handler."""

    n: int = 0


@jobs.handler(Noop)
def noop(job: Job, args: Noop) -> None:
    return None
