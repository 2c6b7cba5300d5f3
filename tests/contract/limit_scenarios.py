"""One table of queue-limit scenarios that every implementation of the limits plan must agree
on: the Python `Planner` (`anole_jobs/limits.py`, used by the memory store and the partitioned
SQL claim), PostgreSQL's claim function and the Redis claim script. `test_limit_scenarios.py`
runs each row against the planner directly and against every store's `claim_limited`, so a
change to one of the three that the others do not make fails here.

A row: the queue's limit options (as in `QUEUES`), the claims made before (`Past`: the
partition value of the job claimed, how many seconds before the claim under test, and whether
that job has finished since), the available jobs in claim order (their partition values),
how many jobs the claim asks for, and what it must answer: the indexes of the available jobs
it takes, whether a limit held one back, and in how many seconds a rate window reopens (None
when only a finish makes room, or nothing was held).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anole_jobs.limits import Limits, parse_concurrency, parse_partition, parse_rate


@dataclass(frozen=True)
class Past:
    """A job claimed `ago` seconds before the claim under test, finished since or not."""

    tag: str
    ago: float
    finished: bool = False


@dataclass(frozen=True)
class Scenario:
    name: str
    options: dict[str, Any]
    past: tuple[Past, ...]
    available: tuple[str, ...]
    want: int
    taken: tuple[int, ...]
    held: bool
    reopens_in: float | None = None

    @property
    def limits(self) -> Limits:
        """The options as the store receives them (parsed as the settings parse them)."""
        options = self.options
        return Limits(
            global_concurrency=(
                parse_concurrency(options["global_concurrency"])
                if "global_concurrency" in options
                else None
            ),
            rate_limit=parse_rate(options["rate_limit"]) if "rate_limit" in options else None,
            partition=parse_partition(options["partition"]) if "partition" in options else (),
        )


SCENARIOS = [
    Scenario(
        "a concurrency limit takes up to its count and holds the rest",
        {"global_concurrency": 2},
        past=(),
        available=("", "", "", "", ""),
        want=10,
        taken=(0, 1),
        held=True,
    ),
    Scenario(
        "running jobs count against the concurrency, finished ones do not",
        {"global_concurrency": 3},
        past=(Past("", 5), Past("", 4, finished=True), Past("", 3)),
        available=("", "", ""),
        want=10,
        taken=(0,),
        held=True,
    ),
    Scenario(
        "a full concurrency takes nothing",
        {"global_concurrency": 2},
        past=(Past("", 5), Past("", 4)),
        available=("", ""),
        want=10,
        taken=(),
        held=True,
    ),
    Scenario(
        "a claim that asks for less than the room holds nothing back",
        {"global_concurrency": 5},
        past=(),
        available=("", "", "", ""),
        want=2,
        taken=(0, 1),
        held=False,
    ),
    Scenario(
        "a claim that stops at exactly the room does not look past it",
        {"global_concurrency": 2},
        past=(),
        available=("", "", ""),
        want=2,
        taken=(0, 1),
        held=False,
    ),
    Scenario(
        "a rate counts finished claims of its window and reopens when the oldest leaves",
        {"rate_limit": "3/m"},
        past=(Past("", 20, finished=True), Past("", 20, finished=True)),
        available=("", "", ""),
        want=10,
        taken=(0,),
        held=True,
        reopens_in=40,
    ),
    Scenario(
        "a claim older than the period has left the window",
        {"rate_limit": "3/m"},
        past=(Past("", 61, finished=True), Past("", 30, finished=True)),
        available=("", "", "", ""),
        want=10,
        taken=(0, 1),
        held=True,
        reopens_in=30,
    ),
    Scenario(
        "a claim exactly one period old is out of the window",
        {"rate_limit": "1/m"},
        past=(Past("", 60, finished=True),),
        available=("", ""),
        want=10,
        taken=(0,),
        held=True,
        reopens_in=60,
    ),
    Scenario(
        "a rate with room takes what it asked for and holds nothing",
        {"rate_limit": "5/s"},
        past=(Past("", 0.5, finished=True),),
        available=("", "", ""),
        want=3,
        taken=(0, 1, 2),
        held=False,
    ),
    Scenario(
        "a full concurrency holds with no reopening even when the rate is full too",
        {"global_concurrency": 1, "rate_limit": (2, 10)},
        past=(Past("", 6, finished=True), Past("", 5)),
        available=("", ""),
        want=10,
        taken=(),
        held=True,
    ),
    Scenario(
        "a rate alone holds: it reopens when its oldest claim leaves the window",
        {"global_concurrency": 1, "rate_limit": (2, 10)},
        past=(Past("", 5, finished=True), Past("", 3, finished=True)),
        available=("", ""),
        want=10,
        taken=(),
        held=True,
        reopens_in=5,
    ),
    Scenario(
        "a concurrency per partition: other partitions go on",
        {"global_concurrency": 1, "partition": "tag"},
        past=(Past("a", 5),),
        available=("a", "b", "a", "c", "b"),
        want=10,
        taken=(1, 3),
        held=True,
    ),
    Scenario(
        "a rate per partition reopens at the earliest partition's window",
        {"rate_limit": "1/m", "partition": "tag"},
        past=(Past("b", 30, finished=True),),
        available=("a", "a", "b", "c"),
        want=10,
        taken=(0, 3),
        held=True,
        reopens_in=30,
    ),
    Scenario(
        "a partitioned concurrency and rate together",
        {"global_concurrency": 2, "rate_limit": (2, 60), "partition": "tag"},
        past=(Past("a", 50), Past("b", 40, finished=True), Past("b", 30, finished=True)),
        available=("a", "a", "b", "c", "c", "c"),
        want=10,
        taken=(0, 3, 4),
        held=True,
        reopens_in=20,
    ),
]
