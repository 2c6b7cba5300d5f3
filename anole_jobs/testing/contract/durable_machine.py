"""A Hypothesis state machine of durable execution on one store against a model: whatever the
sequence of claims, steps (fresh and stale), parks for a sleep or a signal, signals,
stages, retries, completions and clock moves, the job's state, its steps (in the order
recorded), its signals, its awaited name and its deadlines are what the model says.

Each example works on a job (and a queue) of its own, so one store serves them all.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from anole_jobs.core import FINAL_STATES
from anole_jobs.stores.base import Finish, NewJob, RunRef, Store

START = datetime(2030, 1, 1, tzinfo=UTC)
LEASE = timedelta(hours=1)
#: Names out of alphabetical order, one with a character PostgreSQL's jsonb sorts apart.
NAMES = ("zeta", "alpha", "mid", "é/x")
SIGNALS = ("paid", "shipped", "x y")
BOUNDS = settings(
    max_examples=30,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
#: Step values and signal payloads as the service lets them reach a store: JSON text without
#: NUL characters or lone surrogates (the service refuses those before any store call; no
#: store can keep them: PostgreSQL's jsonb has no U+0000).
values = st.one_of(
    st.none(),
    st.integers(-(2**53), 2**53),
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=8),
    st.lists(st.integers(0, 9), max_size=3),
    st.dictionaries(st.sampled_from(["b", "a"]), st.integers(0, 9), max_size=2),
)


@dataclass
class Model:
    state: str = "available"
    run: RunRef | None = None
    stale: list[RunRef] = field(default_factory=list)
    steps: list[tuple[str, Any]] = field(default_factory=list)
    signals: dict[str, Any] = field(default_factory=dict)
    waits: dict[str, datetime] = field(default_factory=dict)
    awaiting: str | None = None
    scheduled_at: datetime = START


def machine_for(store: Store) -> type[RuleBasedStateMachine]:
    """A machine of one durable job's life on `store`."""

    class DurableMachine(RuleBasedStateMachine):
        @initialize()
        def setup(self) -> None:
            self.now = START
            self.queue = f"durable-{uuid.uuid4().hex[:10]}"
            (inserted,) = store.insert(
                [
                    NewJob(
                        kind="k",
                        queue=self.queue,
                        args={},
                        meta={},
                        priority=0,
                        max_attempts=1000,
                        state="available",
                        scheduled_at=self.now,
                        created_at=self.now,
                    )
                ]
            )
            self.id = inserted.id
            self.model = Model()

        # -- the run -----------------------------------------------------------------------
        @rule()
        def claim(self) -> None:
            claimed = store.claim(
                self.queue,
                kinds=None,
                limit=1,
                now=self.now,
                lease_until=self.now + LEASE,
                worker="w",
            )
            if self.model.state == "available":
                assert len(claimed) == 1
                self.model.state = "running"
                self.model.run = claimed[0].run
            else:
                assert claimed == []

        @rule(name=st.sampled_from(NAMES), value=values)
        def step(self, name: str, value: Any) -> None:
            run = self.model.run
            if run is None:
                return
            written = store.record_step(run, name=name, value=json.dumps(value), at=self.now)
            assert written
            if name not in [n for n, _ in self.model.steps]:
                self.model.steps.append((name, value))

        @rule(name=st.sampled_from(NAMES), value=values)
        def stale_step(self, name: str, value: Any) -> None:
            if not self.model.stale:
                return
            run = self.model.stale[-1]
            assert not store.record_step(run, name=name, value=json.dumps(value), at=self.now)
            assert not store.await_signal(run, name=name, deadline=self.now)

        def _park(self, until: datetime) -> None:
            run = self.model.run
            assert run is not None
            parked = Finish(
                run=run,
                state="scheduled",
                at=self.now,
                scheduled_at=until,
                give_back_attempt=True,
            )
            assert store.finish([parked]) == [True]
            self.model.stale.append(run)
            self.model.run = None
            self.model.state = "scheduled"
            self.model.scheduled_at = until

        @rule(minutes=st.integers(0, 90))
        def sleep(self, minutes: int) -> None:
            if self.model.run is None:
                return
            self._park(self.now + timedelta(minutes=minutes))

        @rule(name=st.sampled_from(SIGNALS), minutes=st.integers(1, 90))
        def wait_for_signal(self, name: str, minutes: int) -> None:
            run = self.model.run
            if run is None:
                return
            deadline = self.now + timedelta(minutes=minutes)
            assert store.await_signal(run, name=name, deadline=deadline)
            self.model.awaiting = name
            self.model.waits.setdefault(name, deadline)
            self._park(self.model.waits[name])
            woken = store.wake_signalled(self.id, now=self.now)
            assert woken == (name in self.model.signals)
            if woken:
                self.model.state = "available"
                self.model.scheduled_at = self.now

        @rule()
        def stop_waiting(self) -> None:
            if self.model.run is None:
                return
            assert store.await_signal(self.model.run, name=None, deadline=None)
            self.model.awaiting = None

        @rule()
        def complete(self) -> None:
            run = self.model.run
            if run is None:
                return
            assert store.finish([Finish(run=run, state="completed", at=self.now)]) == [True]
            self.model.stale.append(run)
            self.model.run = None
            self.model.state = "completed"

        # -- from outside ----------------------------------------------------------------------
        @rule(name=st.sampled_from(SIGNALS), payload=values)
        def signal(self, name: str, payload: Any) -> None:
            stored = store.signal(self.id, name=name, payload=json.dumps(payload), now=self.now)
            model = self.model
            expected = model.state not in FINAL_STATES and name not in model.signals
            assert stored == expected
            if expected:
                model.signals[name] = payload
                if model.state == "scheduled" and model.awaiting == name:
                    model.state = "available"
                    model.scheduled_at = self.now

        @rule()
        def retry(self) -> None:
            assert store.retry(self.id, now=self.now) is not None
            if self.model.run is not None:
                self.model.stale.append(self.model.run)
                self.model.run = None
            self.model.state = "available"
            self.model.scheduled_at = self.now

        @rule(minutes=st.integers(0, 60))
        def advance_and_stage(self, minutes: int) -> None:
            self.now += timedelta(minutes=minutes)
            store.stage(now=self.now)
            if self.model.state == "scheduled" and self.model.scheduled_at <= self.now:
                self.model.state = "available"

        # -- what the store must say ---------------------------------------------------------------
        @invariant()
        def agrees_with_the_model(self) -> None:
            if not hasattr(self, "model"):
                return
            record = store.get(self.id)
            state = store.durable_state(self.id)
            assert record is not None and state is not None
            assert record.state == self.model.state
            assert [(e.name, e.value) for e in state.steps] == self.model.steps
            assert [(n, s["result"]) for n, s in record.steps.items()] == self.model.steps
            assert dict(state.signals) == self.model.signals
            assert state.awaiting == self.model.awaiting
            assert dict(state.waits) == self.model.waits

    return DurableMachine
