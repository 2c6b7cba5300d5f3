"""The shared table of limit scenarios (`limit_scenarios.py`) run against the Python planner
directly and against every store's `claim_limited` (through its public methods only: the
past claims are made by claims, the finished ones by fenced finishes), so that the planner's
three implementations (Python, PostgreSQL's function, the Redis script) cannot drift."""

from __future__ import annotations

from datetime import timedelta

import pytest

from anole_jobs.limits import Limits, Planner, RateLimit
from anole_jobs.stores.base import Finish
from tests.contract.limit_scenarios import SCENARIOS, Scenario
from tests.sampleapp.jobs import Work

#: Past claims hold their jobs for longer than any scenario looks back.
LEASE = timedelta(hours=1)
#: Seconds between the enqueue and the claim under test (more than any `Past.ago`).
LATER = 200.0

by_name = pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])


@by_name
def test_the_python_planner(scenario: Scenario) -> None:
    limits = scenario.limits
    now = 1_000_000.0
    running: dict[str, int] = {}
    window: dict[str, list[float]] = {}
    for past in scenario.past:
        key = limits.key({"tag": past.tag})
        if not past.finished:
            running[key] = running.get(key, 0) + 1
        window.setdefault(key, []).append(now - past.ago)
    planner = Planner(limits, now=now, want=scenario.want, running=running, window=window)
    planner.offer((i, limits.key({"tag": tag})) for i, tag in enumerate(scenario.available))
    plan = planner.finish()
    reopens_in = None if plan.reopens_at is None else plan.reopens_at - now
    assert (tuple(plan.taken), plan.held, reopens_in) == (
        scenario.taken,
        scenario.held,
        scenario.reopens_in,
    )


def _past_limits(limits: Limits) -> Limits:
    """Limits of the same kinds as the scenario's, large enough to let every past claim
    through, so that each is recorded where the claim under test reads it: in the rate
    window of the same period and among the running jobs (the Redis store counts those its
    limited claims took), per the same partition."""
    rate = limits.rate_limit
    return Limits(
        global_concurrency=1_000_000,
        rate_limit=None if rate is None else RateLimit(1_000_000, rate.period),
        partition=limits.partition,
    )


@by_name
def test_every_store_claim_limited(env, scenario: Scenario) -> None:
    queues = dict(env.settings.ANOLE_JOBS["QUEUES"])
    queues["default"] = {**queues.get("default", {}), **scenario.options}
    env.configure(QUEUES=queues)
    limits = env.jobs.service.settings.queues["default"].limits
    assert limits == scenario.limits
    store = env.store
    start = env.clock()
    past = sorted(scenario.past, key=lambda p: -p.ago)  # claimed oldest first
    enqueued = env.jobs.enqueue_many(
        [Work(tag=p.tag) for p in past] + [Work(tag=tag) for tag in scenario.available]
    )
    available = [e.id for e in enqueued[len(past) :]]
    claim_at = start + timedelta(seconds=LATER)
    for each in past:
        now = claim_at - timedelta(seconds=each.ago)
        env.clock.set(now)
        (claimed,) = store.claim_limited(
            "default",
            limits=_past_limits(limits),
            kinds=None,
            limit=1,
            now=now,
            lease_until=claim_at + LEASE,
            worker="past",
        ).jobs
        if each.finished:
            assert store.finish([Finish(run=claimed.run, state="completed", at=now)]) == [True]
    env.clock.set(claim_at)
    result = store.claim_limited(
        "default",
        limits=limits,
        kinds=None,
        limit=scenario.want,
        now=claim_at,
        lease_until=claim_at + LEASE,
        worker="w",
    )
    taken = tuple(available.index(job.record.id) for job in result.jobs)
    reopens_in = (
        None if result.reopens_at is None else (result.reopens_at - claim_at).total_seconds()
    )
    assert (taken, result.held, reopens_in) == (
        scenario.taken,
        scenario.held,
        scenario.reopens_in,
    )
