"""A Hypothesis state machine over workflows, on the store under test: random graphs of steps,
run by several workers that claim and finish them with random outcomes (completed, retried, dead),
while time moves, leases lapse, and steps and workflows are cancelled or retried by hand.

After every step it checks the store against what the rules allow:
- a step is claimed only when its dependencies allow it (all completed; with
  ``ignore_failed``, all ended);
- a ``pending`` step waits for a dependency that has not ended (never stuck) and, unless it
  ignores failures, none of its dependencies failed;
- a step that left ``pending`` had every dependency ended (completed, unless it ignores
  failures), or was cancelled by a failed dependency, a cancel or its workflow's cancel;
- a step cancelled by a dependency names one that is dead or cancelled;
- the workflow's state is what its steps say (never ``completed`` with a step not completed,
  never ``running`` with every step ended unless cancelled, ...);
- the counts equal a recount.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from anole_jobs.core import FINAL_STATES, ErrorEntry, ListFilter
from anole_jobs.stores.base import Finish, NewJob, NewStep, NewWorkflow
from anole_jobs.testing.contract.jobs_machine import recount
from anole_jobs.workflows import workflow_record

LEASE = timedelta(seconds=30)
WORKERS = ("w1", "w2", "w3")
BOUNDS = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@st.composite
def graphs(draw: Any) -> list[tuple[tuple[int, ...], bool, int | None, int]]:
    """Steps as (dependencies: earlier indexes, ignore_failed, delay seconds, attempts)."""
    size = draw(st.integers(1, 6))
    steps = []
    for i in range(size):
        deps = tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else ()
        steps.append(
            (
                deps,
                draw(st.booleans()),
                draw(st.sampled_from([None, None, None, 10])),
                draw(st.integers(1, 2)),
            )
        )
    return steps


def make_machine(store: Any, start: Any, queue: str) -> type[RuleBasedStateMachine]:
    class WorkflowMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.store = store
            self.now = start
            self.workflows: list[str] = []
            self.deps: dict[int, tuple[int, ...]] = {}  # step id -> dependency ids
            self.ignore: dict[int, bool] = {}
            self.held: dict[str, list[Any]] = {w: [] for w in WORKERS}  # claimed runs
            self.by_hand: set[int] = set()  # steps a cancel or a workflow's cancel may have hit
            self.steps_of: dict[str, list[int]] = {}
            self.retried: set[int] = set()  # dead steps retried by hand

        def teardown(self) -> None:
            for job_id in self.deps:
                self.store.delete(job_id)

        def state(self, job_id: int) -> str:
            record = self.store.get(job_id)
            assert record is not None
            return record.state

        # -- operations ----------------------------------------------------------------------
        @rule(graph=graphs())
        def enqueue(self, graph: Any) -> None:
            workflow = NewWorkflow(id=uuid.uuid4().hex, name="random", created_at=self.now)
            steps = [
                NewStep(
                    job=NewJob(
                        kind="k",
                        queue=queue,
                        args={},
                        meta={},
                        priority=0,
                        max_attempts=attempts,
                        state="pending",
                        scheduled_at=self.now,
                        created_at=self.now,
                    ),
                    name=f"s{i}",
                    after=deps,
                    ignore_failed=ignore,
                    ready_delay=None if delay is None else timedelta(seconds=delay),
                )
                for i, (deps, ignore, delay, attempts) in enumerate(graph)
            ]
            ids = self.store.insert_workflow(workflow, steps, last=True, now=self.now)
            self.workflows.append(workflow.id)
            self.steps_of[workflow.id] = list(ids)
            for step, job_id in zip(steps, ids, strict=True):
                self.deps[job_id] = tuple(ids[i] for i in step.after)
                self.ignore[job_id] = step.ignore_failed

        @rule(worker=st.sampled_from(WORKERS), limit=st.integers(1, 3))
        def claim(self, worker: str, limit: int) -> None:
            claimed = self.store.claim(
                queue,
                kinds=None,
                limit=limit,
                now=self.now,
                lease_until=self.now + LEASE,
                worker=worker,
            )
            for job in claimed:
                job_id = job.record.id
                states = [self.state(dep) for dep in self.deps[job_id]]
                if self.ignore[job_id]:
                    # A dependency retried by hand after this step was released runs again
                    # beside it: that one alone may have left its final state.
                    states = [
                        self.state(dep) for dep in self.deps[job_id] if dep not in self.retried
                    ]
                    assert all(s in FINAL_STATES for s in states), (job_id, states)
                else:
                    assert all(s == "completed" for s in states), (job_id, states)
                self.held[worker].append(job.run)

        @precondition(lambda self: any(self.held.values()))
        @rule(
            worker=st.sampled_from(WORKERS),
            outcomes=st.lists(st.sampled_from(["completed", "completed", "dead", "retrying"])),
        )
        def finish(self, worker: str, outcomes: list[str]) -> None:
            # Some of what it holds: finishes of one fan-in's dependencies come apart.
            cut = max(1, len(outcomes)) if len(outcomes) < len(self.held[worker]) else None
            runs, self.held[worker] = self.held[worker][:cut], self.held[worker][cut:]
            results = []
            for i, run in enumerate(runs):
                state = outcomes[i] if i < len(outcomes) else "completed"
                error = None
                if state != "completed":
                    error = ErrorEntry(at=self.now, attempt=run.attempt, type="E", message="m")
                results.append(
                    Finish(
                        run=run,
                        state=state,  # type: ignore[arg-type]
                        at=self.now,
                        scheduled_at=self.now + timedelta(seconds=5)
                        if state == "retrying"
                        else None,
                        error=error,
                        result='"r"' if state == "completed" else None,
                    )
                )
            self.store.finish(results)

        @rule(seconds=st.sampled_from([1, 10, 31]))
        def advance(self, seconds: int) -> None:
            self.now += timedelta(seconds=seconds)
            self.store.stage(now=self.now)
            self.store.rescue(now=self.now)

        @precondition(lambda self: bool(self.deps))
        @rule(data=st.data(), op=st.sampled_from(["cancel", "retry"]))
        def admin(self, data: Any, op: str) -> None:
            job_id = data.draw(st.sampled_from(sorted(self.deps)))
            if op == "retry" and self.state(job_id) != "dead":
                return  # a retry by hand of a step that did not die is the admin's own call
            if op == "cancel":
                self.by_hand.add(job_id)
            else:
                self.retried.add(job_id)
            getattr(self.store, op)(job_id, now=self.now)

        @precondition(lambda self: bool(self.workflows))
        @rule(data=st.data())
        def cancel_workflow(self, data: Any) -> None:
            workflow_id = data.draw(st.sampled_from(self.workflows))
            self.by_hand.update(self.steps_of[workflow_id])
            self.store.cancel_workflow(workflow_id, now=self.now)

        # -- what must hold ------------------------------------------------------------------
        def records(self) -> dict[int, Any]:
            """Every step's record, one read per workflow."""
            found = {}
            for workflow_id in self.workflows:
                for record in self.store.list(ListFilter(workflow=workflow_id, limit=100)):
                    found[record.id] = record
            return found

        @invariant()
        def steps_wait_exactly_when_they_must(self) -> None:
            records = self.records()
            for job_id, deps in self.deps.items():
                record = records[job_id]
                states = [records[dep].state for dep in deps]
                failed = [s for s in states if s in ("dead", "cancelled")]
                if record.state == "pending":
                    assert any(s not in FINAL_STATES for s in states), (job_id, states)
                    assert self.ignore[job_id] or not failed, (job_id, states)
                elif record.state == "cancelled":
                    if job_id not in self.by_hand:
                        assert record.errors[-1]["type"] == "DependencyFailed", job_id
                        assert failed, (job_id, states)
                elif not self.ignore[job_id]:
                    # It left pending because its dependencies all completed.
                    assert all(s == "completed" for s in states), (job_id, record.state, states)

        @invariant()
        def workflows_say_what_their_steps_say(self) -> None:
            for workflow_id in self.workflows:
                row = self.store.workflow(workflow_id)
                if row is None:
                    continue
                record = workflow_record(row)
                states = [step.state for step in row.steps]
                ended = all(s in FINAL_STATES for s in states)
                if record.state == "completed":
                    assert all(s == "completed" for s in states)
                elif record.state == "failed":
                    assert ended and "dead" in states
                elif record.state == "running":
                    assert not ended
                else:
                    assert row.cancelled or (ended and "dead" not in states)
                if row.cancelled:
                    assert record.state == "cancelled"

        @invariant()
        def counts_match_a_recount(self) -> None:
            assert self.store.counts() == recount(self.store)

    return WorkflowMachine
