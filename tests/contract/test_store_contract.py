"""The store contract suite: the same behaviour, asserted on every store (memory, SQLite,
PostgreSQL, Redis), driven through the public `jobs` facade in manual mode.

Time moves only when a test advances the fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext

from anole_jobs import Enqueued, InvalidJob, JobNotFound, NewQueue, Unique, kind
from anole_jobs.backoff import ceiling
from anole_jobs.stores.base import Finish, NewJob
from tests.sampleapp.jobs import CustomBackoff, Orphan, Prioritized, Validated, Work
from tests.support.rows import insert_undecodable


def claim_at(store, now, *, limit, queue="default", kinds=None, worker="w"):
    """Claim directly from the store with a 30 s lease, as a worker would."""
    return store.claim(
        queue,
        kinds=kinds,
        limit=limit,
        now=now,
        lease_until=now + timedelta(seconds=30),
        worker=worker,
    )


def state_of(env, job_id):
    record = env.jobs.get(job_id)
    assert record is not None, f"job {job_id} vanished"
    return record.state


# -- enqueue ---------------------------------------------------------------------------------


def test_enqueue_makes_an_available_job_with_the_kind_options(env):
    result = env.jobs.enqueue(Work(action="ok", tag="a"), meta={"origin": "test"})
    assert isinstance(result, Enqueued) and result.inserted and result.id > 0
    record = env.jobs.get(result.id)
    assert record.state == "available"
    assert record.kind == "test.work"
    assert record.queue == "default"
    assert record.args == {"action": "ok", "seconds": 0, "tag": "a"}
    assert record.meta == {"origin": "test"}
    assert record.attempt == 0 and record.max_attempts == 3
    assert record.created_at == env.clock() == record.scheduled_at
    assert record.errors == () and record.finished_at is None


def test_delay_and_run_at_schedule_the_job(env):
    delayed = env.jobs.enqueue(Work(), delay=30)
    at = env.clock() + timedelta(hours=1)
    pinned = env.jobs.enqueue(Work(), run_at=at)
    past = env.jobs.enqueue(Work(), run_at=env.clock() - timedelta(seconds=5))
    assert env.jobs.get(delayed.id).state == "scheduled"
    assert env.jobs.get(delayed.id).scheduled_at == env.clock() + timedelta(seconds=30)
    assert env.jobs.get(pinned.id).scheduled_at == at
    assert env.jobs.get(past.id).state == "available"


def test_enqueue_options_override_the_kind(env):
    result = env.jobs.enqueue(Work(), priority=-7, queue="mail")
    record = env.jobs.get(result.id)
    assert (record.priority, record.queue) == (-7, "mail")


def test_undecorated_args_raise_invalid_job(env):
    @dataclass
    class NotAKind:
        x: int

    with pytest.raises(InvalidJob, match="not a job kind"):
        env.jobs.enqueue(NotAKind(1))
    assert env.jobs.counts() == {}


def test_non_json_args_raise_invalid_job_naming_the_field(env):
    with pytest.raises(InvalidJob, match="tag"):
        env.jobs.enqueue(Work(tag={1, 2}))  # type: ignore[arg-type]
    assert env.jobs.counts() == {}


def test_field_rules_are_checked_at_enqueue(env):
    with pytest.raises(InvalidJob, match="greater than or equal to 1"):
        env.jobs.enqueue(Validated(count=0))
    with pytest.raises(InvalidJob, match="must not be 'bad'"):
        env.jobs.enqueue(Validated(count=1, label="bad"))


def test_priority_out_of_range_raises(env):
    with pytest.raises(InvalidJob, match="-100..100"):
        env.jobs.enqueue(Work(), priority=101)


def test_bad_meta_and_delay_raise(env):
    with pytest.raises(InvalidJob, match="meta"):
        env.jobs.enqueue(Work(), meta={"x": object()})
    with pytest.raises(InvalidJob):
        env.jobs.enqueue(Work(), delay=-1)
    with pytest.raises(InvalidJob, match="aware"):
        env.jobs.enqueue(Work(), run_at=env.clock().replace(tzinfo=None))


def test_enqueue_many_inserts_in_order(env):
    results = env.jobs.enqueue_many([Work(tag=str(i)) for i in range(25)], queue="mail")
    assert [r.inserted for r in results] == [True] * 25
    ids = [r.id for r in results]
    assert ids == sorted(ids) and len(set(ids)) == 25
    assert [env.jobs.get(i).args["tag"] for i in ids] == [str(i) for i in range(25)]
    assert env.jobs.counts() == {"mail": {"available": 25}}


def test_enqueue_many_is_one_round_trip_per_batch(env):
    if env.alias is None:
        pytest.skip("queries are counted on the store's Django database; Redis counts its calls")
    connection = connections[env.alias]
    env.jobs.enqueue(Work())  # warm up: build the service outside the count
    with CaptureQueriesContext(connection) as queries:
        env.jobs.enqueue_many([Work(tag=str(i)) for i in range(300)])
    assert len(queries) == 1, [q["sql"][:80] for q in queries]


def test_enqueue_many_rejects_the_whole_batch_on_one_bad_item(env):
    with pytest.raises(InvalidJob):
        env.jobs.enqueue_many([Work(), Work(tag=object())])  # type: ignore[arg-type]
    assert env.jobs.counts() == {}


def test_insert_mixes_key_holders_fresh_keys_and_plain_jobs_in_one_batch(env):
    # The store takes the ids of a batch's new jobs at once and returns holders for the held
    # keys: each result must still name the right job, new ids growing in batch order.
    from anole_jobs import Unique

    store = env.jobs.service.store
    held = env.jobs.enqueue(Work(tag="held"), unique=Unique(key="held"))
    now = env.clock()
    later = now + timedelta(minutes=5)

    def build(tag, **options):
        return env.jobs.service.build(Work(tag=tag), now=now, meta={"tag": tag}, **options)

    batch = [
        build("a"),
        build("dup", unique=Unique(key="held")),
        build("b", unique=Unique(key="fresh")),
        build("c", run_at=later),
        build("d"),
    ]
    results = store.insert(batch)
    assert [r.inserted for r in results] == [True, False, True, True, True]
    assert results[1].id == held.id
    new_ids = [r.id for r in results if r.inserted]
    assert new_ids == sorted(new_ids) and len(set(new_ids)) == 4 and held.id < new_ids[0]
    for result, job in zip(results, batch, strict=True):
        record = env.jobs.get(result.id)
        expected_tag = "held" if not result.inserted else job.args["tag"]
        assert record.args["tag"] == expected_tag
        if result.inserted:
            assert record.meta == {"tag": expected_tag}
            assert (record.state, record.scheduled_at) == (job.state, job.scheduled_at)
            assert record.created_at == now and record.unique_key == job.unique_key
    assert env.jobs.get(results[3].id).state == "scheduled"
    # One job alone (every single enqueue) keeps the same rules.
    (again,) = store.insert([build("dup2", unique=Unique(key="fresh"))])
    assert again == type(again)(results[2].id, False)
    (alone,) = store.insert([build("e", run_at=later)])
    assert alone.inserted and alone.id > new_ids[-1]
    assert env.jobs.get(alone.id).state == "scheduled"
    assert env.jobs.counts() == {"default": {"available": 4, "scheduled": 2}}


def test_enqueue_many_resolves_keys_repeated_in_a_batch_across_batches_and_already_held(env):
    # 2,500 unique jobs (three store batches) over 700 keys: keys repeat inside a batch and
    # across batches, and one is held by a job enqueued before the call.
    held = env.jobs.enqueue(Work(tag="k-3"), unique=Unique())
    tags = [f"k-{i % 700}" for i in range(2500)]
    results = env.jobs.enqueue_many([Work(tag=tag) for tag in tags], unique=Unique())
    first_of: dict[str, int] = {"k-3": held.id}
    for tag, result in zip(tags, results, strict=True):
        if tag not in first_of:
            assert result.inserted, tag
            first_of[tag] = result.id
        else:
            assert result == Enqueued(first_of[tag], False), tag
    new_ids = [first_of[f"k-{i}"] for i in range(700) if i != 3]
    assert new_ids == sorted(new_ids) and held.id < new_ids[0]
    assert {env.jobs.get(first_of[tag]).args["tag"] for tag in ("k-0", "k-3", "k-699")} == {
        "k-0",
        "k-3",
        "k-699",
    }
    # A batch of new keys, held keys and plain jobs: each result names the right job.
    mixed = env.jobs.enqueue_many(
        [Work(tag="k-1"), Work(tag="fresh"), Work(tag="k-1")], unique=Unique()
    )
    assert mixed == [
        Enqueued(first_of["k-1"], False),
        Enqueued(mixed[1].id, True),
        Enqueued(first_of["k-1"], False),
    ]
    plain = env.jobs.enqueue_many([Work(tag="k-1"), Work(tag="k-1")])
    assert all(r.inserted for r in plain) and plain[0].id < plain[1].id
    assert env.jobs.counts() == {"default": {"available": 700 + 1 + 2}}


def test_enqueue_many_in_a_rolled_back_transaction_leaves_no_job(env):
    env.require("supports_transactions")

    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic(using=env.alias):
        # Three batches, the last with a unique job in it.
        results = env.jobs.enqueue_many([Work(tag=str(i)) for i in range(2500)])
        results += env.jobs.enqueue_many([Work(tag="k")], unique=Unique())
        assert len(results) == 2501 and env.jobs.counts() == {"default": {"available": 2501}}
        raise Boom
    assert env.jobs.counts() == {}
    assert env.jobs.list() == []
    after = env.jobs.enqueue_many([Work(tag=str(i)) for i in range(3)])
    assert [env.jobs.get(r.id).args["tag"] for r in after] == ["0", "1", "2"]


def test_list_by_queue_kind_and_state_merges_every_state_newest_first(env):
    # The SQL stores read the waiting, running and other jobs of a queue or kind through
    # different indexes and merge them: the merged order and pages must be the plain ones.
    store = env.jobs.service.store
    now = env.clock()
    ids = [r.id for r in env.jobs.enqueue_many([Work(tag=str(i)) for i in range(6)])]
    mail = [env.jobs.enqueue(Prioritized(name=str(i))).id for i in range(3)]
    later = env.jobs.enqueue(Work(tag="later"), delay=60).id
    (running,) = claim_at(store, now, limit=1)  # the oldest default job
    done = claim_at(store, now, limit=2)
    store.finish([Finish(run=c.run, state="completed", at=now) for c in done])
    assert running.record.id == ids[0] and [c.record.id for c in done] == ids[1:3]
    newest_default = [later, *reversed(ids)]
    assert [r.id for r in env.jobs.list(queue="default")] == newest_default
    assert [r.id for r in env.jobs.list(kind="test.work")] == newest_default
    assert [r.id for r in env.jobs.list(queue="mail")] == list(reversed(mail))
    page = env.jobs.list(queue="default", limit=3)
    assert [r.id for r in page] == newest_default[:3]
    rest = env.jobs.list(queue="default", limit=10, after=page[-1].id)
    assert [r.id for r in rest] == newest_default[3:]
    assert [r.id for r in env.jobs.list(kind="test.work", limit=4, after=ids[4])] == [
        ids[3],
        ids[2],
        ids[1],
        ids[0],
    ]
    by_state = {
        state: [r.id for r in env.jobs.list(state=state)]
        for state in ("available", "running", "completed", "scheduled")
    }
    assert by_state == {
        "available": [*reversed(mail), ids[5], ids[4], ids[3]],
        "running": [ids[0]],
        "completed": [ids[2], ids[1]],
        "scheduled": [later],
    }
    assert [r.id for r in env.jobs.list(queue="default", state="available")] == ids[:2:-1]
    assert [r.id for r in env.jobs.list(kind="test.work", state="running")] == [ids[0]]
    assert [r.id for r in env.jobs.list(queue="mail", state="completed")] == []


# -- outcomes ----------------------------------------------------------------------------------


def test_success_completes_the_job(env, recorder):
    job = env.jobs.enqueue(Work(action="ok"))
    report = env.jobs.step()
    assert [(r.job_id, r.outcome, r.attempt) for r in report.runs] == [(job.id, "completed", 1)]
    record = env.jobs.get(job.id)
    assert record.state == "completed"
    assert record.attempt == 1
    assert record.finished_at == env.clock()
    assert recorder == [{"id": job.id, "attempt": 1, "action": "ok", "tag": ""}]


def test_failure_retries_with_default_backoff_then_dies(env, recorder):
    job = env.jobs.enqueue(Work(action="fail"))
    for attempt in (1, 2):
        now = env.clock()
        report = env.jobs.step()
        assert report.outcomes() == {job.id: "retried"}
        record = env.jobs.get(job.id)
        assert record.state == "retrying"
        assert record.attempt == attempt
        d = ceiling(attempt)
        assert (
            now + d / 2 <= record.scheduled_at <= now + d
        )  # the default backoff's equal jitter: between d/2 and d
        # Not due yet: nothing runs.
        env.clock.advance(
            d / 2 - timedelta(microseconds=1) if d / 2 > record.scheduled_at - now else 0
        )
        env.clock.set(record.scheduled_at - timedelta(microseconds=1))
        assert env.jobs.step().runs == []
        env.clock.set(record.scheduled_at)
    report = env.jobs.step()
    assert report.outcomes() == {job.id: "dead"}
    record = env.jobs.get(job.id)
    assert record.state == "dead" and record.attempt == 3
    assert [e["attempt"] for e in record.errors] == [1, 2, 3]
    assert {e["type"] for e in record.errors} == {"ValueError"}
    assert record.errors[0]["message"] == "failed on attempt 1"
    assert "raise ValueError" in record.errors[0]["traceback"]
    assert record.finished_at == env.clock()
    assert [c["attempt"] for c in recorder] == [1, 2, 3]


def test_custom_backoff_is_used(env):
    job = env.jobs.enqueue(CustomBackoff())
    now = env.clock()
    env.jobs.step()
    assert env.jobs.get(job.id).scheduled_at == now + timedelta(seconds=10)


def test_snooze_does_not_count_the_attempt(env, recorder):
    job = env.jobs.enqueue(Work(action="snooze", seconds=60))
    report = env.jobs.step()
    assert report.outcomes() == {job.id: "snoozed"}
    record = env.jobs.get(job.id)
    assert record.state == "scheduled"
    assert record.attempt == 0
    assert record.scheduled_at == env.clock() + timedelta(seconds=60)
    assert record.errors == ()
    env.clock.advance(59)
    assert env.jobs.step().runs == []
    env.clock.advance(1)
    report = env.jobs.step()
    assert [(r.attempt, r.outcome) for r in report.runs] == [(1, "snoozed")]
    assert [c["attempt"] for c in recorder] == [1, 1]


def test_discard_kills_at_once_with_the_reason(env):
    job = env.jobs.enqueue(Work(action="discard"))
    assert env.jobs.step().outcomes() == {job.id: "dead"}
    record = env.jobs.get(job.id)
    assert record.state == "dead" and record.attempt == 1
    assert [(e["type"], e["message"]) for e in record.errors] == [
        ("Discarded", "not worth retrying")
    ]


def test_retry_in_is_a_failed_attempt_after_the_delay(env):
    job = env.jobs.enqueue(Work(action="retry_in", seconds=5))
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    record = env.jobs.get(job.id)
    assert record.state == "retrying" and record.attempt == 1
    assert record.scheduled_at == env.clock() + timedelta(seconds=5)
    assert len(record.errors) == 1


def test_explain_is_stored_with_the_error(env):
    job = env.jobs.enqueue(Work(action="explain_fail"))
    env.jobs.step()
    (error,) = env.jobs.get(job.id).errors
    assert error["type"] == "RuntimeError"
    assert error["message"] == "calling the webhook: 503 from upstream"


def test_control_flow_is_not_swallowed_by_except_exception(env):
    job = env.jobs.enqueue(Work(action="bare_except", seconds=10))
    assert env.jobs.step().outcomes() == {job.id: "snoozed"}


def test_async_handlers_run_and_fail_like_sync_ones(env, recorder):
    from tests.sampleapp.jobs import AsyncWork

    ok = env.jobs.enqueue(AsyncWork())
    bad = env.jobs.enqueue(AsyncWork(fail=True))
    assert env.jobs.step().outcomes() == {ok.id: "completed", bad.id: "retried"}
    assert env.jobs.get(bad.id).errors[0]["type"] == "ValueError"


def test_a_payload_that_no_longer_decodes_is_discarded(env):
    now = env.clock()
    job_id = insert_undecodable(env.store, now)
    assert env.jobs.step().outcomes() == {job_id: "dead"}
    record = env.jobs.get(job_id)
    assert record.state == "dead" and record.attempt == 1
    (error,) = record.errors
    assert error["type"] == "Discarded" and "count" in error["message"]


def test_a_field_rule_violation_in_storage_is_discarded(env):
    now = env.clock()
    (inserted,) = env.store.insert(
        [
            NewJob(
                kind="test.validated",
                queue="default",
                args={"count": 0},
                meta={},
                priority=0,
                max_attempts=5,
                state="available",
                scheduled_at=now,
                created_at=now,
            )
        ]
    )
    env.jobs.step()
    (error,) = env.jobs.get(inserted.id).errors
    assert "greater than or equal to 1" in error["message"]


def test_unknown_kind_stays_waiting_and_is_logged_once(env, caplog):
    orphan = env.jobs.enqueue(Orphan(n=1))
    other = env.jobs.enqueue(Work())
    with caplog.at_level("WARNING", logger="anole_jobs"):
        first = env.jobs.step()
        env.jobs.enqueue(Orphan(n=2))
        second = env.jobs.step()
    assert first.outcomes() == {other.id: "completed"}
    assert second.runs == []
    assert env.jobs.get(orphan.id).state == "available"
    assert env.jobs.get(orphan.id).attempt == 0
    # Logged at most once per kind per process (another test may have logged it already).
    assert sum("test.orphan" in r.getMessage() for r in caplog.records) <= 1


# -- ordering and scheduling ------------------------------------------------------------------


def test_priority_then_time_then_id_order(env, recorder):
    low = env.jobs.enqueue(Prioritized(name="low"), priority=-5)
    high = env.jobs.enqueue(Prioritized(name="high"), priority=50)
    default_first = env.jobs.enqueue(Prioritized(name="default-1"))
    env.clock.advance(1)
    default_second = env.jobs.enqueue(Prioritized(name="default-2"))
    report = env.jobs.step()
    assert [r.job_id for r in report.runs] == [high.id, default_first.id, default_second.id, low.id]
    assert [c["name"] for c in recorder] == ["high", "default-1", "default-2", "low"]


def test_scheduled_jobs_do_not_run_before_due(env, recorder):
    job = env.jobs.enqueue(Work(), delay=timedelta(minutes=5))
    env.clock.advance(timedelta(minutes=5) - timedelta(microseconds=1))
    report = env.jobs.step()
    assert report.runs == [] and report.staged == 0
    env.clock.advance(timedelta(microseconds=1))
    report = env.jobs.step()
    assert report.staged == 1
    assert report.outcomes() == {job.id: "completed"}


def test_only_configured_queues_run(env):
    job = env.jobs.enqueue(Work(), queue=NewQueue("elsewhere"))
    assert env.jobs.step().runs == []
    assert env.jobs.get(job.id).state == "available"


# -- leases and fencing -----------------------------------------------------------------------


def test_rescue_puts_a_lapsed_job_back_and_its_stale_outcome_is_not_saved(env, recorder):
    from tests.sampleapp import jobs as sample

    lease = env.jobs.service.settings.lease
    seen = []

    def lose_the_lease(job, args):
        seen.append(job.attempt)
        if job.attempt == 1:
            # The worker stalls past its lease; another instance rescues and reruns the job.
            env.clock.advance(lease + timedelta(seconds=1))
            nested = env.jobs.step()
            assert nested.rescued == 1
            assert [(r.attempt, r.outcome) for r in nested.runs] == [(2, "completed")]

    sample.HOOKS["stall"] = lose_the_lease
    job = env.jobs.enqueue(Work(action="stall"))
    report = env.jobs.step()
    assert [(r.attempt, r.outcome) for r in report.runs] == [(1, "lost")]
    record = env.jobs.get(job.id)
    assert record.state == "completed" and record.attempt == 2
    assert [e["type"] for e in record.errors] == ["LeaseExpired"]
    assert seen == [1, 2]


def test_rescue_on_the_last_attempt_kills_the_job(env):
    store = env.store
    job = env.jobs.enqueue(Work())
    now = env.clock()
    lease = timedelta(seconds=30)
    for attempt in range(1, 4):
        (claimed,) = store.claim(
            "default", kinds=None, limit=10, now=now, lease_until=now + lease, worker="w"
        )
        assert claimed.run.attempt == attempt
        now = now + lease + timedelta(seconds=1)
        (rescued,) = store.rescue(now=now)
        assert rescued.id == job.id
        assert rescued.state == ("dead" if attempt == 3 else "available")
    record = env.jobs.get(job.id)
    assert record.state == "dead" and record.finished_at == now
    assert [e["type"] for e in record.errors] == ["LeaseExpired"] * 3


def test_rescue_leaves_live_leases_and_finished_jobs_alone(env):
    store = env.store
    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = claim_at(store, now, limit=1)
    assert store.rescue(now=now + timedelta(seconds=29)) == []
    assert store.finish([Finish(run=claimed.run, state="completed", at=now)]) == [True]
    assert store.rescue(now=now + timedelta(hours=1)) == []
    assert env.jobs.get(job.id).state == "completed"


def test_a_claimed_record_is_what_get_returns_right_after(env):
    # Stores may return less from a claim and fill in what they know (state, attempted_at):
    # the record a handler sees must still be the stored one, times to the microsecond.
    from anole_jobs.core import ErrorEntry

    store = env.store
    env.clock.advance(timedelta(microseconds=123_457))
    job = env.jobs.enqueue(Work(tag="é"), meta={"k": [1, {"x": None}]}, priority=3)
    unique = env.jobs.enqueue(Work(tag="u"), unique=Unique(), priority=2)
    now = env.clock()
    first = {c.record.id: c for c in claim_at(store, now, limit=5)}
    assert set(first) == {job.id, unique.id}
    for claimed in first.values():
        assert claimed.record == _without_timeline(env.jobs.get(claimed.record.id))
        assert claimed.record.state == "running" and claimed.record.attempted_at == now
    # A retried job carries its error and its new schedule into the next claim.
    error = ErrorEntry(at=now, attempt=1, type="Boom", message="ü", traceback="tb")
    later = now + timedelta(seconds=5, microseconds=1)
    assert store.finish(
        [Finish(run=first[job.id].run, state="retrying", at=now, scheduled_at=later, error=error)]
    ) == [True]
    env.clock.advance(timedelta(seconds=6))
    store.stage(now=env.clock())
    (again,) = claim_at(store, env.clock(), limit=5)
    assert again.record == _without_timeline(env.jobs.get(job.id))
    assert again.record.scheduled_at == later and again.record.attempt == 2
    assert [e["type"] for e in again.record.errors] == ["Boom"]
    assert again.lease_until == env.clock() + timedelta(seconds=30)


def test_fencing_uses_the_claim_token_not_only_the_attempt(env):
    store = env.store
    job = env.jobs.enqueue(Work())
    now = env.clock()
    until = now + timedelta(seconds=30)
    (first,) = store.claim("default", kinds=None, limit=1, now=now, lease_until=until, worker="a")
    # A drain gives the attempt back...
    assert store.finish(
        [Finish(run=first.run, state="available", at=now, scheduled_at=now, give_back_attempt=True)]
    ) == [True]
    (second,) = store.claim("default", kinds=None, limit=1, now=now, lease_until=until, worker="b")
    assert second.run.attempt == first.run.attempt == 1
    assert second.run.token > first.run.token
    # ...so the stale worker has the same attempt number, but cannot complete, fail or snooze.
    for state in ("completed", "retrying", "scheduled", "dead"):
        assert store.finish([Finish(run=first.run, state=state, at=now, scheduled_at=now)]) == [
            False
        ]
    assert store.heartbeat({first.run}, lease_until=until) == set()
    assert store.heartbeat({second.run}, lease_until=until) == {second.run}
    assert store.finish([Finish(run=second.run, state="completed", at=now)]) == [True]
    assert env.jobs.get(job.id).state == "completed"


def test_finish_batches_report_each_result(env):
    store = env.store
    a, b = env.jobs.enqueue_many([Work(), Work()])
    now = env.clock()
    claimed = claim_at(store, now, limit=5)
    runs = {c.record.id: c.run for c in claimed}
    store.cancel(b.id, now=now)
    results = store.finish(
        [
            Finish(run=runs[a.id], state="completed", at=now),
            Finish(run=runs[b.id], state="completed", at=now),
        ]
    )
    assert results == [True, False]
    assert state_of(env, a.id) == "completed" and state_of(env, b.id) == "cancelled"


def test_claim_only_takes_the_named_kinds(env):
    orphan = env.jobs.enqueue(Orphan())
    work = env.jobs.enqueue(Work())
    now = env.clock()
    claimed = env.store.claim(
        "default",
        kinds={"test.work"},
        limit=10,
        now=now,
        lease_until=now + timedelta(seconds=30),
        worker="w",
    )
    assert [c.record.id for c in claimed] == [work.id]
    assert env.store.waiting_kinds(["default"]) == {"default": {"test.orphan"}}
    assert state_of(env, orphan.id) == "available"


# -- maintenance --------------------------------------------------------------------------------


def test_prune_deletes_finished_jobs_after_their_horizon(env):
    done = env.jobs.enqueue(Work())
    dead = env.jobs.enqueue(Work(action="discard"))
    cancelled = env.jobs.enqueue(Work(), delay=60)
    waiting = env.jobs.enqueue(Work(), delay=timedelta(days=365))
    env.jobs.step()
    env.jobs.cancel(cancelled.id)
    env.clock.advance(timedelta(hours=24))
    assert env.jobs.step().pruned == 0  # horizons are "older than", not "as old as"
    env.clock.advance(timedelta(seconds=1))
    assert env.jobs.step().pruned == 1
    assert env.jobs.get(done.id) is None
    env.clock.advance(timedelta(days=7))
    assert env.jobs.step().pruned == 1
    assert env.jobs.get(cancelled.id) is None
    env.clock.advance(timedelta(days=23))
    assert env.jobs.step().pruned == 1
    assert env.jobs.get(dead.id) is None
    assert state_of(env, waiting.id) == "scheduled"


def test_prune_horizons_come_from_settings(env):
    env.configure(PRUNE={"completed": 60})
    job = env.jobs.enqueue(Work())
    env.jobs.step()
    env.clock.advance(61)
    assert env.jobs.step().pruned == 1
    assert env.jobs.get(job.id) is None


def test_step_reports_leadership(env):
    assert env.jobs.step().leader is True


def test_lead_is_exclusive_until_the_lease_ends(env):
    store = env.store
    now = env.clock()
    ttl = timedelta(seconds=30)
    if not env.has("leadership_lapses"):
        # Leadership held by a session (PostgreSQL's advisory lock): no lease to lapse.
        assert store.lead(instance="a", now=now, ttl=ttl) is True
        assert store.lead(instance="b", now=now, ttl=ttl) is False
        assert store.lead(instance="b", now=now + timedelta(hours=1), ttl=ttl) is False
        assert store.lead(instance="a", now=now + timedelta(hours=1), ttl=ttl) is True
        store.resign(instance="a")
        assert store.lead(instance="b", now=now, ttl=ttl) is True
        return
    assert store.lead(instance="a", now=now, ttl=ttl) is True
    assert store.lead(instance="b", now=now, ttl=ttl) is False
    assert store.lead(instance="a", now=now + timedelta(seconds=20), ttl=ttl) is True
    assert store.lead(instance="b", now=now + timedelta(seconds=49), ttl=ttl) is False
    assert store.lead(instance="b", now=now + timedelta(seconds=51), ttl=ttl) is True
    store.resign(instance="a")  # not the holder: nothing happens
    assert store.lead(instance="a", now=now + timedelta(seconds=52), ttl=ttl) is False
    store.resign(instance="b")
    assert store.lead(instance="a", now=now + timedelta(seconds=52), ttl=ttl) is True


# -- admin ------------------------------------------------------------------------------------


def test_list_is_newest_first_with_keyset_pagination_and_filters(env):
    ids = [r.id for r in env.jobs.enqueue_many([Work(tag=str(i)) for i in range(7)])]
    mail = env.jobs.enqueue(Prioritized(name="m"))
    page1 = env.jobs.list(limit=3)
    assert [r.id for r in page1] == [mail.id, ids[6], ids[5]]
    page2 = env.jobs.list(limit=3, after=page1[-1].id)
    assert [r.id for r in page2] == [ids[4], ids[3], ids[2]]
    assert [r.id for r in env.jobs.list(queue="mail")] == [mail.id]
    assert [r.id for r in env.jobs.list(kind="test.work", limit=2)] == [ids[6], ids[5]]
    assert env.jobs.list(state="completed") == []
    with pytest.raises(InvalidJob):
        env.jobs.list(state="nonsense")


def test_counts_per_queue_and_state(env):
    env.jobs.enqueue_many([Work(), Work(action="fail")])
    env.jobs.enqueue(Work(), delay=60)
    env.jobs.enqueue(Prioritized(name="x"))
    env.jobs.step()
    assert env.jobs.counts() == {
        "default": {"completed": 1, "retrying": 1, "scheduled": 1},
        "mail": {"completed": 1},
    }


def test_retry_cancel_delete(env):
    dead = env.jobs.enqueue(Work(action="discard"))
    waiting = env.jobs.enqueue(Work(), delay=60)
    env.jobs.step()
    record = env.jobs.retry(dead.id)
    assert record.state == "available" and record.finished_at is None
    assert record.max_attempts >= record.attempt + 1
    assert record.scheduled_at == env.clock()
    cancelled = env.jobs.cancel(waiting.id)
    assert cancelled.state == "cancelled" and cancelled.finished_at == env.clock()
    # Cancelling a finished job leaves it as it is.
    assert env.jobs.cancel(waiting.id).state == "cancelled"
    assert env.jobs.delete(waiting.id) is True
    assert env.jobs.get(waiting.id) is None
    assert env.jobs.delete(waiting.id) is False
    with pytest.raises(JobNotFound):
        env.jobs.retry(999_999)
    with pytest.raises(JobNotFound):
        env.jobs.cancel(999_999)
    with pytest.raises(InvalidJob):
        env.jobs.get("12")  # type: ignore[arg-type]


def test_cancel_of_a_running_job_fences_out_its_worker(env):
    store = env.store
    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = claim_at(store, now, limit=1)
    assert env.jobs.cancel(job.id).state == "cancelled"
    assert store.finish([Finish(run=claimed.run, state="completed", at=now)]) == [False]
    assert state_of(env, job.id) == "cancelled"


def test_retry_of_a_running_job_fences_out_its_worker(env):
    store = env.store
    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = claim_at(store, now, limit=1)
    assert env.jobs.retry(job.id).state == "available"
    assert store.finish([Finish(run=claimed.run, state="completed", at=now)]) == [False]
    assert env.jobs.step().outcomes() == {job.id: "completed"}


# -- transactions -----------------------------------------------------------------------------


def test_enqueue_in_a_rolled_back_transaction_leaves_no_job(env):
    env.require("supports_transactions")

    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic(using=env.alias):
        env.jobs.enqueue(Work(tag="rolled back"))
        env.jobs.enqueue_in(Work(tag="also"), using=env.alias)
        raise Boom
    assert env.jobs.counts() == {}
    with transaction.atomic(using=env.alias):
        kept = env.jobs.enqueue_in(Work(tag="kept"), using=env.alias)
    assert state_of(env, kept.id) == "available"


def test_enqueue_in_refuses_without_a_usable_transaction(env, caplog):
    alias = env.alias or "default"
    with caplog.at_level("ERROR", logger="anole_jobs"), pytest.raises(InvalidJob):
        env.jobs.enqueue_in(Work(), using=alias)
    assert "enqueue_in refused" in caplog.text
    if env.has("supports_transactions"):
        other = "pg" if env.alias == "default" else "default"
        with pytest.raises(InvalidJob, match="not the jobs store"):
            env.jobs.enqueue_in(Work(), using=other)
    assert env.jobs.counts() == {}


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_on_commit_defers_the_write_on_stores_without_transactions(env):
    env.require("supports_transactions", absent=True)
    with transaction.atomic():
        result = env.jobs.enqueue(Work(tag="later"), on_commit=True)
        assert result.id is None and env.jobs.counts() == {}
    assert env.jobs.counts() == {"default": {"available": 1}}


def test_complete_in_commits_with_the_handlers_writes(env):
    from tests.sampleapp import jobs as sample

    def complete_in_transaction(job, args):
        if not env.has("supports_transactions"):
            job.complete_in(using="default")  # refused before any database is touched
        with transaction.atomic(using=env.alias):
            job.complete_in(using=env.alias)

    sample.HOOKS["complete_in"] = complete_in_transaction
    job = env.jobs.enqueue(Work(action="complete_in"))
    report = env.jobs.step()
    if env.has("supports_transactions"):
        assert report.outcomes() == {job.id: "completed"}
        assert state_of(env, job.id) == "completed"
    else:
        # No transactions: InvalidJob is an ordinary failure of the attempt.
        assert report.outcomes() == {job.id: "retried"}
        assert env.jobs.get(job.id).errors[0]["type"] == "anole_jobs.errors.InvalidJob"


def test_complete_in_rolled_back_leaves_the_job_to_run_again(env):
    env.require("supports_transactions")
    from tests.sampleapp import jobs as sample

    def roll_back(job, args):
        if job.attempt == 1:
            with transaction.atomic(using=env.alias):
                job.complete_in(using=env.alias)
                transaction.set_rollback(True, using=env.alias)

    sample.HOOKS["roll_back"] = roll_back
    job = env.jobs.enqueue(Work(action="roll_back"))
    assert env.jobs.step().outcomes() == {job.id: "lost"}
    assert state_of(env, job.id) == "running"
    env.clock.advance(env.jobs.service.settings.lease + timedelta(seconds=1))
    report = env.jobs.step()
    assert report.rescued == 1
    assert report.outcomes() == {job.id: "completed"}


# -- unique (basic; the full matrix is in test_unique.py) -----------------------------------------


@kind("test.unique_basic")
@dataclass
class UniqueBasic:
    n: int


def test_unique_enqueue_returns_the_live_job(env):
    from anole_jobs import Unique

    first = env.jobs.enqueue(UniqueBasic(1), unique=Unique())
    again = env.jobs.enqueue(UniqueBasic(1), unique=Unique())
    other = env.jobs.enqueue(UniqueBasic(2), unique=Unique())
    assert first.inserted and not again.inserted and again.id == first.id
    assert other.inserted and other.id != first.id
    batch = env.jobs.enqueue_many([UniqueBasic(3), UniqueBasic(3), UniqueBasic(1)], unique=Unique())
    assert [r.inserted for r in batch] == [True, False, False]
    assert batch[1].id == batch[0].id and batch[2].id == first.id


def test_a_terminated_leader_session_loses_leadership(env):
    if env.name != "postgres":
        pytest.skip("PostgreSQL's advisory-lock session: killed from the server")
    store = env.store
    now = env.clock()
    ttl = timedelta(seconds=30)
    assert store.lead(instance="a", now=now, ttl=ttl) is True
    pid = store.leadership.session_pid("a")
    with connections["pg"].cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    # The next re-check notices: b takes over, and a (on a fresh session) cannot.
    assert store.lead(instance="b", now=now, ttl=ttl) is True
    assert store.lead(instance="a", now=now, ttl=ttl) is False
    store.close()


def _without_timeline(record):
    """`record` as a claim returns it: the job's timeline is `get`'s alone."""
    from dataclasses import replace

    return replace(record, progress=None, logs=[], attempts=[])
