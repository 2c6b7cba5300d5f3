"""`StoreContract`: the store contract's rules as pytest tests, for any store to run.

Subclass it in a test module, in a class whose name starts with ``Test``, and say how to
build your store; pytest then runs every test below against it::

    class TestMyStore(StoreContract):
        def make_store(self) -> Store:
            return MyStore(...)

Every test gets a fresh store from `make_store` (closed after the test) and a `FakeClock`
(the `clock` fixture) for its `now` arguments: the suite moves time only through it. A
store that needs other fixtures (a database, a server) overrides the `store` fixture instead.
Where stores really differ, the tests read the store's capability flags (`Store`'s
`supports_*` attributes), never its name.

Needs pytest and Hypothesis (the state machines); pytest-django for a store on a Django
database (mark the class with ``pytest.mark.django_db(transaction=True)``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, ClassVar

import pytest
from hypothesis import settings as hypothesis_settings
from hypothesis.stateful import run_state_machine_as_test

from anole_jobs.core import FINAL_STATES, ErrorEntry, ListFilter
from anole_jobs.limits import Limits
from anole_jobs.stores.audit import AuditEntry
from anole_jobs.stores.base import Finish, NewStep, NewWorkflow, Store
from anole_jobs.stores.workers import WorkerControl, WorkerRecord
from anole_jobs.testing.clock import FakeClock
from anole_jobs.testing.contract import (
    durable_machine,
    jobs_machine,
    limits_machine,
    workflow_machine,
)
from anole_jobs.testing.contract.jobs_machine import recount
from anole_jobs.testing.contract.support import LEASE, T0, claim, new_job, race


class StoreContract:
    """The conformance suite; see the module docstring. Not collected itself (no ``Test``
    prefix): only its subclasses are."""

    #: Hypothesis examples each state machine runs (fewer keep a slow store's run short).
    machine_examples: ClassVar[dict[str, int]] = {
        "jobs": 40,
        "workflows": 25,
        "limits": 60,
        "durable": 30,
    }

    def make_store(self) -> Store:
        """A new store, empty, to test. Subclasses define it (or the `store` fixture)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define make_store() (or a `store` fixture)"
        )

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock(T0)

    @pytest.fixture
    def store(self) -> Iterator[Store]:
        store = self.make_store()
        try:
            yield store
        finally:
            store.close()

    def _machine_settings(self, machine: str) -> Any:
        return hypothesis_settings(
            (
                {
                    "jobs": jobs_machine,
                    "workflows": workflow_machine,
                    "limits": limits_machine,
                    "durable": durable_machine,
                }[machine]
            ).BOUNDS,
            max_examples=self.machine_examples[machine],
        )

    # -- capabilities ----------------------------------------------------------------------
    def test_capabilities_are_flags_the_store_sets(self, store: Store) -> None:
        for name in (
            "supports_transactions",
            "supports_cross_process_wakeups",
            "supports_other_processes",
            "unique_across_queues",
            "leadership_lapses",
            "shares_sessions",
            "queues_fail_apart",
        ):
            assert isinstance(getattr(store, name), bool), name
        assert (store.atomic_alias is not None) == store.supports_transactions

    # -- insert and read -------------------------------------------------------------------
    def test_insert_returns_growing_ids_and_get_reads_the_job_back(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        jobs = [new_job(at=now, args={"n": i}, meta={"m": i}) for i in range(3)]
        inserted = store.insert(jobs)
        ids = [result.id for result in inserted]
        assert all(result.inserted for result in inserted)
        assert ids == sorted(ids) and len(set(ids)) == 3 and ids[0] > 0
        record = store.get(ids[1])
        assert record is not None
        assert (record.id, record.kind, record.queue, record.state) == (
            ids[1],
            "contract.job",
            "default",
            "available",
        )
        assert (dict(record.args), dict(record.meta)) == ({"n": 1}, {"m": 1})
        assert (record.attempt, record.max_attempts, record.errors) == (0, 3, ())
        assert record.created_at == now == record.scheduled_at
        assert store.get(ids[-1] + 10_000_000) is None

    def test_a_search_window_of_n_jobs_reaches_the_n_jobs_before(
        self, store: Store, clock: FakeClock
    ) -> None:
        ids = [r.id for r in store.insert([new_job(at=clock()) for _ in range(5)])]
        below = ids[-1] + 1
        low = store.lowest_id_below(below, 5)
        assert 1 <= low <= ids[0]
        window = store.list(ListFilter(limit=10, after=below, min_id=low))
        assert [r.id for r in window] == ids[::-1]

    def test_a_unique_key_is_held_by_one_live_job(self, store: Store, clock: FakeClock) -> None:
        now = clock()
        (first,) = store.insert([new_job(at=now, unique_key="k")])
        (again,) = store.insert([new_job(at=now, unique_key="k")])
        assert first.inserted and not again.inserted and again.id == first.id
        (claimed,) = claim(store, now)
        assert store.finish([Finish(run=claimed.run, state="completed", at=now)]) == [True]
        (after,) = store.insert([new_job(at=now, unique_key="k")])
        assert after.inserted and after.id != first.id  # a finished holder lets go

    def test_concurrent_inserts_of_one_key_insert_exactly_one(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        results = race(6, lambda i: store.insert([new_job(at=now, args={"i": i}, unique_key="u")]))
        inserted = [result for (result,) in results if result.inserted]
        assert len(inserted) == 1
        assert {result.id for (result,) in results} == {inserted[0].id}

    # -- claim, heartbeat, finish ------------------------------------------------------------
    def test_claim_takes_by_priority_then_due_time_then_id(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        early = now - timedelta(seconds=5)
        ids = [
            r.id
            for r in store.insert(
                [
                    new_job(at=now, priority=0),
                    new_job(at=now, priority=5),
                    new_job(at=now, priority=0, scheduled_at=early),
                    new_job(at=now, queue="other"),
                    new_job(at=now, kind="contract.other"),
                ]
            )
        ]
        claimed = claim(store, now, kinds=["contract.job"])
        assert [c.record.id for c in claimed] == [ids[1], ids[2], ids[0]]
        for c in claimed:
            assert c.record.state == "running" and c.record.attempt == 1
            assert c.record.attempted_at == now and c.run.id == c.record.id
            assert c.lease_until == now + LEASE
        assert claim(store, now, kinds=["contract.job"]) == []

    def test_concurrent_claims_never_take_one_job_twice(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        store.insert([new_job(at=now, args={"i": i}) for i in range(60)])

        def drain(worker: int) -> list[int]:
            taken: list[int] = []
            while batch := claim(store, now, limit=7, worker=f"w{worker}"):
                taken += [c.record.id for c in batch]
            return taken

        taken = [job_id for ids in race(4, drain) for job_id in ids]
        assert len(taken) == 60 == len(set(taken))

    def test_every_write_after_a_claim_is_fenced_by_its_run(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        (job,) = store.insert([new_job(at=now)])
        (first,) = claim(store, now)
        stale = first.run
        store.retry(job.id, now=now)  # an admin retry: the running worker lost the job
        (second,) = claim(store, now)
        assert second.run.token > stale.token
        assert store.heartbeat([stale, second.run], lease_until=now + LEASE) == {second.run}
        assert store.update_meta(stale, {"output": "stale"}) is False
        assert store.update_meta(second.run, {"output": "fresh"}) is True
        assert store.finish([Finish(run=stale, state="completed", at=now)]) == [False]
        done = Finish(run=second.run, state="completed", at=now, result='{"ok": true}')
        assert store.finish([done]) == [True]
        record = store.get(job.id)
        assert record is not None and record.state == "completed"
        assert record.finished_at == now and record.result == {"ok": True}
        assert record.meta == {"output": "fresh"}
        assert store.finish([done]) == [False]  # a run ends once

    def test_a_failed_run_keeps_its_error_and_a_give_back_its_attempt(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        ids = [r.id for r in store.insert([new_job(at=now), new_job(at=now)])]
        failed, snoozed = claim(store, now)
        later = now + timedelta(seconds=60)
        error = ErrorEntry(at=now, attempt=1, type="ValueError", message="bad")
        written = store.finish(
            [
                Finish(run=failed.run, state="retrying", at=now, scheduled_at=later, error=error),
                Finish(
                    run=snoozed.run,
                    state="scheduled",
                    at=now,
                    scheduled_at=later,
                    give_back_attempt=True,
                ),
            ]
        )
        assert written == [True, True]
        retrying, scheduled = (store.get(i) for i in ids)
        assert retrying is not None and scheduled is not None
        assert (retrying.state, retrying.attempt, retrying.scheduled_at) == ("retrying", 1, later)
        assert [(e["type"], e["message"]) for e in retrying.errors] == [("ValueError", "bad")]
        assert (scheduled.state, scheduled.attempt, scheduled.errors) == ("scheduled", 0, ())
        assert store.stage(now=later - timedelta(seconds=1)) == 0
        assert store.stage(now=later) == 2
        assert len(claim(store, later)) == 2

    def test_rescue_puts_lapsed_runs_back_or_kills_the_last_attempt(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        again, last = (
            r.id for r in store.insert([new_job(at=now), new_job(at=now, max_attempts=1)])
        )
        runs = claim(store, now)
        assert store.rescue(now=now + LEASE - timedelta(seconds=1)) == []
        rescued = store.rescue(now=now + LEASE + timedelta(seconds=1))
        assert sorted((r.id, r.state) for r in rescued) == [(again, "available"), (last, "dead")]
        for job_id in (again, last):
            record = store.get(job_id)
            assert record is not None and record.errors[-1]["type"] == "LeaseExpired"
        assert store.finish([Finish(run=runs[0].run, state="completed", at=now)]) == [False]

    def test_prune_deletes_finished_jobs_past_their_horizon(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        (old, young) = (r.id for r in store.insert([new_job(at=now), new_job(at=now)]))
        first, second = claim(store, now)
        later = now + timedelta(hours=1)
        store.finish(
            [
                Finish(run=first.run, state="completed", at=now),
                Finish(run=second.run, state="completed", at=later),
            ]
        )
        horizons = {"completed": timedelta(minutes=30)}
        assert store.prune(now=later, horizons=horizons) == 1
        assert store.get(old) is None and store.get(young) is not None

    # -- admin -----------------------------------------------------------------------------
    def test_cancel_retry_and_delete(self, store: Store, clock: FakeClock) -> None:
        now = clock()
        (waiting,) = (r.id for r in store.insert([new_job(at=now)]))
        cancelled = store.cancel(waiting, now=now)
        assert cancelled is not None and cancelled.state == "cancelled"
        again = store.cancel(waiting, now=now)
        assert again is not None and again.state == "cancelled"  # a finished job stays
        retried = store.retry(waiting, now=now)
        assert retried is not None and retried.state == "available"
        assert store.delete(waiting) is True and store.get(waiting) is None
        assert store.delete(waiting) is False
        assert store.cancel(waiting, now=now) is None and store.retry(waiting, now=now) is None

    def test_counts_follow_the_jobs(self, store: Store, clock: FakeClock) -> None:
        now = clock()
        store.insert([new_job(at=now, queue=q) for q in ("a", "a", "b")])
        later = now + timedelta(hours=1)
        store.insert([new_job(at=now, queue="b", scheduled_at=later, state="scheduled")])
        (claimed,) = claim(store, now, queue="a", limit=1)
        store.finish([Finish(run=claimed.run, state="completed", at=now)])
        expected = {"a": {"available": 1, "completed": 1}, "b": {"available": 1, "scheduled": 1}}
        assert store.counts() == expected == recount(store)
        assert store.queued_counts(["a"]) == {"a": {"available": 1}}

    def test_a_paused_queue_yields_no_job_until_resumed(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        (job,) = store.insert([new_job(at=now)])
        assert store.pause("default", now=now) is True
        assert store.pause("default", now=now + timedelta(seconds=1)) is False
        assert store.paused_queues() == {"default": now}
        assert claim(store, now) == []
        assert store.resume("default") is True and store.resume("default") is False
        assert [c.record.id for c in claim(store, now)] == [job.id]

    # -- maintenance -----------------------------------------------------------------------
    def test_leadership_is_exclusive(self, store: Store, clock: FakeClock) -> None:
        now, ttl = clock(), timedelta(seconds=30)
        assert store.lead(instance="a", now=now, ttl=ttl) is True
        assert store.lead(instance="b", now=now, ttl=ttl) is False
        assert store.lead(instance="a", now=now, ttl=ttl) is True  # renewed
        if store.leadership_lapses:
            later = now + ttl + timedelta(seconds=1)
            assert store.lead(instance="b", now=later, ttl=ttl) is True
            store.resign(instance="b")
        else:
            store.resign(instance="a")
        assert store.lead(instance="b", now=now, ttl=ttl) is True
        store.resign(instance="b")

    def test_a_cron_tick_is_taken_once_by_racing_schedulers(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        assert store.cron_advance(name="c", tick=now, job=None) is None  # first sighting
        tick = now + timedelta(hours=1)
        jobs = [new_job(at=tick, args={"i": i}) for i in range(6)]
        results = race(6, lambda i: store.cron_advance(name="c", tick=tick, job=jobs[i]))
        (inserted,) = [result for result in results if result is not None]
        state = store.cron_states(["c"])["c"]
        assert (state.last_tick_at, state.last_job_id) == (tick, inserted.id)
        assert store.cron_advance(name="c", tick=tick, job=jobs[0]) is None

    def test_worker_records_expire_and_are_pruned(self, store: Store, clock: FakeClock) -> None:
        now = clock()
        record = WorkerRecord(
            id="host:1:abc",
            host="host",
            pid=1,
            version="1",
            queues=(),
            started_at=now,
            last_seen=now,
            expires_at=now + timedelta(seconds=30),
        )
        store.record_worker(record)
        assert store.workers(now=now) == [record]
        assert store.workers(now=record.expires_at) == []  # expired, pruned or not
        assert store.prune_workers(now=record.expires_at) == 1
        store.record_worker(record)
        assert store.remove_worker(record.id) is True and store.remove_worker(record.id) is False

    def test_a_worker_control_is_kept_until_its_record_goes(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        record = WorkerRecord(
            id="host:2:def",
            host="host",
            pid=2,
            version="1",
            queues=(),
            started_at=now,
            last_seen=now,
            expires_at=now + timedelta(seconds=30),
        )
        quiet = WorkerControl(action="quiet", by="ops", at=now, surface="route")
        stop = WorkerControl(action="stop", by="ops", at=now, surface="route")
        assert store.request_worker_control(record.id, quiet, now=now) is False
        store.record_worker(record)
        assert store.request_worker_control(record.id, stop, now=now) is True
        assert store.request_worker_control(record.id, quiet, now=now) is True
        assert store.worker_control(record.id) == stop  # a stop outlasts a later quiet
        assert store.workers(now=now)[0].control == stop
        assert store.remove_worker(record.id) and store.worker_control(record.id) is None

    def test_audit_entries_are_listed_newest_first_and_pruned_by_age(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        for n in range(3):
            store.record_audit(
                AuditEntry(
                    at=now + timedelta(seconds=n),
                    actor="ops",
                    action="retry" if n != 1 else "delete",
                    target=f"job {n}",
                    surface="cli",
                )
            )
        assert [e.target for e in store.audit_entries()] == ["job 2", "job 1", "job 0"]
        assert [e.target for e in store.audit_entries(action="retry", limit=1)] == ["job 2"]
        assert store.prune_audit(before=now + timedelta(seconds=1)) == 1
        assert [e.target for e in store.audit_entries()] == ["job 2", "job 1"]

    # -- the statistics' history -------------------------------------------------------------
    def test_a_roll_up_sums_ended_hours_once_and_outlives_the_minutes(
        self, store: Store, clock: FakeClock
    ) -> None:
        queue, start = "contract-history", clock()  # the start of an hour
        store.insert([new_job(at=start, queue=queue) for _ in range(3)])
        runs = claim(store, start + timedelta(minutes=10), limit=3, queue=queue)
        ended = start + timedelta(minutes=11)
        store.finish([Finish(run=c.run, state="completed", at=ended) for c in runs])
        now, keep = start + timedelta(hours=1, minutes=5), timedelta(days=30)

        def read(resolution: Any) -> list[tuple[Any, int, int]]:
            found = store.stats([queue], since=start, until=now, resolution=resolution)
            return [(p.at, p.started, p.completed) for p in found.get(queue, [])]

        before = read("hour")
        assert before == [(start, 3, 3)]
        assert store.roll_up_stats(now=now, keep=keep) == 1
        assert store.roll_up_stats(now=now, keep=keep) == 0  # the same sums: nothing written
        assert read("hour") == before
        store.prune_stats(minutes_before=now + timedelta(days=2), hours_before=start)
        assert read("minute") == []
        assert read("hour") == before  # from the rolled-up hour alone
        store.prune_stats(minutes_before=now, hours_before=now)
        assert read("hour") == []

    # -- workflows -------------------------------------------------------------------------
    def test_a_finished_step_settles_its_dependents_without_being_told(
        self, store: Store, clock: FakeClock
    ) -> None:
        """`finish` carries no sign that a run is a workflow step: the store knows."""
        now = clock()
        workflow = NewWorkflow(id="wf-contract", name="pair", created_at=now)
        first, then = store.insert_workflow(
            workflow,
            [
                NewStep(job=new_job(at=now), name="first"),
                NewStep(job=new_job(at=now), name="then", after=(0,)),
            ],
            last=True,
            now=now,
        )
        pending = store.get(then)
        assert pending is not None and pending.state == "pending"
        (claimed,) = claim(store, now)
        assert claimed.record.id == first and claimed.record.workflow_id == "wf-contract"
        done = Finish(run=claimed.run, state="completed", at=now, result='"one"')
        assert store.finish([done]) == [True]
        ready = store.get(then)
        assert ready is not None and ready.state == "available"
        assert store.dependency_results(then) == {"first": "one"}
        row = store.workflow("wf-contract")
        assert row is not None and {r.id for r in row.steps} == {first, then}
        assert store.cancel_workflow("wf-contract", now=now) is True
        cancelled = store.get(then)
        assert cancelled is not None and cancelled.state in FINAL_STATES

    # -- limits ----------------------------------------------------------------------------
    def test_a_limited_claim_keeps_the_global_concurrency(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        store.insert([new_job(at=now, queue="lim") for _ in range(3)])
        limits = Limits(global_concurrency=2)
        taken = store.claim_limited(
            "lim", limits=limits, kinds=None, limit=3, now=now, lease_until=now + LEASE, worker="w"
        )
        assert len(taken.jobs) == 2 and taken.held
        assert store.held_count("lim", limits, now=now) == 1
        store.finish([Finish(run=taken.jobs[0].run, state="completed", at=now)])
        more = store.claim_limited(
            "lim", limits=limits, kinds=None, limit=3, now=now, lease_until=now + LEASE, worker="w"
        )
        assert len(more.jobs) == 1
        assert store.runtime_limits() == {}

    # -- enqueue flow: debounce, latest wins, latency ----------------------------------------
    def test_a_debounced_insert_folds_while_its_job_waits(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()

        def debounced(at: Any, n: int) -> Any:
            return new_job(
                at=at,
                args={"n": n},
                state="scheduled",
                scheduled_at=at + timedelta(seconds=10),
                debounce_key="debounce:contract.job:k",
                debounce_max_wait=timedelta(seconds=15),
            )

        first = store.insert_debounced(debounced(now, 1))
        assert first.inserted
        folded = store.insert_debounced(debounced(now + timedelta(seconds=8), 2))
        assert folded == type(first)(first.id, False)
        record = store.get(first.id)
        assert record is not None and record.args == {"n": 2} and record.unique_key is None
        # The cap: 15 s after the first insert, not 18 s.
        assert record.scheduled_at == now + timedelta(seconds=15)
        assert store.counts() == {"default": {"scheduled": 1}}
        # Due: the next insert makes a new job.
        later = store.insert_debounced(debounced(now + timedelta(seconds=15), 3))
        assert later.inserted and later.id != first.id

    def test_a_replacing_insert_cancels_the_holder_in_the_same_write(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        old = store.insert([new_job(at=now, unique_key="contract.job:k")])[0]
        (claimed,) = claim(store, now)
        new = store.insert_replacing(new_job(at=now, unique_key="contract.job:k", replace=True))
        assert new.inserted and new.id != old.id
        record = store.get(old.id)
        assert record is not None and record.state == "cancelled"
        assert record.errors[-1]["type"] == "Replaced" and record.errors[-1]["attempt"] == 1
        assert store.heartbeat([claimed.run], lease_until=now + LEASE) == set()
        assert store.insert([new_job(at=now, unique_key="contract.job:k")])[0].id == new.id

    def test_oldest_available_reads_the_lowest_scheduled_at(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        store.insert([new_job(at=now, priority=3)])
        store.insert([new_job(at=now + timedelta(seconds=5), priority=-3)])
        store.insert(
            [
                new_job(
                    at=now, queue="other", state="scheduled", scheduled_at=now + timedelta(hours=1)
                )
            ]
        )
        assert store.oldest_available(["default", "other"]) == {"default": now}
        assert store.sequence_holder(1) is None and store.awaited_signal(1) is None

    # -- safe deploys and payloads (docs/deploys.md, encryption.md, offload.md) -----------
    def test_a_claim_admits_only_the_versions_it_names(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        v1, v2, v3 = (r.id for r in store.insert([new_job(at=now, version=v) for v in (1, 2, 3)]))
        assert store.get(v2).version == 2  # type: ignore[union-attr]
        first = claim(store, now, kinds=["contract.job", "contract.job@3"])
        assert sorted(c.record.id for c in first) == [v1, v3]
        assert {c.record.id: c.record.version for c in first} == {v1: 1, v3: 3}
        assert claim(store, now, kinds=["contract.job"]) == []
        assert [c.record.id for c in claim(store, now, kinds=["contract.job@2"])] == [v2]

    def test_rename_kind_is_fenced_and_live_versions_count_unfinished_jobs(
        self, store: Store, clock: FakeClock
    ) -> None:
        now = clock()
        store.insert([new_job(at=now, kind="old.name"), new_job(at=now, version=2)])
        (taken,) = claim(store, now, kinds=["old.name"])
        assert store.live_versions() == {("old.name", 1): 1, ("contract.job", 2): 1}
        assert store.rename_kind(taken.run, "new.name")
        assert store.get(taken.record.id).kind == "new.name"  # type: ignore[union-attr]
        assert [r.id for r in store.list(ListFilter(kind="new.name"))] == [taken.record.id]
        store.finish([Finish(run=taken.run, state="completed", at=now)])
        assert not store.rename_kind(taken.run, "other.name")  # no longer running
        assert store.live_versions() == {("contract.job", 2): 1}

    def test_rewrite_payload_and_expired(self, store: Store, clock: FakeClock) -> None:
        now = clock()
        (job,) = store.insert([new_job(at=now, args={"a": 1})])
        (taken,) = claim(store, now)
        store.finish([Finish(run=taken.run, state="completed", at=now, result='{"r": 1}')])
        assert store.rewrite_payload(job.id, args={"b": 2}, result=None)
        record = store.get(job.id)
        assert record is not None and (record.args, record.result) == ({"b": 2}, {"r": 1})
        assert store.rewrite_payload(job.id, args=None, result='{"r": 2}')
        assert store.get(job.id).result == {"r": 2}  # type: ignore[union-attr]
        assert not store.rewrite_payload(job.id + 1000, args={}, result=None)
        horizons = {"completed": timedelta(hours=1)}
        assert store.expired(now=now, horizons=horizons) == []
        later = now + timedelta(hours=2)
        assert [r.id for r in store.expired(now=later, horizons=horizons)] == [job.id]
        assert store.prune(now=later, horizons=horizons) == 1

    def test_rewrite_steps(self, store: Store, clock: FakeClock) -> None:
        now = clock()
        plain, stepped = store.insert([new_job(at=now), new_job(at=now)])
        taken = {c.record.id: c for c in claim(store, now, limit=2)}
        run = taken[stepped.id].run
        assert store.record_step(run, name="a", value='{"v":1}', at=now)
        assert store.record_step(run, name="b", value='"kept"', at=now)

        def bump(text: str) -> str:
            value = json.loads(text)
            return json.dumps({"v": value["v"] + 1}) if isinstance(value, dict) else text

        assert store.rewrite_steps(stepped.id, bump)
        state = store.durable_state(stepped.id)
        assert state is not None
        assert [(e.name, e.value, e.at) for e in state.steps] == [
            ("a", {"v": 2}, now),
            ("b", "kept", now),
        ]
        assert store.rewrite_steps(plain.id, bump)  # no steps: nothing to rewrite
        assert not store.rewrite_steps(stepped.id + 1000, bump)

        def refuse(text: str) -> str:
            if json.loads(text) == "kept":
                raise ValueError("no key opens it")
            return bump(text)

        with pytest.raises(ValueError):
            store.rewrite_steps(stepped.id, refuse)
        # Nothing was written: the step rewritten before the refusal keeps its value.
        assert [e.value for e in store.durable_state(stepped.id).steps] == [{"v": 2}, "kept"]  # type: ignore[union-attr]
        # Rewritten whatever the job's state, and the run's fence is not needed.
        store.finish([Finish(run=run, state="completed", at=now, result="null")])
        assert store.rewrite_steps(stepped.id, bump)
        assert store.get(stepped.id).steps["a"]["result"] == {"v": 3}  # type: ignore[union-attr]

    # -- the state machines ----------------------------------------------------------------
    def test_the_store_behaves_like_the_memory_store(self, store: Store, clock: FakeClock) -> None:
        machine = jobs_machine.make_machine(store, clock())
        run_state_machine_as_test(machine, settings=self._machine_settings("jobs"))

    def test_workflows_keep_their_rules_under_random_runs(
        self, store: Store, clock: FakeClock
    ) -> None:
        machine = workflow_machine.make_machine(store, clock(), "wf-machine")
        run_state_machine_as_test(machine, settings=self._machine_settings("workflows"))

    def test_no_interleaving_of_claims_exceeds_a_limit(self, store: Store) -> None:
        machine = limits_machine.machine_for(store)
        run_state_machine_as_test(machine, settings=self._machine_settings("limits"))

    def test_durable_steps_sleeps_and_signals_behave_like_the_model(self, store: Store) -> None:
        machine = durable_machine.machine_for(store)
        run_state_machine_as_test(machine, settings=self._machine_settings("durable"))
