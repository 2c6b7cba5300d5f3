"""Workflows on every store (docs/workflows.md): steps run once their dependencies completed;
the step whose last dependency ends becomes available in the same write, exactly once however
many finish at the same moment; a failure cancels what depended on it (`DependencyFailed`)
unless a step ignores failures; `cancel_workflow`, `retry` of a dead step reopening what its
failure cancelled, a delay counted from readiness, `dependency_results`, the workflow's state,
`list(workflow=...)`, the errors of a bad workflow, and all-or-nothing writes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction

from anole_jobs import InvalidJob, Workflow, WorkflowEnqueued
from anole_jobs.stores.base import Finish
from anole_jobs.testing.contract import race
from tests.sampleapp.jobs import CALLS, HOOKS, Work
from tests.sampleapp.workflow_jobs import Step, UniqueStep


def run_all(env: Any, *, rounds: int = 50) -> list[str]:
    """Step until nothing runs; the step names in the order they ran."""
    ran: list[str] = []
    for _ in range(rounds):
        report = env.jobs.step()
        if not report.runs:
            return ran
        ran.extend(env.jobs.get(run.job_id).step_name or str(run.job_id) for run in report.runs)
    raise AssertionError("still running after many rounds")


def states(env: Any, created: WorkflowEnqueued) -> dict[str, str]:
    return {name: env.jobs.get(job_id).state for name, job_id in created.jobs.items()}


def diamond(actions: dict[str, str] | None = None, **options: Any) -> Workflow:
    actions = actions or {}
    wf = Workflow("diamond")
    a = wf.add(Step("a", actions.get("a", "ok")), name="a")
    b = wf.add(Step("b", actions.get("b", "ok")), name="b", after=[a])
    c = wf.add(Step("c", actions.get("c", "ok")), name="c", after=[a])
    wf.add(Step("d", actions.get("d", "ok")), name="d", after=[b, c], **options)
    return wf


# -- ordering ----------------------------------------------------------------------------------
def test_steps_wait_pending_and_run_after_their_dependencies(env):
    created = env.jobs.enqueue_workflow(diamond())
    assert isinstance(created.id, str) and set(created.jobs) == {"a", "b", "c", "d"}
    assert states(env, created) == {
        "a": "available",
        "b": "pending",
        "c": "pending",
        "d": "pending",
    }
    assert env.jobs.counts() == {"default": {"available": 1, "pending": 3}}
    ran = run_all(env)
    assert ran[0] == "a" and ran[-1] == "d" and sorted(ran[1:3]) == ["b", "c"]
    assert set(states(env, created).values()) == {"completed"}
    record = env.jobs.workflow(created.id)
    assert record.state == "completed" and record.name == "diamond"
    assert record.dependencies == {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
    assert record.counts == {"completed": 4}
    assert {name: r.id for name, r in record.steps.items()} == created.jobs


def test_a_step_knows_its_workflow_name_and_dependency_results(env):
    created = env.jobs.enqueue_workflow(diamond())
    run_all(env)
    by_step = {call["step"]: call for call in CALLS}
    assert by_step["a"]["deps"] == {} and by_step["a"]["workflow"] == created.id
    assert by_step["d"]["deps"] == {
        "b": {"step": "b", "deps": ["a"]},
        "c": {"step": "c", "deps": ["a"]},
    }
    record = env.jobs.get(created.jobs["d"])
    assert (record.workflow_id, record.step_name) == (created.id, "d")
    assert env.jobs.result(created.jobs["d"]) == {"step": "d", "deps": ["b", "c"]}


def test_a_plain_job_has_no_workflow(env):
    job_id = env.jobs.enqueue(Step("plain")).id
    env.jobs.step()
    assert CALLS[-1]["workflow"] is None and CALLS[-1]["step"] is None
    assert CALLS[-1]["deps"] == {}
    assert env.jobs.get(job_id).workflow_id is None


def test_list_filters_by_workflow(env):
    first = env.jobs.enqueue_workflow(diamond())
    env.jobs.enqueue_workflow(diamond())
    env.jobs.enqueue(Work())
    listed = env.jobs.list(workflow=first.id)
    assert sorted(r.id for r in listed) == sorted(first.jobs.values())
    assert [r.id for r in env.jobs.list(workflow=first.id, state="pending")] == sorted(
        (first.jobs[n] for n in "bcd"), reverse=True
    )
    assert env.jobs.list(workflow="no-such-workflow") == []


def test_pending_is_a_state_of_every_filter(env):
    created = env.jobs.enqueue_workflow(diamond())
    assert {r.id for r in env.jobs.list(state="pending")} == {created.jobs[n] for n in "bcd"}
    assert env.jobs.service.store.queued_counts(["default"]) == {
        "default": {"available": 1, "pending": 3}
    }


# -- failures ----------------------------------------------------------------------------------
def test_a_dead_dependency_cancels_its_dependents_transitively(env):
    created = env.jobs.enqueue_workflow(diamond({"b": "fail"}))
    run_all(env)
    assert states(env, created) == {
        "a": "completed",
        "b": "dead",
        "c": "completed",
        "d": "cancelled",
    }
    errors = env.jobs.get(created.jobs["d"]).errors
    assert errors[-1]["type"] == "DependencyFailed" and "'b'" in errors[-1]["message"]
    assert env.jobs.get(created.jobs["d"]).finished_at is not None
    assert env.jobs.workflow(created.id).state == "failed"


def test_a_cascade_goes_through_every_level(env):
    wf = Workflow("chain")
    names = wf.chain(Step("1", "fail"), Step("2"), Step("3"), Step("4"))
    created = env.jobs.enqueue_workflow(wf)
    run_all(env)
    assert [states(env, created)[n] for n in names] == [
        "dead",
        "cancelled",
        "cancelled",
        "cancelled",
    ]
    assert [c["step"] for c in CALLS] == [names[0]]
    third = env.jobs.get(created.jobs[names[2]]).errors[-1]
    assert third["type"] == "DependencyFailed" and repr(names[1]) in third["message"]


def test_ignore_failed_runs_once_every_dependency_ended(env):
    created = env.jobs.enqueue_workflow(diamond({"b": "fail"}, ignore_failed=True))
    run_all(env)
    assert states(env, created)["d"] == "completed"
    by_step = {call["step"]: call for call in CALLS}
    assert list(by_step["d"]["deps"]) == ["c"]  # only the completed dependency
    assert env.jobs.workflow(created.id).state == "failed"  # b is dead


def test_cancelling_a_step_cancels_its_dependents(env):
    created = env.jobs.enqueue_workflow(diamond())
    env.jobs.cancel(created.jobs["b"])
    run_all(env)
    assert states(env, created) == {
        "a": "completed",
        "b": "cancelled",
        "c": "completed",
        "d": "cancelled",
    }
    assert env.jobs.workflow(created.id).state == "cancelled"


def test_a_lease_that_lapses_on_the_last_attempt_cascades(env):
    wf = Workflow("rescued")
    first = wf.add(Step("x"), name="x")
    wf.add(Step("y"), name="y", after=[first])
    created = env.jobs.enqueue_workflow(wf)
    now = env.clock()
    (claimed,) = env.store.claim(
        "default", kinds=None, limit=1, now=now, lease_until=now + timedelta(seconds=1), worker="w"
    )
    assert claimed.record.step_name == "x" and claimed.record.workflow_id == created.id
    env.clock.advance(timedelta(seconds=5))
    rescued = env.store.rescue(now=env.clock())
    assert [r.state for r in rescued] == ["dead"]
    assert states(env, created) == {"x": "dead", "y": "cancelled"}


# -- cancel_workflow, retry ------------------------------------------------------------------
def test_cancel_workflow_cancels_every_step_not_ended(env):
    created = env.jobs.enqueue_workflow(diamond())
    env.jobs.step()  # a completes
    record = env.jobs.cancel_workflow(created.id)
    assert record.state == "cancelled"
    assert states(env, created) == {
        "a": "completed",
        "b": "cancelled",
        "c": "cancelled",
        "d": "cancelled",
    }
    assert run_all(env) == []
    assert env.jobs.cancel_workflow(created.id).state == "cancelled"  # idempotent
    assert env.jobs.cancel_workflow("unknown") is None
    assert env.jobs.workflow("unknown") is None


def test_retry_of_a_dead_step_reopens_what_its_failure_cancelled(env):
    HOOKS["flaky"] = lambda job, args: (_ for _ in ()).throw(ValueError("first time"))
    wf = Workflow("retry")
    a = wf.add(Step("a", "flaky"), name="a")
    b = wf.add(Step("b"), name="b", after=[a])
    wf.add(Step("c"), name="c", after=[b])
    other = wf.add(Step("other"), name="other")
    wf.add(Step("join"), name="join", after=[b, other])
    created = env.jobs.enqueue_workflow(wf)
    run_all(env)
    assert states(env, created) == {
        "a": "dead",
        "b": "cancelled",
        "c": "cancelled",
        "other": "completed",
        "join": "cancelled",
    }
    assert env.jobs.workflow(created.id).state == "failed"
    del HOOKS["flaky"]
    HOOKS["flaky"] = lambda job, args: {"fixed": True}
    env.jobs.retry(created.jobs["a"])
    assert states(env, created) == {
        "a": "available",
        "b": "pending",
        "c": "pending",
        "other": "completed",
        "join": "pending",
    }
    assert env.jobs.workflow(created.id).state == "running"
    run_all(env)
    assert set(states(env, created).values()) == {"completed"}
    assert env.jobs.workflow(created.id).state == "completed"


def test_retry_of_a_pending_step_does_nothing(env):
    created = env.jobs.enqueue_workflow(diamond())
    assert env.jobs.retry(created.jobs["d"]).state == "pending"


# -- delays --------------------------------------------------------------------------------------
def test_a_delay_counts_from_readiness_and_run_at_is_absolute(env):
    start = env.clock()
    wf = Workflow("later")
    a = wf.add(Step("a"), name="a")
    wf.add(Step("b"), name="b", after=[a], delay=60)
    wf.add(Step("c"), name="c", after=[a], run_at=start + timedelta(seconds=30))
    created = env.jobs.enqueue_workflow(wf)
    env.clock.advance(timedelta(seconds=100))
    env.jobs.step()  # a runs at start + 100
    b = env.jobs.get(created.jobs["b"])
    assert b.state == "scheduled" and b.scheduled_at == start + timedelta(seconds=160)
    c = env.jobs.get(created.jobs["c"])
    assert c.state == "available"  # its run_at has passed
    run_all(env)
    assert states(env, created)["b"] == "scheduled"
    env.clock.advance(timedelta(seconds=60))
    run_all(env)
    assert states(env, created)["b"] == "completed"


def test_a_delayed_root_counts_from_the_enqueue(env):
    wf = Workflow("root")
    wf.add(Step("a"), name="a", delay=10)
    created = env.jobs.enqueue_workflow(wf)
    record = env.jobs.get(created.jobs["a"])
    assert record.state == "scheduled"
    assert record.scheduled_at == env.clock() + timedelta(seconds=10)


# -- fan-in, exactly once ----------------------------------------------------------------------
def test_concurrent_finishes_of_a_fan_in_make_it_available_once(env):
    width = 8
    wf = Workflow("fan-in")
    heads = wf.group(*(Step(str(i)) for i in range(width)))
    wf.add(Step("join"), name="join", after=heads)
    created = env.jobs.enqueue_workflow(wf)
    now = env.clock()
    claimed = env.store.claim(
        "default",
        kinds=None,
        limit=width,
        now=now,
        lease_until=now + timedelta(minutes=5),
        worker="w",
    )
    assert len(claimed) == width

    def finish(i: int) -> list[bool]:
        done = Finish(run=claimed[i].run, state="completed", at=now, result='"x"')
        return env.store.finish([done])

    assert race(width, finish) == [[True]] * width
    join = env.jobs.get(created.jobs["join"])
    assert join.state == "available"
    assert env.jobs.counts() == {"default": {"completed": width, "available": 1}}
    assert run_all(env) == ["join"]
    assert len(CALLS) == 1 and CALLS[0]["deps"] == {name: "x" for name in heads}


def test_one_batch_of_finishes_settles_each_dependent_as_of_its_own_dependencies(env):
    """A worker writes several outcomes at once, each with its own moment: a dependent is
    released (or cancelled) as of the latest end among its own dependencies, not the batch's."""
    wf = Workflow("batch")
    a = wf.add(Step("a"), name="a")
    b = wf.add(Step("b"), name="b")
    x = wf.add(Step("x"), name="x")
    wf.add(Step("both"), name="both", after=[a, b], delay=60)
    wf.add(Step("after_a"), name="after_a", after=[a], delay=5)
    wf.add(Step("after_x"), name="after_x", after=[x])
    created = env.jobs.enqueue_workflow(wf)
    now = env.clock()
    claimed = {
        env.jobs.get(c.record.id).step_name: c
        for c in env.store.claim(
            "default",
            kinds=None,
            limit=3,
            now=now,
            lease_until=now + timedelta(minutes=5),
            worker="w",
        )
    }
    assert sorted(claimed) == ["a", "b", "x"]
    at = {"a": now + timedelta(seconds=10), "b": now + timedelta(seconds=20)}
    at["x"] = now + timedelta(seconds=5)
    written = env.store.finish(
        [
            Finish(run=claimed["a"].run, state="completed", at=at["a"]),
            Finish(run=claimed["b"].run, state="completed", at=at["b"]),
            Finish(run=claimed["x"].run, state="dead", at=at["x"]),
        ]
    )
    assert written == [True, True, True]
    both = env.jobs.get(created.jobs["both"])
    assert (both.state, both.scheduled_at) == ("scheduled", at["b"] + timedelta(seconds=60))
    after_a = env.jobs.get(created.jobs["after_a"])
    assert (after_a.state, after_a.scheduled_at) == ("scheduled", at["a"] + timedelta(seconds=5))
    after_x = env.jobs.get(created.jobs["after_x"])
    assert after_x.state == "cancelled" and after_x.finished_at == at["x"]
    assert [e["type"] for e in after_x.errors] == ["DependencyFailed"], after_x.errors


# -- building errors -------------------------------------------------------------------------------
def test_building_refuses_bad_workflows(env):
    with pytest.raises(InvalidJob, match="no steps"):
        env.jobs.enqueue_workflow(Workflow("empty"))
    wf = Workflow("dup")
    wf.add(Step(), name="x")
    with pytest.raises(InvalidJob, match="already has a step named 'x'"):
        wf.add(Step(), name="x")
    unknown = Workflow("unknown")
    unknown.add(Step(), name="x", after=["nope"])
    with pytest.raises(InvalidJob, match="'nope', which is not a step"):
        env.jobs.enqueue_workflow(unknown)
    cycle = Workflow("cycle")
    cycle.add(Step(), name="x", after=["z"])
    cycle.add(Step(), name="y", after=["x"])
    cycle.add(Step(), name="z", after=["y"])
    with pytest.raises(InvalidJob, match="cycle: x -> z -> y -> x"):
        env.jobs.enqueue_workflow(cycle)
    with pytest.raises(InvalidJob, match="unique"):
        Workflow("u").add(UniqueStep())
    with pytest.raises(InvalidJob, match="not its class"):
        Workflow("c").add(Step)
    bad = Workflow("bad")
    bad.add(Step(), name="x", priority=500)
    with pytest.raises(InvalidJob, match="step 'x' of workflow 'bad'"):
        env.jobs.enqueue_workflow(bad)
    with pytest.raises(InvalidJob, match="a Workflow"):
        env.jobs.enqueue_workflow([Step()])
    with pytest.raises(InvalidJob, match="workflow id"):
        env.jobs.workflow(42)
    assert env.jobs.counts() == {}


def test_more_than_ten_thousand_steps_are_refused():
    wf = Workflow("big")
    for i in range(10_000):
        wf.add(Step(), name=str(i))
    with pytest.raises(InvalidJob, match="at most 10000 steps"):
        wf.add(Step())


def test_chain_group_and_chord_build_the_graph(env):
    wf = Workflow("canvas")
    first, second = wf.chain(Step("1"), Step("2"))
    body = wf.chord([Step("h1"), Step("h2")], Step("body"), after=[second])
    created = env.jobs.enqueue_workflow(wf)
    deps = env.jobs.workflow(created.id).dependencies
    assert deps[second] == [first]
    assert len(deps[body]) == 2 and all(deps[h] == [second] for h in deps[body])
    run_all(env)
    assert env.jobs.workflow(created.id).state == "completed"


# -- writes: all or nothing ----------------------------------------------------------------------
def test_a_workflow_over_a_thousand_steps_is_written_in_several_calls(env):
    methods: list[str] = []
    from anole_jobs import events

    unsubscribe = env.jobs.service.bus.subscribe(
        lambda event: methods.append(event.fields["method"]), events.STORE_CALL
    )
    wf = Workflow("wide")
    root = wf.add(Step("root"), name="root")
    wf.group(*(Step(str(i)) for i in range(1500)), after=[root])
    created = env.jobs.enqueue_workflow(wf)
    unsubscribe()
    assert methods.count("insert_workflow") == 2
    assert env.jobs.counts() == {"default": {"available": 1, "pending": 1500}}
    assert len(created.jobs) == 1501


def test_a_rolled_back_transaction_leaves_no_step(env):
    env.require("supports_transactions")
    with pytest.raises(RuntimeError), transaction.atomic(using=env.alias):
        env.jobs.enqueue_workflow(diamond())
        raise RuntimeError("rollback")
    assert env.jobs.counts() == {}


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_on_commit_writes_at_commit_or_never(env):
    if env.alias not in (None, "default"):
        pytest.skip("the store's database is not the default one, where on_commit waits")
    with transaction.atomic():
        created = env.jobs.enqueue_workflow(diamond(), on_commit=True)
    assert env.jobs.workflow(created.id).state == "running"
    with pytest.raises(RuntimeError), transaction.atomic():
        env.jobs.enqueue_workflow(diamond(), on_commit=True)
        raise RuntimeError("rollback")
    assert env.jobs.counts() == {"default": {"available": 1, "pending": 3}}


# -- prune -----------------------------------------------------------------------------------------
def test_prune_removes_a_finished_workflow_with_its_last_step(env):
    created = env.jobs.enqueue_workflow(diamond())
    run_all(env)
    env.clock.advance(timedelta(days=30))
    env.store.prune(now=env.clock(), horizons={"completed": timedelta(days=1)})
    assert env.jobs.workflow(created.id) is None


def test_deleting_steps_keeps_the_workflow_until_its_last_step(env):
    wf = Workflow("two")
    first = wf.add(Step("a"), name="a")
    wf.add(Step("b"), name="b", after=[first])
    created = env.jobs.enqueue_workflow(wf)
    assert env.jobs.delete(created.jobs["a"])
    record = env.jobs.workflow(created.id)
    assert list(record.steps) == ["b"] and record.steps["b"].state == "pending"
    assert env.jobs.delete(created.jobs["b"])
    assert env.jobs.workflow(created.id) is None
