"""Safe deploys on every store (docs/deploys.md): kind aliases, versions and upcasters, and
what `jobs check-deploy` reports.

Jobs "stored by older code" are inserted straight into the store, as that code wrote them: a
kind's former name, an older version's args. A worker "of older code" is modelled by claiming
with the claim keys that code would name.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from anole_jobs import InvalidJob, kind, upcaster
from anole_jobs.core import claim_key
from anole_jobs.kinds import registry
from anole_jobs.stores.base import NewJob
from tests.sampleapp.deploy_jobs import DEPLOY_SEEN, Charge, Invoice


@pytest.fixture(autouse=True)
def _seen():
    DEPLOY_SEEN.clear()
    yield
    DEPLOY_SEEN.clear()


def stored(env, kind_name: str, args: dict, *, version: int = 1) -> int:
    """Insert a job as older (or newer) code would have; its id."""
    now = env.clock()
    job = NewJob(
        kind=kind_name,
        queue="default",
        args=args,
        meta={},
        priority=0,
        max_attempts=2,
        state="available",
        scheduled_at=now,
        created_at=now,
        version=version,
    )
    (inserted,) = env.jobs.service.store.insert([job])
    return inserted.id


# -- aliases ------------------------------------------------------------------------------------
def test_a_job_stored_under_an_alias_runs_with_the_kinds_handler_and_shows_its_name(env):
    job_id = stored(env, "test.payments.charge", {"amount": 5})
    assert env.jobs.get(job_id).kind == "test.payments.charge"
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    assert [("test.billing.charge", job_id, {"amount": 5})] == DEPLOY_SEEN
    record = env.jobs.get(job_id)
    assert (record.kind, record.state) == ("test.billing.charge", "completed")
    assert env.jobs.result(job_id) == {"charged": 5}
    assert [r.id for r in env.jobs.list(kind="test.billing.charge")] == [job_id]


def test_the_kind_is_recorded_when_claimed_even_before_the_run_ends(env):
    job_id = stored(env, "test.payments.charge", {"amount": 1})
    from anole_jobs.worker import claims

    claimed = claims.claim(
        env.jobs.service,
        "default",
        None,
        kinds=registry.handled_kinds(),
        limit=10,
        now=env.clock(),
        worker="w",
    ).jobs
    assert [c.record.kind for c in claimed] == ["test.billing.charge"]
    record = env.jobs.get(job_id)
    assert (record.kind, record.state) == ("test.billing.charge", "running")


def test_an_alias_cannot_be_claimed_twice_by_two_kinds():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="alias"):

        @kind("test.other.charge", aliases=["test.payments.charge"])
        @dataclass
        class _Other:
            n: int = 0

    with pytest.raises(InvalidJob, match="own alias"):
        kind("test.self", aliases=["test.self"])


# -- versions -----------------------------------------------------------------------------------
def test_enqueue_stores_the_kinds_version_and_older_jobs_are_version_one(env):
    new_id = env.jobs.enqueue(Invoice(cents=100, currency="USD")).id
    old_id = stored(env, "test.invoice", {"euros": 3})
    assert env.jobs.get(new_id).version == 3
    assert env.jobs.get(old_id).version == 1
    assert env.jobs.get(env.jobs.enqueue(Charge(amount=1)).id).version == 1
    if env.alias is not None:
        from django.db import connections

        with connections[env.alias].cursor() as cursor:
            cursor.execute(
                f"SELECT id, version FROM {env.store.job_table} WHERE id IN (%s, %s)",
                [new_id, old_id],
            )
            assert dict(cursor.fetchall()) == {new_id: 3, old_id: 1}


def test_older_versions_are_upcast_through_the_chain_before_they_run(env):
    v1 = stored(env, "test.invoice", {"euros": 12})
    v2 = stored(env, "test.invoice", {"cents": 250}, version=2)
    v3 = env.jobs.enqueue(Invoice(cents=7, currency="USD")).id
    assert env.jobs.step().outcomes() == {v1: "completed", v2: "completed", v3: "completed"}
    assert sorted(DEPLOY_SEEN, key=lambda s: s[1]) == [
        ("test.invoice", v1, {"cents": 1200, "currency": "EUR"}),
        ("test.invoice", v2, {"cents": 250, "currency": "EUR"}),
        ("test.invoice", v3, {"cents": 7, "currency": "USD"}),
    ]
    assert env.jobs.result(v1) == {"cents": 1200, "currency": "EUR"}


def test_a_job_of_a_newer_version_is_not_claimed_and_waits(env):
    newer = stored(env, "test.invoice", {"cents": 1, "currency": "EUR", "x": 1}, version=4)
    plain = env.jobs.enqueue(Invoice(cents=1, currency="EUR")).id
    assert env.jobs.step().outcomes() == {plain: "completed"}
    assert env.jobs.step().outcomes() == {}
    assert env.jobs.get(newer).state == "available"
    assert env.jobs.get(newer).attempt == 0
    # A worker that knows version 4 takes it.
    env.clock.advance(timedelta(seconds=1))
    claimed = env.jobs.service.store.claim(
        "default",
        kinds=[claim_key("test.invoice", 4)],
        limit=10,
        now=env.clock(),
        lease_until=env.clock() + timedelta(minutes=1),
        worker="newer",
    )
    assert [(c.record.id, c.record.version) for c in claimed] == [(newer, 4)]


def test_an_old_worker_never_claims_a_newer_version(env):
    """Code of version 1 names only the bare kind: jobs of versions 2 and 3 stay."""
    store = env.jobs.service.store
    v1 = stored(env, "test.invoice", {"euros": 1})
    stored(env, "test.invoice", {"cents": 1}, version=2)
    env.jobs.enqueue(Invoice(cents=1, currency="EUR"))
    now = env.clock()
    old = store.claim(
        "default",
        kinds=["test.invoice"],
        limit=10,
        now=now,
        lease_until=now + timedelta(minutes=1),
        worker="old",
    )
    assert [c.record.id for c in old] == [v1]


def test_a_gap_in_the_chain_strands_only_the_jobs_before_it(env):
    registry.remove_upcaster("test.invoice", 1)
    try:
        v1 = stored(env, "test.invoice", {"euros": 1})
        v2 = stored(env, "test.invoice", {"cents": 5}, version=2)
        assert env.jobs.step().outcomes() == {v2: "completed"}
        assert env.jobs.get(v1).state == "available"
        out = io.StringIO()
        with pytest.raises(CommandError) as exit_info:
            call_command("jobs", "check-deploy", stdout=out)
        assert exit_info.value.returncode == 1
        assert out.getvalue().splitlines() == [
            "test.invoice version 1: no upcaster path to version 3 "
            "(no upcaster from version 1) (1 job)"
        ]
    finally:
        upcaster("test.invoice", from_version=1)(
            __import__("tests.sampleapp.deploy_jobs", fromlist=["x"]).invoice_from_v1
        )


def test_check_deploy_lists_what_this_code_cannot_run_and_exits_one(env):
    stored(env, "test.gone.kind", {})
    stored(env, "test.invoice", {"cents": 1}, version=9)
    stored(env, "test.payments.charge", {"amount": 1})  # an alias: runnable
    stored(env, "test.invoice", {"euros": 1})  # upcast: runnable
    out = io.StringIO()
    with pytest.raises(CommandError) as exit_info:
        call_command("jobs", "check-deploy", stdout=out)
    assert exit_info.value.returncode == 1
    lines = out.getvalue().splitlines()
    assert lines == [
        "test.gone.kind version 1: no kind and no alias of this name (1 job)",
        "test.invoice version 9: stored at version 9, newer than this code's version 3 (1 job)",
    ]


def test_check_deploy_exits_zero_when_everything_can_run(env):
    stored(env, "test.payments.charge", {"amount": 1})
    env.jobs.enqueue(Invoice(cents=1, currency="EUR"))
    out = io.StringIO()
    call_command("jobs", "check-deploy", stdout=out)
    assert "can run" in out.getvalue()


def test_worker_records_say_which_kinds_and_versions_they_run(env):
    from anole_jobs import deploys
    from anole_jobs.stores.workers import QueueSlots, WorkerRecord

    now = env.clock()
    record = WorkerRecord(
        id="w1",
        host="h",
        pid=1,
        version="x",
        queues=(QueueSlots(name="default", busy=0, total=1),),
        started_at=now,
        last_seen=now,
        expires_at=now + timedelta(minutes=1),
        runs=tuple(sorted(registry.claim_keys())),
    )
    env.jobs.service.store.record_worker(record)
    (stored,) = env.jobs.workers()
    assert stored.can_run("test.invoice", 3) and stored.can_run("test.invoice", 1)
    assert stored.can_run("test.payments.charge", 1)
    assert not stored.can_run("test.invoice", 4)
    assert deploys.live_worker_runs([stored], "default", "test.invoice", 3)
    assert not deploys.live_worker_runs([stored], "default", "test.invoice", 4)
    assert not deploys.live_worker_runs([stored], "other", "test.invoice", 1)
