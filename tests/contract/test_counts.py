"""`counts()` stays exact without reading the job table: on every store after a seeded mix of
operations through the facade; on the SQL stores across rolled-back transactions; on
PostgreSQL across concurrent transactions on two connections (which never wait for each
other on a counter row) and concurrent folds of its delta rows; and after migration 0003,
which counts the jobs already in the table.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connections, transaction

from anole_jobs import NewQueue, Unique
from anole_jobs.errors import JobNotFound
from anole_jobs.stores.database.base import FOLD_AFTER
from anole_jobs.testing.contract import race
from anole_jobs.testing.contract.jobs_machine import recount
from tests.contract.test_database_store import LEASE, NOW, _run_django, run_django_with
from tests.sampleapp.jobs import Prioritized, Work

ACTIONS = ("ok", "ok", "fail", "snooze", "discard", "retry_in")


def test_counts_equal_a_recount_after_a_seeded_mix_of_operations(env):
    rng = random.Random(12)
    ids: list[int] = []
    for _ in range(60):
        op = rng.choice(["enqueue", "many", "unique", "step", "admin", "admin", "advance", "prune"])
        if op == "enqueue":
            delay = rng.choice([None, 30])
            ids.append(env.jobs.enqueue(Work(action=rng.choice(ACTIONS)), delay=delay).id)
        elif op == "many":
            batch = [Work(action=rng.choice(ACTIONS)) for _ in range(rng.randint(1, 5))]
            ids += [r.id for r in env.jobs.enqueue_many(batch + [Prioritized(name="p")])]
        elif op == "unique":  # a conflict inserts nothing and must count nothing
            env.jobs.enqueue(Work(tag=rng.choice("ab")), unique=Unique(), delay=30)
        elif op == "step":
            env.jobs.step()
        elif op == "admin" and ids:
            action = rng.choice([env.jobs.retry, env.jobs.cancel, env.jobs.delete])
            with contextlib.suppress(JobNotFound):  # deleted or pruned earlier in the mix
                action(rng.choice(ids))
        elif op == "advance":
            env.clock.advance(timedelta(seconds=rng.choice([20, 3600, 3 * 86400])))
        elif op == "prune":
            env.clock.advance(timedelta(days=31))
            env.jobs.step()  # prunes every finished job, and folds PostgreSQL's deltas
        assert env.jobs.counts() == recount(env.store), op
    assert env.jobs.counts()  # the mix left jobs behind: the assertions compared something


def test_a_rolled_back_transaction_leaves_the_counts_unchanged(env):
    env.require("supports_transactions")
    env.jobs.enqueue_many([Work(), Work(), Prioritized(name="p")])
    env.jobs.step()
    env.jobs.enqueue(Work(), delay=60)
    before = env.jobs.counts()
    with transaction.atomic(using=env.alias):
        env.jobs.enqueue_many([Work(), Prioritized(name="q")])
        env.jobs.enqueue(Work(), delay=60)
        env.jobs.step()  # claims and finishes inside the block too
        assert env.jobs.counts() != before  # the transaction sees its own changes
        transaction.set_rollback(True, using=env.alias)
    assert env.jobs.counts() == before == recount(env.store)


# -- PostgreSQL: concurrent transactions -------------------------------------------------------


def _in_thread(target: Any) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


@pytest.mark.needs("postgres")
@pytest.mark.django_db(databases=["default", "pg"], transaction=True)
def test_postgres_counts_across_two_open_transactions(settings, clock):
    from anole_jobs.api import jobs
    from tests.conftest import base_anole_settings

    settings.ANOLE_JOBS = base_anole_settings("postgres", clock)
    try:
        jobs.enqueue_many([Work() for _ in range(3)])
        enqueued, release = threading.Event(), threading.Event()

        def long_transaction() -> None:
            # A user's transaction that enqueued and stays open: it must block nobody.
            with transaction.atomic(using="pg"):
                jobs.enqueue_many([Work() for _ in range(5)], queue="mail")
                enqueued.set()
                assert release.wait(60)

        thread, errors = _in_thread(long_transaction)
        assert enqueued.wait(60)
        with connections["pg"].cursor() as cursor:
            # A counter row updated in place would make these wait for the open transaction;
            # fail fast instead of hanging if they ever do.
            cursor.execute("SET lock_timeout TO '5s'")
        jobs.enqueue_many([Work() for _ in range(2)], queue="mail")
        assert len(jobs.step().outcomes()) == 5  # claims and finishes the committed jobs
        counts_while_open = jobs.counts()
        for _ in range(FOLD_AFTER + 1):  # enough delta rows that counts() folds them
            jobs.enqueue_many([Work()], queue=NewQueue("bulk"))
        assert jobs.counts()["bulk"] == {"available": FOLD_AFTER + 1}
        release.set()
        thread.join(60)
        assert not thread.is_alive() and not errors, errors
        assert counts_while_open == {"default": {"completed": 3}, "mail": {"completed": 2}}
        assert jobs.counts() == {
            "default": {"completed": 3},
            "mail": {"completed": 2, "available": 5},
            "bulk": {"available": FOLD_AFTER + 1},
        }
        assert jobs.counts() == recount(jobs.service.store)
        with connections["pg"].cursor() as cursor:
            cursor.execute('SELECT COUNT(*) FROM "anole_jobs_count"')
            (rows,) = cursor.fetchone()
        assert rows < 10  # folded: one row per (queue, state), plus the late transaction's
    finally:
        with connections["pg"].cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        jobs.reset()


@pytest.mark.needs("postgres")
@pytest.mark.django_db(databases=["default", "pg"], transaction=True)
def test_postgres_concurrent_folds_stay_exact(settings, clock):
    from anole_jobs.api import jobs
    from tests.conftest import base_anole_settings

    settings.ANOLE_JOBS = base_anole_settings("postgres", clock)
    try:
        for i in range(300):
            jobs.enqueue(Work(), queue=NewQueue(f"q{i % 3}"))
        store = jobs.service.store.inner

        def fold(_: int) -> None:
            for _ in range(5):
                store.fold_counts()
                jobs.enqueue(Work(), queue=NewQueue("q0"))

        race(3, fold)
        store.fold_counts()
        assert jobs.counts() == {
            "q0": {"available": 115},
            "q1": {"available": 100},
            "q2": {"available": 100},
        }
        assert jobs.counts() == recount(store)
    finally:
        jobs.reset()


# -- migration 0003 counts the jobs already there ----------------------------------------------


def test_migration_0003_counts_the_jobs_already_in_the_table(tmp_path: Path) -> None:
    database = _run_django(tmp_path, "anole_jobs_", True, "migrate", "anole_jobs", "0002_queue")
    with sqlite3.connect(database) as db:
        db.executemany(
            "INSERT INTO anole_jobs_job (kind, queue, state, args, meta, errors, priority,"
            " attempt, max_attempts, claim_token, created_at, scheduled_at, unique_scope)"
            " VALUES ('k', ?, ?, '{}', '{}', '[]', 0, 0, 3, 0, '2030-01-01', '2030-01-01', 'live')",
            [("a", "available")] * 3 + [("a", "completed")] * 2 + [("b", "dead")],
        )
    settings_name = next(tmp_path.glob("alt_settings_*.py")).stem
    run_django_with(tmp_path, settings_name, "migrate", "anole_jobs")
    with sqlite3.connect(database) as db:
        db.execute("DELETE FROM anole_jobs_job WHERE state = 'completed'")  # the triggers run
        rows = db.execute("SELECT queue, state, n FROM anole_jobs_count WHERE n <> 0").fetchall()
    assert sorted(rows) == [("a", "available", 3), ("b", "dead", 1)]
    run_django_with(tmp_path, settings_name, "migrate", "anole_jobs", "0002_queue")  # reversible
    with sqlite3.connect(database) as db:
        left = db.execute("SELECT name FROM sqlite_master WHERE name LIKE '%count%'").fetchall()
    assert left == []


@pytest.mark.needs("postgres")
@pytest.mark.django_db(databases=["default", "pg"], transaction=True)
def test_two_table_prefixes_in_one_postgres_schema_keep_their_own_counts() -> None:
    from anole_jobs.stores.database.ddl import tables
    from anole_jobs.stores.database.frozen import schema_statements as statements
    from anole_jobs.stores.database.frozen import statements as frozen_statements
    from tests.contract.test_database_store import build, job

    names = tables("other_")
    with connections["pg"].cursor() as cursor:
        for statement in statements("postgresql", "other_"):
            cursor.execute(statement)
    ours, theirs = build("pg"), build("pg", TABLE_PREFIX="other_")
    try:
        ours.insert([job(1), job(2)])
        # The other prefix's job table is its own, and so is its count table.
        assert (
            theirs.claim(
                "default", kinds=None, limit=1, now=NOW, lease_until=NOW + LEASE, worker="w"
            )
            == []
        )
        theirs.insert([job(3, queue="mail")])
        theirs.fold_counts()
        assert ours.counts() == {"default": {"available": 2}}
        assert theirs.counts() == {"mail": {"available": 1}}
    finally:
        ours.close()
        theirs.close()
        with connections["pg"].cursor() as cursor:
            for statement in frozen_statements("0003_counts", "postgresql", "down", "other_"):
                cursor.execute(statement)
            for table in (names.job, names.leader, names.cron, names.queue):
                cursor.execute(f'DROP TABLE IF EXISTS "{table}"')
