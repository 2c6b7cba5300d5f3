"""A Hypothesis state machine of concurrent claimers under a random fake clock: whatever the
interleaving of enqueues, limited claims (each with the time its claimer read, which may be a
little behind a claim already made), finishes and clock moves, no limit is ever exceeded.

Checked after every step, per partition: the jobs claimed and not finished stay at most
`global_concurrency`; and no window of the rate's period holds more claims, by their own
times, than the rate. Each example works on a queue of its own, so one store serves them all.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from anole_jobs.limits import Limits, RateLimit
from anole_jobs.stores.base import Finish, NewJob, RunRef, Store

START = datetime(2030, 1, 1, tzinfo=UTC)
LEASE = timedelta(hours=1)
PARTS = ("a", "b")
BOUNDS = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

limits_strategy = st.builds(
    lambda concurrency, rate, partitioned: Limits(
        global_concurrency=concurrency,
        rate_limit=rate,
        partition=("p",) if partitioned else (),
    ),
    st.one_of(st.none(), st.integers(1, 3)),
    st.one_of(
        st.none(),
        st.builds(
            lambda n, quarters: RateLimit(n, timedelta(seconds=quarters / 4)),
            st.integers(1, 4),
            st.integers(1, 16),
        ),
    ),
    st.booleans(),
).filter(lambda limits: limits.active)


def machine_for(store: Store) -> type[RuleBasedStateMachine]:
    """A machine of concurrent limited claims on `store` (a queue of its own per example)."""

    class LimitsMachine(RuleBasedStateMachine):
        @initialize(limits=limits_strategy)
        def setup(self, limits: Limits) -> None:
            self.limits = limits
            self.queue = f"lim-{uuid.uuid4().hex[:10]}"
            self.now = START
            self.running: dict[RunRef, str] = {}  # run -> partition
            self.claims: defaultdict[str, list[float]] = defaultdict(list)  # partition -> times

        def part(self, args: Mapping[str, Any]) -> str:
            return self.limits.key(args) if self.limits.partition else ""

        @rule(count=st.integers(1, 4), part=st.sampled_from(PARTS))
        def enqueue(self, count: int, part: str) -> None:
            store.insert(
                [
                    NewJob(
                        kind="k",
                        queue=self.queue,
                        args={"p": part},
                        meta={},
                        priority=0,
                        max_attempts=5,
                        state="available",
                        scheduled_at=self.now,
                        created_at=self.now,
                    )
                    for _ in range(count)
                ]
            )

        @rule(limit=st.integers(1, 5), lag=st.floats(0, 0.99))
        def claim(self, limit: int, lag: float) -> None:
            # A claimer that read its clock a moment ago (less than the rate's period).
            period = self.limits.rate_limit.seconds if self.limits.rate_limit else 1.0
            now = self.now - timedelta(seconds=round(lag * period, 6))
            result = store.claim_limited(
                self.queue,
                limits=self.limits,
                kinds=None,
                limit=limit,
                now=now,
                lease_until=now + LEASE,
                worker="w",
            )
            for claimed in result.jobs:
                key = self.part(claimed.record.args)
                self.running[claimed.run] = key
                self.claims[key].append(now.timestamp())
            if result.reopens_at is not None:
                assert result.held

        @rule(data=st.data(), give_back=st.booleans())
        def finish(self, data: Any, give_back: bool) -> None:
            if not self.running:
                return
            run = data.draw(st.sampled_from(sorted(self.running, key=lambda r: r.id)))
            if give_back:
                write = Finish(
                    run=run,
                    state="available",
                    at=self.now,
                    scheduled_at=self.now,
                    give_back_attempt=True,
                )
            else:
                write = Finish(run=run, state="completed", at=self.now)
            assert store.finish([write]) == [True]
            del self.running[run]

        @rule(quarters=st.integers(0, 12))
        def advance(self, quarters: int) -> None:
            self.now += timedelta(seconds=quarters / 4)

        @invariant()
        def concurrency_holds(self) -> None:
            if not hasattr(self, "limits") or self.limits.global_concurrency is None:
                return
            for part in set(self.running.values()):
                at_once = sum(1 for key in self.running.values() if key == part)
                assert at_once <= self.limits.global_concurrency

        @invariant()
        def rate_holds(self) -> None:
            if not hasattr(self, "limits") or self.limits.rate_limit is None:
                return
            rate = self.limits.rate_limit
            for times in self.claims.values():
                times = sorted(times)
                for i, first in enumerate(times):
                    inside = sum(1 for t in times[i:] if t < first + rate.seconds - 1e-6)
                    assert inside <= rate.count, (times, rate)

    return LimitsMachine
