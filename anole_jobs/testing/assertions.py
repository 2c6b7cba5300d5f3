"""Assertions over what is enqueued, and `drain`, for tests in manual mode.

They read the store the settings configure, through the `jobs` facade, so they work the same
on every store. A failed assertion raises `AssertionError` listing the jobs it looked at, so a
test failure shows what *was* enqueued.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from anole_jobs.core import WAITING_STATES
from anole_jobs.testing.clock import FakeClock

if TYPE_CHECKING:
    from anole_jobs.api import JobsFacade
    from anole_jobs.core import JobRecord

#: The states of a job that has not run to its end yet and is not running: what "enqueued"
#: means to these helpers unless a test asks for another state.
PAGE = 1000
#: A failure message lists at most this many jobs (and says how many it left out).
SHOWN = 25


def _facade() -> JobsFacade:
    from anole_jobs.api import jobs

    return jobs


def _kind_name(kind_or_type: object) -> str:
    if isinstance(kind_or_type, str) and kind_or_type:
        return kind_or_type
    if isinstance(kind_or_type, type):
        from anole_jobs.kinds import spec_of

        return spec_of(kind_or_type).name
    raise TypeError(
        f"expected a kind name (str) or an args dataclass decorated with @kind, "
        f"got {kind_or_type!r}"
    )


def _states(state: str | None) -> tuple[str, ...]:
    if state is None:
        return WAITING_STATES
    from anole_jobs.core import STATES

    if state not in STATES:
        raise ValueError(f"unknown state {state!r}; states are {', '.join(STATES)}")
    return (state,)


def _records(
    states: tuple[str, ...], *, kind: str | None = None, queue: str | None = None
) -> list[JobRecord]:
    """Every job in `states` (optionally of one kind and queue), oldest first."""
    jobs = _facade()
    found: list[JobRecord] = []
    for state in states:
        after = None
        while True:
            page = jobs.list(state=state, kind=kind, queue=queue, limit=PAGE, after=after)
            found.extend(page)
            if len(page) < PAGE:
                break
            after = page[-1].id
    found.sort(key=lambda record: record.id)
    return found


def _expected_args(args: object) -> dict[str, Any] | None:
    if args is None:
        return None
    from anole_jobs import codec

    if dataclasses.is_dataclass(args) and not isinstance(args, type):
        return codec.encode_args(args)
    if not isinstance(args, Mapping):
        raise TypeError(
            f"args must be a dict (a subset of the stored arguments) or an args dataclass "
            f"instance, got {type(args).__name__}"
        )
    encoded: dict[str, Any] = codec.encode_value(dict(args), name="args")
    return encoded


def _args_match(stored: Mapping[str, Any], expected: Mapping[str, Any] | None) -> bool:
    if expected is None:
        return True
    return all(key in stored and stored[key] == value for key, value in expected.items())


def _describe(record: JobRecord) -> str:
    return (
        f"  #{record.id} {record.kind} queue={record.queue} state={record.state} "
        f"attempt={record.attempt}/{record.max_attempts} "
        f"scheduled_at={record.scheduled_at.isoformat()} args={dict(record.args)!r}"
    )


def _listing(records: list[JobRecord], where: str) -> str:
    if not records:
        return f"no jobs {where}"
    lines = [f"{len(records)} job(s) {where}:"]
    lines.extend(_describe(record) for record in records[:SHOWN])
    if len(records) > SHOWN:
        lines.append(f"  ... and {len(records) - SHOWN} more")
    return "\n".join(lines)


def _wanted(kind: str, queue: str | None, args: Mapping[str, Any] | None, states: tuple) -> str:
    parts = [f"kind {kind!r}"]
    if queue is not None:
        parts.append(f"queue {queue!r}")
    if args is not None:
        parts.append(f"args including {args!r}")
    parts.append("state " + " or ".join(states))
    return ", ".join(parts)


def _matching(
    kind_or_type: object, queue: str | None, args: object, state: str | None
) -> tuple[list[JobRecord], list[JobRecord], str]:
    """(matching jobs, every job in the asked states, a description of what was asked)."""
    kind = _kind_name(kind_or_type)
    states = _states(state)
    expected = _expected_args(args)
    seen = _records(states)
    matches = [
        record
        for record in seen
        if record.kind == kind
        and (queue is None or record.queue == queue)
        and _args_match(record.args, expected)
    ]
    return matches, seen, _wanted(kind, queue, expected, states)


def assert_enqueued(
    kind_or_type: str | type,
    *,
    queue: str | None = None,
    args: Mapping[str, Any] | object | None = None,
    state: str | None = None,
) -> JobRecord:
    """Assert that exactly one job matches and return its record.

    A job matches when it has the kind (a name, or an args dataclass decorated with `@kind`),
    the `queue` if given, stored arguments that include every key of `args` with an equal
    value (an args instance must match in full), and is waiting — pending (a workflow step),
    scheduled, available or retrying — or in `state` when given.
    """
    matches, seen, wanted = _matching(kind_or_type, queue, args, state)
    if len(matches) != 1:
        found = "no job" if not matches else f"{len(matches)} jobs"
        raise AssertionError(
            f"expected exactly one job with {wanted}; found {found}.\n"
            + _listing(seen, "in those states")
        )
    return matches[0]


def refute_enqueued(
    kind_or_type: str | type,
    *,
    queue: str | None = None,
    args: Mapping[str, Any] | object | None = None,
    state: str | None = None,
) -> None:
    """Assert that no job matches (same filters as `assert_enqueued`)."""
    matches, _, wanted = _matching(kind_or_type, queue, args, state)
    if matches:
        raise AssertionError(
            f"expected no job with {wanted}; found {len(matches)}.\n"
            + _listing(matches, "matching")
        )


def all_enqueued(
    kind_or_type: str | type | None = None, *, queue: str | None = None
) -> list[JobRecord]:
    """Every waiting job (pending, scheduled, available or retrying), oldest first, optionally only
    those of one kind and/or queue."""
    kind = None if kind_or_type is None else _kind_name(kind_or_type)
    return _records(WAITING_STATES, kind=kind, queue=queue)


def _next_scheduled_at(jobs: JobsFacade) -> Any:
    pending = _records(("scheduled", "retrying"))
    return min((record.scheduled_at for record in pending), default=None)


def drain(*, advance: bool = True, max_steps: int = 100) -> dict[str, int]:
    """Run `jobs.step()` until nothing is due and return how many runs ended in each outcome.

    With `advance` (the default) and a `FakeClock` as `CLOCK`, when a step runs nothing the
    clock moves to the next scheduled or retrying job, so delayed jobs and retries run too.
    Raises `AssertionError` when jobs are still due after `max_steps` steps (a job that
    snoozes forever, say). The result is a `Counter`: a missing outcome reads as 0.
    """
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
    jobs = _facade()
    clock = inspect.unwrap(jobs.service.clock)  # conf wraps CLOCK in a check
    outcomes: Counter[str] = Counter()
    for _ in range(max_steps):
        report = jobs.step()
        outcomes.update(run.outcome for run in report.runs)
        if report.runs:
            continue
        if not advance or not isinstance(clock, FakeClock):
            return outcomes
        upcoming = _next_scheduled_at(jobs)
        if upcoming is None or upcoming <= clock():
            # Nothing later to move to (a due job that did not run waits for something a step
            # cannot give it: a handler, a configured queue, a resume).
            return outcomes
        clock.set(upcoming)
    left = _records(WAITING_STATES)
    raise AssertionError(
        f"drain: jobs were still running after {max_steps} steps "
        f"(outcomes so far: {dict(outcomes)}).\n" + _listing(left, "still waiting")
    )


def _all_ids(jobs: JobsFacade) -> Iterator[int]:
    after = None
    while True:
        page = jobs.list(limit=PAGE, after=after)
        yield from (record.id for record in page)
        if len(page) < PAGE:
            return
        after = page[-1].id


def empty_store() -> int:
    """Delete every job of the configured store and resume paused queues; return how many
    jobs were deleted. The `anole_jobs` fixture calls it before and after each test."""
    jobs = _facade()
    ids = list(_all_ids(jobs))
    for job_id in ids:
        jobs.delete(job_id)
    for queue in jobs.queues():
        if queue.paused:
            jobs.resume(queue.name)
    return len(ids)
