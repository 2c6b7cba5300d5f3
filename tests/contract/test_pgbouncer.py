"""The PostgreSQL store through a real PgBouncer in transaction pooling mode.

The store's alias ("pgb") reaches the test database through PgBouncer; with
``TRANSACTION_POOLER`` set, no session state is relied upon there. Two configurations: with
``DIRECT_DATABASE`` (LISTEN and the leader's advisory lock on a direct connection, the "pg"
alias) and without (polling, and a leader row written through the pooler). Each runs the
conformance suite's claim, finish, enqueue, leadership and workflow cases; then an enqueue
inside a transaction of the pooled alias, and a worker runtime that works jobs through it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections, transaction

from anole_jobs.conf import parse
from anole_jobs.stores.database import open_database_store
from anole_jobs.testing.contract import StoreContract
from tests.support.pgbouncer import PgBouncer
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.needs("postgres"),
    pytest.mark.needs("pgbouncer"),
    pytest.mark.django_db(databases=["default", "pg", "pgb"], transaction=True),
]

ALIAS = "pgb"
CONFIGS = {
    "direct": {"TRANSACTION_POOLER": True, "DIRECT_DATABASE": "pg"},
    "polling": {"TRANSACTION_POOLER": True},
}


@pytest.fixture(scope="session")
def pgbouncer(django_db_setup: Any) -> Iterator[PgBouncer]:
    """PgBouncer in front of the test server for the session (stopped before the test
    database is dropped: it holds server connections to it)."""
    db = connections["pg"].settings_dict
    bouncer = PgBouncer(
        host=db["HOST"],
        port=int(db["PORT"]),
        user=db["USER"],
        listen_port=int(connections[ALIAS].settings_dict["PORT"]),
    )
    bouncer.start()
    try:
        yield bouncer
    finally:
        bouncer.stop()


@pytest.fixture
def pooled_alias(pgbouncer: PgBouncer) -> Iterator[str]:
    """The "pgb" alias (tests/settings.py): the test database of "pg", through PgBouncer."""
    yield ALIAS
    connections[ALIAS].close()


# -- the conformance suite's cases, through the pooler ---------------------------------------------
KEPT = {
    "test_capabilities_are_flags_the_store_sets",
    "test_insert_returns_growing_ids_and_get_reads_the_job_back",
    "test_a_unique_key_is_held_by_one_live_job",
    "test_concurrent_inserts_of_one_key_insert_exactly_one",
    "test_claim_takes_by_priority_then_due_time_then_id",
    "test_concurrent_claims_never_take_one_job_twice",
    "test_every_write_after_a_claim_is_fenced_by_its_run",
    "test_a_failed_run_keeps_its_error_and_a_give_back_its_attempt",
    "test_rescue_puts_lapsed_runs_back_or_kills_the_last_attempt",
    "test_cancel_retry_and_delete",
    "test_counts_follow_the_jobs",
    "test_leadership_is_exclusive",
    "test_a_finished_step_settles_its_dependents_without_being_told",
    "test_workflows_keep_their_rules_under_random_runs",
    "test_a_limited_claim_keeps_the_global_concurrency",
}


#: The cases also run without a direct connection: where the two configurations differ.
POLLING_TOO = {
    "test_capabilities_are_flags_the_store_sets",
    "test_leadership_is_exclusive",
    "test_every_write_after_a_claim_is_fenced_by_its_run",
}


def pytest_generate_tests(metafunc: Any) -> None:
    if "bouncer_config" in metafunc.fixturenames:
        both = metafunc.function.__name__ in POLLING_TOO
        metafunc.parametrize("bouncer_config", sorted(CONFIGS) if both else ["direct"])


class TestThroughPgBouncer(StoreContract):
    machine_examples = {"jobs": 10, "workflows": 5, "limits": 10}

    @pytest.fixture
    def store(self, bouncer_config: str, pooled_alias: str) -> Iterator[Any]:
        settings = parse(
            {"STORE": {"database": pooled_alias}, "RUN": "manual"} | CONFIGS[bouncer_config]
        )
        store = open_database_store(pooled_alias, settings)
        try:
            yield store
        finally:
            store.close()


# The suite's other cases (searches, pruning, cron, the state machines of plain jobs and
# limits) say nothing about the pooler: they are left out here to keep the run short.
for _name in dir(StoreContract):
    if _name.startswith("test_") and _name not in KEPT:
        setattr(TestThroughPgBouncer, _name, None)


# -- sessions: nothing session-bound goes through the pooler ---------------------------------------
def advisory_locks() -> int:
    with connections["pg"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        return int(cursor.fetchone()[0])


def test_without_a_direct_connection_the_leader_holds_a_row_and_workers_poll(
    pooled_alias: str, clock: Any
) -> None:
    settings = parse({"STORE": {"database": pooled_alias}, "RUN": "manual", **CONFIGS["polling"]})
    store = open_database_store(pooled_alias, settings)
    try:
        assert store.leadership_lapses and not store.supports_cross_process_wakeups
        from datetime import timedelta

        assert store.lead(instance="a", now=clock(), ttl=timedelta(seconds=30))
        assert advisory_locks() == 0
        assert not store.lead(instance="b", now=clock(), ttl=timedelta(seconds=30))
        store.subscribe(["default"])
        assert store._listener is None  # no LISTEN through the pooler
    finally:
        store.close()


def test_with_a_direct_connection_listen_and_the_lock_go_there(
    pooled_alias: str, clock: Any
) -> None:
    from datetime import timedelta

    settings = parse({"STORE": {"database": pooled_alias}, "RUN": "manual", **CONFIGS["direct"]})
    listening = open_database_store(pooled_alias, settings)
    sending = open_database_store(pooled_alias, settings)
    try:
        assert not listening.leadership_lapses and listening.supports_cross_process_wakeups
        assert listening.lead(instance="a", now=clock(), ttl=timedelta(seconds=30))
        assert advisory_locks() == 1
        subscription = listening.subscribe(["mail"])
        assert listening._listener.wait_connected(10)
        subscription.wait(0)
        with connections["pg"].cursor() as cursor:
            cursor.execute(
                "SELECT application_name FROM pg_stat_activity WHERE pid = %s",
                [listening._listener._session.info.backend_pid],
            )
            assert cursor.fetchone()[0].startswith("anole_jobs:listener:")
        sending.send_notify(["mail"])  # NOTIFY through the pooler: delivered at its commit
        assert subscription.wait(10) == {"mail"}
    finally:
        listening.close()
        sending.close()


# -- the facade and the runtime through the pooler -------------------------------------------------
@pytest.fixture
def pooled_jobs(settings: Any, pooled_alias: str, recorder: Any) -> Iterator[Any]:
    from anole_jobs import jobs

    settings.ANOLE_JOBS = {
        "STORE": {"database": pooled_alias},
        "RUN": "manual",
        "LEASE": 5,
        **CONFIGS["direct"],
    }
    yield jobs
    jobs.reset()


def test_an_enqueue_joins_a_transaction_of_the_pooled_alias(pooled_jobs: Any) -> None:
    from tests.sampleapp.jobs import Work

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic(using=ALIAS):
        dropped = pooled_jobs.enqueue(Work()).id
        assert pooled_jobs.get(dropped) is not None  # seen inside its transaction
        raise Rollback
    assert pooled_jobs.get(dropped) is None
    with transaction.atomic(using=ALIAS):
        kept = pooled_jobs.enqueue(Work()).id
    assert pooled_jobs.get(kept).state == "available"


def test_a_worker_runtime_works_jobs_through_the_pooler(settings: Any, pooled_jobs: Any) -> None:
    from tests.sampleapp.jobs import Work

    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "RUN": "auto"}
    ids = [r.id for r in pooled_jobs.enqueue_many([Work() for _ in range(50)])]
    pooled_jobs.start()
    try:

        def done() -> bool:
            return all(pooled_jobs.get(i).state == "completed" for i in ids)

        wait_until(done, "50 jobs completed through PgBouncer", 30)
        # A job enqueued now wakes the worker through LISTEN on the direct connection.
        late = pooled_jobs.enqueue(Work()).id
        wait_until(lambda: pooled_jobs.get(late).state == "completed", "a late job", 10)
    finally:
        stopped = threading.Thread(target=pooled_jobs.stop)
        stopped.start()
        stopped.join(30)
