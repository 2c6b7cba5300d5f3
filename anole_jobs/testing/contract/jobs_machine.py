"""A Hypothesis state machine over the store contract, with the memory store as the model.

Each step applies one contract operation — insert, claim, heartbeat, finish, stage, rescue,
cancel, retry, delete, prune — to the store under test and to a fresh `MemoryStore`, with time
moved only by the machine (a fake `now`), and asserts both answer the same; after every step
the jobs themselves must match, and every store's `counts()` must equal a recount of its
jobs. Ids differ between stores (a shared sequence), so the machine maps the model's ids to
the store's. `StoreContract` runs it on the store under test, bounded to stay well under a
minute per store.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from anole_jobs.core import AFTER_RUN_STATES, LIST_LIMIT_MAX, ErrorEntry, ListFilter
from anole_jobs.stores.base import Finish, NewJob, RunRef
from anole_jobs.stores.memory import MemoryStore

LEASE = timedelta(seconds=30)
QUEUES = ("q1", "q2")
KINDS = ("a", "b")
BOUNDS = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def comparable(record: Any) -> Any:
    """A record with its id left out (ids are mapped separately)."""
    if record is None:
        return None
    return (
        record.kind,
        record.queue,
        record.state,
        dict(record.args),
        record.priority,
        record.attempt,
        record.max_attempts,
        [(e["type"], e["attempt"], e["message"]) for e in record.errors],
        record.scheduled_at,
        record.attempted_at,
        record.finished_at,
        record.unique_key,
    )


def recount(store: Any) -> dict[str, dict[str, int]]:
    """``counts()`` the straightforward way: every job, read page by page, counted."""
    counts: dict[str, dict[str, int]] = {}
    after = None
    while True:
        page = store.list(ListFilter(limit=LIST_LIMIT_MAX, after=after))
        for record in page:
            per_queue = counts.setdefault(record.queue, {})
            per_queue[record.state] = per_queue.get(record.state, 0) + 1
        if len(page) < LIST_LIMIT_MAX:
            return counts
        after = page[-1].id


def make_machine(store: Any, start: Any) -> type[RuleBasedStateMachine]:
    """A machine comparing `store` with the memory store from `start` on. On a store whose
    unique keys do not hold across queues (`unique_across_queues`), the keys it draws are
    never shared by two queues."""
    unique_per_queue = not store.unique_across_queues

    class StoreMachine(RuleBasedStateMachine):
        jobs = Bundle("jobs")
        runs = Bundle("runs")

        def __init__(self) -> None:
            super().__init__()
            self.model = MemoryStore()
            self.store = store
            self.now = start
            self.ids: dict[int, int] = {}  # model id -> store id
            self.back: dict[int, int] = {}

        def teardown(self) -> None:
            for store_id in self.ids.values():
                self.store.delete(store_id)

        def _map_runs(self, model_runs: Any, store_runs: Any) -> None:
            assert sorted(self.ids[r.id] for r in model_runs) == sorted(r.id for r in store_runs)

        # -- operations ----------------------------------------------------------------------
        @rule(
            target=jobs,
            queue=st.sampled_from(QUEUES),
            kind=st.sampled_from(KINDS),
            priority=st.sampled_from([-1, 0, 1]),
            delay=st.sampled_from([0, 0, 10, 40]),
            attempts=st.integers(1, 3),
            unique=st.sampled_from([None, None, "u1", "u2"]),
            scope=st.sampled_from(["live", "any"]),
        )
        def insert(
            self,
            queue: str,
            kind: str,
            priority: int,
            delay: int,
            attempts: int,
            unique: str | None,
            scope: str,
        ) -> int:
            job = NewJob(
                kind=kind,
                queue=queue,
                args={"n": len(self.ids)},
                meta={},
                priority=priority,
                max_attempts=attempts,
                state="scheduled" if delay else "available",
                scheduled_at=self.now + timedelta(seconds=delay),
                created_at=self.now,
                unique_key=f"{queue}:{unique}" if unique and unique_per_queue else unique,
                unique_scope=scope,  # type: ignore[arg-type]
            )
            (expected,) = self.model.insert([job])
            (got,) = self.store.insert([job])
            assert got.inserted == expected.inserted
            if expected.inserted:
                self.ids[expected.id] = got.id
                self.back[got.id] = expected.id
            else:
                assert got.id == self.ids[expected.id]
            return expected.id

        @rule(
            target=runs,
            queue=st.sampled_from(QUEUES),
            kinds=st.sampled_from([None, ("a",), ("a", "b")]),
            limit=st.integers(1, 3),
        )
        def claim(self, queue: str, kinds: Any, limit: int) -> Any:
            options = dict(
                kinds=kinds, limit=limit, now=self.now, lease_until=self.now + LEASE, worker="w"
            )
            expected = self.model.claim(queue, **options)
            got = self.store.claim(queue, **options)
            assert [self.ids[c.record.id] for c in expected] == [c.record.id for c in got]
            for e, g in zip(expected, got, strict=True):
                assert comparable(e.record) == comparable(g.record)
            # One bundle entry per claim: (model run, store run) pairs.
            return tuple((e.run, g.run) for e, g in zip(expected, got, strict=True))

        @rule(claimed=runs)
        def heartbeat(self, claimed: Any) -> None:
            expected = self.model.heartbeat([m for m, _ in claimed], lease_until=self.now + LEASE)
            got = self.store.heartbeat([s for _, s in claimed], lease_until=self.now + LEASE)
            assert {self.ids[r.id] for r in expected} == {r.id for r in got}

        @rule(
            claimed=consumes(runs),
            state=st.sampled_from(AFTER_RUN_STATES),
            with_error=st.booleans(),
            give_back=st.booleans(),
            later=st.sampled_from([None, 5]),
        )
        def finish(
            self, claimed: Any, state: str, with_error: bool, give_back: bool, later: Any
        ) -> None:
            def result(run: RunRef) -> Finish:
                error = ErrorEntry(at=self.now, attempt=run.attempt, type="E", message="m")
                return Finish(
                    run=run,
                    state=state,  # type: ignore[arg-type]
                    at=self.now,
                    scheduled_at=None if later is None else self.now + timedelta(seconds=later),
                    error=error if with_error else None,
                    give_back_attempt=give_back,
                )

            expected = self.model.finish([result(m) for m, _ in claimed])
            got = self.store.finish([result(s) for _, s in claimed])
            assert got == expected

        @rule(claimed=runs)
        def stale_finish(self, claimed: Any) -> None:
            """A write naming an older claim token never lands (fencing)."""
            for model_run, store_run in claimed:
                stale = RunRef(store_run.id, store_run.attempt, store_run.token - 1)
                older = RunRef(model_run.id, model_run.attempt, model_run.token - 1)
                finish = dict(state="completed", at=self.now)
                assert self.store.finish([Finish(run=stale, **finish)]) == [False]
                assert self.model.finish([Finish(run=older, **finish)]) == [False]

        @rule(seconds=st.sampled_from([1, 10, 31, 120]))
        def advance(self, seconds: int) -> None:
            self.now += timedelta(seconds=seconds)

        @rule()
        def stage(self) -> None:
            assert self.store.stage(now=self.now) == self.model.stage(now=self.now)

        @rule()
        def rescue(self) -> None:
            expected = sorted((self.ids[r.id], r.state) for r in self.model.rescue(now=self.now))
            got = sorted((r.id, r.state) for r in self.store.rescue(now=self.now))
            assert got == expected

        @rule(job=jobs, op=st.sampled_from(["cancel", "retry"]))
        def admin(self, job: int, op: str) -> None:
            expected = getattr(self.model, op)(job, now=self.now)
            got = getattr(self.store, op)(self.ids[job], now=self.now)
            assert comparable(got) == comparable(expected)

        @rule(job=consumes(jobs))
        def delete(self, job: int) -> None:
            assert self.store.delete(self.ids[job]) == self.model.delete(job)

        @rule()
        def prune(self) -> None:
            horizons = {"completed": timedelta(seconds=30), "dead": timedelta(seconds=60)}
            expected = self.model.prune(now=self.now, horizons=horizons)
            assert self.store.prune(now=self.now, horizons=horizons) == expected

        # -- the jobs themselves -------------------------------------------------------------
        @invariant()
        def same_jobs(self) -> None:
            for model_id, store_id in self.ids.items():
                expected = self.model.get(model_id)
                assert comparable(self.store.get(store_id)) == comparable(expected), model_id

        @invariant()
        def counts_match_a_recount(self) -> None:
            # Every store keeps its counts as jobs move (the SQL stores by triggers, folded at
            # each prune on PostgreSQL): they must equal counting the jobs one by one.
            expected = recount(self.model)
            assert self.model.counts() == expected
            assert self.store.counts() == recount(self.store) == expected

    return StoreMachine
