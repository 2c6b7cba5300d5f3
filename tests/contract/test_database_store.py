"""The database store beyond the shared contract suite:
schema (migration drift, DDL = migration), transactions, statement counts, concurrency on
SQLite and PostgreSQL, NOTIFY, and a differential run against the memory store.

Stores are built directly on the `default` (SQLite file) and `pg` aliases of tests/settings.py.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connections, transaction
from django.test.utils import CaptureQueriesContext

from anole_jobs.conf import parse
from anole_jobs.core import ErrorEntry, ListFilter
from anole_jobs.errors import ConfigurationError
from anole_jobs.stores.base import Finish, NewJob, Store
from anole_jobs.stores.database import open_database_store
from anole_jobs.stores.database.base import SQLStore
from anole_jobs.stores.database.frozen import schema_statements as ddl_statements
from anole_jobs.stores.database.frozen import sql
from anole_jobs.stores.memory import MemoryStore
from anole_jobs.testing.contract import new_job, race

NOW = datetime(2030, 1, 1, tzinfo=UTC)
LEASE = timedelta(seconds=30)
ROOT = Path(__file__).resolve().parents[2]

SQLITE = pytest.param(
    "default", id="sqlite", marks=pytest.mark.django_db(databases=["default"], transaction=True)
)
POSTGRES = pytest.param(
    "pg",
    id="postgres",
    marks=[
        pytest.mark.needs("postgres"),
        pytest.mark.django_db(databases=["default", "pg"], transaction=True),
    ],
)


def build(alias: str, **extra: Any) -> SQLStore:
    return open_database_store(
        alias, parse({"STORE": {"database": alias}, "RUN": "manual", **extra})
    )


@pytest.fixture(params=[SQLITE, POSTGRES])
def store(request: Any) -> Iterator[SQLStore]:
    built = build(request.param)
    yield built
    built.close()  # PostgreSQL's leader session must not outlive the test database


def job(n: int = 0, **options: Any) -> NewJob:
    """A ``test.db`` job with ``{"n": n}`` (the suite's builder, at NOW)."""
    return new_job(at=NOW, **{"kind": "test.db", "args": {"n": n}, **options})


def claim(store: Store, limit: int = 10, now: datetime = NOW, **options: Any) -> list[Any]:
    return store.claim(
        options.pop("queue", "default"),
        kinds=options.pop("kinds", None),
        limit=limit,
        now=now,
        lease_until=now + LEASE,
        worker="w",
    )


def statements(queries: CaptureQueriesContext) -> list[str]:
    """The captured statements, without the transaction control Django 5.2 logs too."""
    return [
        query["sql"]
        for query in queries
        if query["sql"].split()[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK")
    ]


# -- schema -------------------------------------------------------------------------------------


def test_the_migration_matches_the_models(django_db_blocker: Any) -> None:
    with django_db_blocker.unblock():
        try:
            call_command("makemigrations", "anole_jobs", "--check", "--dry-run", verbosity=0)
        except SystemExit as exc:  # --check exits 1 when a migration is missing
            pytest.fail(f"makemigrations --check found changes (exit {exc.code})")


def _run_django(tmp_path: Path, prefix: str, migrate: bool, *command: str) -> Path:
    """Run manage.py `command` in a fresh process whose settings use `prefix`/`migrate` and a
    fresh SQLite file, which it returns: the models and migration read both at import."""
    name = f"alt_settings_{uuid.uuid4().hex[:8]}"
    database = tmp_path / f"{name}.sqlite3"
    (tmp_path / f"{name}.py").write_text(
        "SECRET_KEY = 'x'\nUSE_TZ = True\nINSTALLED_APPS = ['anole_jobs']\n"
        f"DATABASES = {{'default': {{'ENGINE': 'django.db.backends.sqlite3', "
        f"'NAME': {str(database)!r}}}}}\n"
        f"ANOLE_JOBS = {{'STORE': 'memory', 'TABLE_PREFIX': {prefix!r}, 'MIGRATE': {migrate}}}\n"
    )
    run_django_with(tmp_path, name, *command)
    return database


def run_django_with(tmp_path: Path, settings_name: str, *command: str) -> None:
    """Run manage.py `command` in a fresh process with the settings module `settings_name`
    (a file in `tmp_path`, as `_run_django` writes); it must succeed."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "DJANGO_SETTINGS_MODULE": settings_name,
    }
    result = subprocess.run(
        [sys.executable, "-m", "django", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def sqlite_schema(path: Path | str, prefix: str = "anole_jobs_") -> set[tuple[str, ...]]:
    """Every table and index of `prefix` in a SQLite file, with the SQL SQLite keeps for it
    minus whitespace: formatting aside, both were built by the same statements."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master"
            " WHERE tbl_name LIKE ? ESCAPE '!'",
            [prefix.replace("_", "!_") + "%"],
        ).fetchall()
    return {(kind, name, table, re.sub(r"\s+", "", text)) for kind, name, table, text in rows}


def ddl_database(path: Path, prefix: str) -> Path:
    with sqlite3.connect(path) as db:
        db.executescript(sql("sqlite", prefix))
    return path


def test_a_custom_prefix_keeps_the_migration_clean_and_matches_the_ddl(tmp_path: Path) -> None:
    _run_django(tmp_path, "custom_", True, "makemigrations", "anole_jobs", "--check", "--dry-run")
    migrated = _run_django(tmp_path, "custom_", True, "migrate", "anole_jobs", "-v0")
    schema = sqlite_schema(migrated, "custom_")
    assert {name for kind, name, _, _ in schema if kind == "table"} == {
        "custom_job",
        "custom_leader",
        "custom_cron",
        "custom_queue",
        "custom_count",
        "custom_workflow",
        "custom_dependency",
        "custom_limit",
        "custom_stat",
        "custom_stat_hour",
        "custom_worker",
        "custom_audit",
    }
    assert {name for kind, name, _, _ in schema if kind == "trigger"} == {
        "custom_count_insert",
        "custom_count_update",
        "custom_count_delete",
        "custom_stat_runs",
    }
    assert schema == sqlite_schema(ddl_database(tmp_path / "ddl.sqlite3", "custom_"), "custom_")


def test_migrate_false_makes_the_migration_create_nothing(tmp_path: Path) -> None:
    _run_django(
        tmp_path, "anole_jobs_", False, "makemigrations", "anole_jobs", "--check", "--dry-run"
    )
    migrated = _run_django(tmp_path, "anole_jobs_", False, "migrate", "anole_jobs", "-v0")
    assert sqlite_schema(migrated) == set()
    with sqlite3.connect(migrated) as db:  # ...yet the migration is recorded as applied
        applied = db.execute(
            "SELECT name FROM django_migrations WHERE app = 'anole_jobs' ORDER BY name"
        )
        assert [name for (name,) in applied] == [
            "0001_initial",
            "0002_queue",
            "0003_counts",
            "0004_result",
            "0005_workflows",
            "0006_limits",
            "0007_stats",
            "0008_workers",
            "0009_stat_rows",
            "0010_limited_claim",
            "0011_enqueue_indexes",
            "0012_unique_lock",
            "0013_durable",
            "0014_timeline",
            "0015_flow",
            "0016_deploys",
            "0017_operator",
            "0018_history",
        ]


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_the_sqlite_ddl_builds_what_the_migration_builds(tmp_path: Path) -> None:
    migrated = connections["default"].settings_dict["NAME"]  # the test DB, migrated
    expected = sqlite_schema(migrated)
    assert len([row for row in expected if row[0] == "index"]) >= 9
    assert sqlite_schema(ddl_database(tmp_path / "ddl.sqlite3", "anole_jobs_")) == expected


def pg_schema(cursor: Any, schema: str) -> dict[str, set[tuple[Any, ...]]]:
    like = "anole\\_jobs\\_%"
    cursor.execute(
        "SELECT table_name, ordinal_position, column_name, data_type, character_maximum_length,"
        " is_nullable, column_default, is_identity, identity_generation"
        " FROM information_schema.columns WHERE table_schema = %s AND table_name LIKE %s",
        [schema, like],
    )
    columns = set(cursor.fetchall())
    cursor.execute(
        "SELECT tablename, indexname, replace(indexdef, %s, '') FROM pg_indexes"
        " WHERE schemaname = %s AND tablename LIKE %s",
        [f"{schema}.", schema, like],
    )
    indexes = set(cursor.fetchall())
    cursor.execute(
        "SELECT c.relname, con.conname, con.contype, pg_get_constraintdef(con.oid)"
        " FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname LIKE %s",
        [schema, like],
    )
    constraints = set(cursor.fetchall())
    cursor.execute(
        "SELECT c.relname, t.tgname, replace(pg_get_triggerdef(t.oid), %s, '')"
        " FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname LIKE %s AND NOT t.tgisinternal",
        [f"{schema}.", schema, like],
    )
    triggers = set(cursor.fetchall())
    cursor.execute(
        "SELECT p.proname, replace(pg_get_functiondef(p.oid), %s, '') FROM pg_proc p"
        " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %s AND p.proname LIKE %s",
        [f"{schema}.", schema, like],
    )
    functions = set(cursor.fetchall())
    return {
        "columns": columns,
        "indexes": indexes,
        "constraints": constraints,
        "triggers": triggers,
        "functions": functions,
    }


@pytest.mark.needs("postgres")
@pytest.mark.django_db(databases=["default", "pg"], transaction=True)
def test_the_postgresql_ddl_builds_what_the_migration_builds() -> None:
    schema = f"anole_ddl_{uuid.uuid4().hex[:8]}"
    with transaction.atomic(using="pg"), connections["pg"].cursor() as cursor:
        expected = pg_schema(cursor, "public")  # the test database, migrated
        cursor.execute(f'CREATE SCHEMA "{schema}"')
        cursor.execute(f'SET LOCAL search_path TO "{schema}"')
        for statement in ddl_statements("postgresql"):
            cursor.execute(statement)
        built = pg_schema(cursor, schema)
        transaction.set_rollback(True, using="pg")  # drops the schema again
    assert len(expected["columns"]) == 132 and len(expected["indexes"]) == 34
    assert len(expected["triggers"]) == 5 and len(expected["functions"]) == 5
    assert built == expected


def test_sql_refuses_other_vendors() -> None:
    with pytest.raises(ValueError, match="postgresql"):
        sql("mysql")
    assert 'CREATE TABLE "x_job"' in sql("sqlite", "x_")


# -- transactions -------------------------------------------------------------------------------


def test_insert_in_a_rolled_back_atomic_block_leaves_no_job(store: SQLStore) -> None:
    with transaction.atomic(using=store.alias):
        (inserted,) = store.insert([job(1)])
        assert store.get(inserted.id) is not None  # visible inside the transaction
        transaction.set_rollback(True, using=store.alias)
    assert store.get(inserted.id) is None
    assert store.counts() == {}


def test_a_server_error_midway_through_a_batch_inserts_nothing(store: SQLStore) -> None:
    # A trigger refuses one row in the middle of a batch (as a constraint or a full disk
    # would): the statement fails as a whole, in autocommit and inside an atomic block.
    store.insert([job(0)])
    refuse = "test_refuse_boom"
    with connections[store.alias].cursor() as cursor:
        if store.vendor == "sqlite":
            cursor.execute(
                f'CREATE TRIGGER "{refuse}" BEFORE INSERT ON {store.job_table}'
                " WHEN NEW.kind = 'boom' BEGIN SELECT RAISE(ABORT, 'boom refused'); END"
            )
        else:
            cursor.execute(
                f'CREATE FUNCTION "{refuse}"() RETURNS trigger LANGUAGE plpgsql AS $$'
                " BEGIN IF NEW.kind = 'boom' THEN RAISE EXCEPTION 'boom refused'; END IF;"
                " RETURN NEW; END $$"
            )
            cursor.execute(
                f'CREATE TRIGGER "{refuse}" BEFORE INSERT ON {store.job_table}'
                f' FOR EACH ROW EXECUTE FUNCTION "{refuse}"()'
            )
    try:
        batch = [job(i, unique_key=f"u{i}" if i % 2 else None) for i in range(1, 600)]
        batch[300] = job(300, kind="boom")
        with pytest.raises(DatabaseError, match="boom refused"):
            store.insert(batch)
        assert store.counts() == {"default": {"available": 1}}
        with (
            pytest.raises(DatabaseError, match="boom refused"),
            transaction.atomic(using=store.alias),
        ):
            store.insert(batch[:300])
            store.insert(batch[300:])
        assert store.counts() == {"default": {"available": 1}}
        assert len(store.list(ListFilter(limit=1000))) == 1
    finally:
        with connections[store.alias].cursor() as cursor:
            if store.vendor == "sqlite":
                cursor.execute(f'DROP TRIGGER "{refuse}"')
            else:
                cursor.execute(f'DROP TRIGGER "{refuse}" ON {store.job_table}')
                cursor.execute(f'DROP FUNCTION "{refuse}"()')
    # The keys the failed batch would have taken are still free.
    assert [r.inserted for r in store.insert(batch[1:3])] == [True, True]


def test_finish_in_a_rolled_back_atomic_block_leaves_the_job_running(store: SQLStore) -> None:
    store.insert([job(1)])
    (claimed,) = claim(store)
    with transaction.atomic(using=store.alias):
        assert store.finish([Finish(run=claimed.run, state="completed", at=NOW)]) == [True]
        transaction.set_rollback(True, using=store.alias)
    assert store.get(claimed.record.id).state == "running"  # type: ignore[union-attr]
    # The run still holds the job: its own write goes through afterwards.
    assert store.finish([Finish(run=claimed.run, state="completed", at=NOW)]) == [True]


def test_a_claim_inside_an_atomic_block_joins_it(store: SQLStore) -> None:
    (inserted,) = store.insert([job(1)])
    with transaction.atomic(using=store.alias):
        assert [c.record.id for c in claim(store)] == [inserted.id]
        transaction.set_rollback(True, using=store.alias)
    assert store.get(inserted.id).state == "available"  # type: ignore[union-attr]


def test_cron_advance_records_nothing_when_its_insert_fails(
    store: SQLStore, monkeypatch: Any
) -> None:
    assert store.cron_advance(name="nightly", tick=NOW, job=None) is None
    assert store.cron_states(["nightly"])["nightly"].last_tick_at == NOW

    def broken(*args: Any) -> Any:
        raise RuntimeError("insert failed")

    monkeypatch.setattr(store, "_insert", broken)
    with pytest.raises(RuntimeError):
        store.cron_advance(name="nightly", tick=NOW + timedelta(days=1), job=job(1))
    monkeypatch.undo()
    assert store.cron_states(["nightly"])["nightly"].last_tick_at == NOW
    inserted = store.cron_advance(name="nightly", tick=NOW + timedelta(days=1), job=job(1))
    assert inserted is not None and inserted.inserted
    assert store.cron_advance(name="nightly", tick=NOW + timedelta(days=1), job=job(2)) is None
    assert store.cron_states(["nightly"])["nightly"].last_job_id == inserted.id


# -- round trips --------------------------------------------------------------------------------


def test_inserting_500_jobs_is_one_statement(store: SQLStore) -> None:
    jobs = [job(i, unique_key=f"k{i}" if i % 2 else None) for i in range(500)]
    with CaptureQueriesContext(connections[store.alias]) as queries:
        results = store.insert(jobs)
    assert len(queries) == 1
    assert all(r.inserted for r in results) and len({r.id for r in results}) == 500
    assert [store.get(r.id).args for r in results[:3]] == [{"n": 0}, {"n": 1}, {"n": 2}]  # type: ignore[union-attr]
    # Duplicates cost exactly one more statement: the read of their holders.
    with CaptureQueriesContext(connections[store.alias]) as queries:
        again = store.insert([job(1, unique_key="k1"), job(9, unique_key="new"), job(0)])
    assert len(queries) == 2
    assert [(r.id == results[1].id, r.inserted) for r in again] == [
        (True, False),
        (False, True),
        (False, True),
    ]


def test_finish_and_heartbeat_of_a_batch_are_one_statement_each(store: SQLStore) -> None:
    store.insert([job(i) for i in range(50)])
    claimed = claim(store, limit=50)
    with CaptureQueriesContext(connections[store.alias]) as queries:
        held = store.heartbeat({c.run for c in claimed}, lease_until=NOW + 2 * LEASE)
        written = store.finish([Finish(run=c.run, state="completed", at=NOW) for c in claimed])
    assert len(queries) == 2
    assert held == {c.run for c in claimed} and written == [True] * 50


def test_two_writes_to_one_job_in_a_batch_apply_in_order(store: SQLStore) -> None:
    store.insert([job(1)])
    (claimed,) = claim(store)
    retry = Finish(run=claimed.run, state="retrying", at=NOW, scheduled_at=NOW + LEASE)
    done = Finish(run=claimed.run, state="completed", at=NOW)
    assert store.finish([retry, done]) == [True, False]
    assert store.get(claimed.record.id).state == "retrying"  # type: ignore[union-attr]


# -- concurrency --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "threads"),
    [
        pytest.param("default", 2, id="sqlite", marks=SQLITE.marks),
        pytest.param("pg", 6, id="postgres", marks=POSTGRES.marks),
    ],
)
def test_concurrent_claims_never_take_a_job_twice(alias: str, threads: int) -> None:
    store = build(alias)  # SQLite: Django's default settings (timeout 5 s, deferred atomic)
    ids = {r.id for r in store.insert([job(i) for i in range(240)])}
    done: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        while claimed := claim(store, limit=3):
            written = store.finish([Finish(run=c.run, state="completed", at=NOW) for c in claimed])
            assert written == [True] * len(claimed)
            with lock:
                done.extend(c.record.id for c in claimed)

    race(threads, lambda i: worker())
    assert sorted(done) == sorted(ids)
    assert store.counts() == {"default": {"completed": 240}}


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_sqlite_writers_of_one_process_take_turns_without_the_busy_handler() -> None:
    # With SQLite's busy timeout at 0, any write that met another thread's write transaction
    # would fail at once ("database is locked"): the store's own writers must queue in the
    # process instead (claims, finishes, heartbeats and inserts from four threads).
    store = build("default")
    ids = {r.id for r in store.insert([job(i) for i in range(200)])}
    done: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        with connections["default"].cursor() as cursor:
            cursor.execute("PRAGMA busy_timeout = 0")
        store.insert([job(1000)])
        while claimed := claim(store, limit=2):
            store.heartbeat({c.run for c in claimed}, lease_until=NOW + LEASE)
            written = store.finish([Finish(run=c.run, state="completed", at=NOW) for c in claimed])
            assert written == [True] * len(claimed)
            with lock:
                done.extend(c.record.id for c in claimed)

    race(4, lambda i: worker())
    assert ids <= set(done) and len(done) == 204


def test_concurrent_unique_inserts_insert_exactly_one(store: SQLStore) -> None:
    results: list[Any] = []

    def enqueue() -> None:
        for n in range(20):
            results.append((n, *store.insert([job(n, unique_key=f"same-{n}")])))

    race(4, lambda i: enqueue())
    for n in range(20):
        mine = [r for k, r in results if k == n]
        assert sum(r.inserted for r in mine) == 1 and len({r.id for r in mine}) == 1
    assert store.counts() == {"default": {"available": 20}}


def test_an_insert_retries_a_key_whose_holder_finished_meanwhile(
    store: SQLStore, monkeypatch: Any
) -> None:
    (holder,) = store.insert([job(1, unique_key="k")])
    (claimed,) = claim(store)
    lookup = store._holders

    def holder_finishes_first(cursor: Any, keys: Any) -> dict[str, int]:
        monkeypatch.setattr(store, "_holders", lookup)
        assert store.finish([Finish(run=claimed.run, state="completed", at=NOW)]) == [True]
        return lookup(cursor, keys)

    monkeypatch.setattr(store, "_holders", holder_finishes_first)
    (again,) = store.insert([job(2, unique_key="k")])
    assert again.inserted and again.id != holder.id


def test_retry_leaves_a_job_whose_key_another_job_holds(store: SQLStore) -> None:
    (first,) = store.insert([job(1, unique_key="k")])
    (claimed,) = claim(store)
    store.finish([Finish(run=claimed.run, state="completed", at=NOW)])
    (second,) = store.insert([job(2, unique_key="k")])
    assert second.inserted
    assert store.retry(first.id, now=NOW).state == "completed"  # type: ignore[union-attr]
    store.cancel(second.id, now=NOW)
    assert store.retry(first.id, now=NOW).state == "available"  # type: ignore[union-attr]
    assert store.insert([job(3, unique_key="k")])[0].id == first.id


# -- time encoding ------------------------------------------------------------------------------


def test_times_round_trip_and_compare_in_time_order(store: SQLStore) -> None:
    # Whole seconds are stored without a fraction on SQLite: text order must still be time
    # order, and a time given in another zone is the same instant.
    plus_two = timezone(timedelta(hours=2))
    whole = store.insert([job(1, state="scheduled", scheduled_at=NOW + timedelta(seconds=1))])
    half = store.insert(
        [
            job(
                2,
                state="scheduled",
                scheduled_at=(NOW + timedelta(seconds=1.5)).astimezone(plus_two),
            )
        ]
    )
    assert store.stage(now=NOW + timedelta(seconds=1) - timedelta(microseconds=1)) == 0
    assert store.stage(now=NOW + timedelta(seconds=1)) == 1
    assert store.stage(now=NOW + timedelta(seconds=1.499999)) == 0
    assert store.stage(now=NOW + timedelta(seconds=1.5)) == 1
    record = store.get(half[0].id)
    assert record.scheduled_at == NOW + timedelta(seconds=1.5)  # type: ignore[union-attr]
    assert record.scheduled_at.utcoffset() == timedelta(0)  # type: ignore[union-attr]
    assert store.get(whole[0].id).created_at == NOW  # type: ignore[union-attr]


# -- query plans: the hot paths never scan finished jobs ----------------------------------------


def plans(store: SQLStore, call: Callable[[], object]) -> list[str]:
    """EXPLAIN each statement `call` runs (the statements are captured, then explained)."""
    connection = connections[store.alias]
    with CaptureQueriesContext(connection) as queries:
        call()
    found = []
    with transaction.atomic(using=store.alias), connection.cursor() as cursor:
        if store.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")  # tiny tables: ask what it can use
        for query in queries:
            if query["sql"].split()[0] in ("BEGIN", "COMMIT"):
                continue
            if store.vendor == "postgresql" and re.search(r'FROM "anole_jobs_\w+"\(', query["sql"]):
                found.append(function_plans(connection, cursor, query["sql"]))
                continue
            prefix = "EXPLAIN QUERY PLAN " if store.vendor == "sqlite" else "EXPLAIN "
            cursor.execute(prefix + query["sql"])
            found.append("\n".join(str(row[-1]) for row in cursor.fetchall()))
        transaction.set_rollback(True, using=store.alias)
    return found


def function_plans(connection: Any, cursor: Any, sql: str) -> str:
    """The plans of the statements a store function runs (the claim, the finish): the call run
    again with auto_explain logging each nested statement's generic plan, the one a session
    uses once PL/pgSQL caches it (the transaction is rolled back)."""
    notices: list[str] = []
    raw = connection.connection
    handler = lambda diagnostic: notices.append(diagnostic.message_primary or "")  # noqa: E731
    raw.add_notice_handler(handler)
    try:
        for setting in (
            "DISCARD PLANS",  # plan again, with this transaction's settings
            "LOAD 'auto_explain'",
            "SET LOCAL auto_explain.log_min_duration = 0",
            "SET LOCAL auto_explain.log_nested_statements = on",
            "SET LOCAL client_min_messages = log",
            "SET LOCAL plan_cache_mode = force_generic_plan",
        ):
            cursor.execute(setting)
        cursor.execute(sql)
        cursor.execute("SET LOCAL client_min_messages = notice")
    finally:
        raw.remove_notice_handler(handler)
    return "\n".join(notices)


def full_scans(plan: str) -> list[str]:
    """Plan lines that read the whole job table (or a whole index that is not partial)."""
    partial = r"USING (?:COVERING )?INDEX anole_jobs_job_(?:claim|stage|rescue|prune)\b"
    sqlite = re.findall(rf"^SCAN anole_jobs_job\b(?! {partial}).*", plan, re.M)
    return sqlite + re.findall(r"Seq Scan on anole_jobs_job\b.*", plan)


def test_the_hot_paths_use_their_partial_indexes(store: SQLStore) -> None:
    store.insert([job(i) for i in range(5)] + [job(9, state="scheduled", scheduled_at=NOW + LEASE)])
    (claim_plan,) = plans(store, lambda: claim(store, kinds={"test.db"}))
    (stage_plan,) = plans(store, lambda: store.stage(now=NOW))
    (rescue_plan,) = plans(store, lambda: store.rescue(now=NOW))[:1]
    prune_plans = plans(store, lambda: store.prune(now=NOW, horizons={"completed": LEASE}))
    assert "anole_jobs_job_claim" in claim_plan, claim_plan
    assert "anole_jobs_job_stage" in stage_plan, stage_plan
    assert "anole_jobs_job_prune" in prune_plans[0], prune_plans[0]
    for plan in (claim_plan, stage_plan, rescue_plan, *prune_plans):
        assert full_scans(plan) == [], plan


# -- wake-ups -----------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[Any]:
    import psycopg

    settings = connections["pg"].settings_dict
    with psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"],
        user=settings["USER"],
        dbname=settings["NAME"],
        autocommit=True,
    ) as connection:
        connection.execute('LISTEN "anole_jobs_wake"')
        yield connection


def received(listener: Any, count: int) -> list[str]:
    return [n.payload for n in listener.notifies(timeout=10, stop_after=count)][:count]


@pytest.mark.needs("postgres")
@pytest.mark.django_db(databases=["default", "pg"], transaction=True)
def test_an_insert_notifies_at_commit_in_its_own_statement(listener: Any) -> None:
    store = build("pg")
    assert store.notify and store.channel == "anole_jobs_wake"
    connection = connections["pg"]
    with CaptureQueriesContext(connection) as queries, transaction.atomic(using="pg"):
        store.insert([job(1, queue="a"), job(2, queue="s", state="scheduled")])
    assert len(statements(queries)) == 1  # the insert, with its NOTIFY; nobody calls wake
    store.wake({"b"})
    with transaction.atomic(using="pg"):
        store.insert([job(3, queue="rolled-back")])
        transaction.set_rollback(True, using="pg")
    store.wake([])  # every queue
    # Notifications arrive in commit order: the rolled-back insert sent nothing.
    assert received(listener, 3) == ["a", "b", ""]


@pytest.mark.needs("postgres")
@pytest.mark.django_db(databases=["default", "pg"], transaction=True)
def test_notify_off_sends_nothing() -> None:
    store = build("pg", NOTIFY=False)
    assert not store.notify
    with CaptureQueriesContext(connections["pg"]) as queries:
        store.insert([job(1)])
        store.wake({"default"})
    assert len(queries) == 1 and "pg_notify" not in queries[0]["sql"]


def test_the_in_process_hub_is_woken(store: SQLStore) -> None:
    subscription = store.subscribe(["default"])
    store.wake({"default"})
    assert subscription.wait(timeout=5) == {"default"}


# -- configuration ------------------------------------------------------------------------------


def test_other_vendors_are_refused(monkeypatch: Any) -> None:
    class Fake:
        vendor = "mysql"

    monkeypatch.setattr("anole_jobs.stores.database.connections", {"other": Fake()})
    with pytest.raises(ConfigurationError, match="only SQLite and PostgreSQL"):
        open_database_store("other", parse({"STORE": "memory"}))
    with pytest.raises(ConfigurationError, match="not in DATABASES"):
        open_database_store("missing", parse({"STORE": "memory"}))


# -- the same observable behaviour as the memory store ------------------------------------------


def scenario(store: Store) -> list[Any]:
    """Drive `store` through every operation; return what it answered, ids as ordinals."""
    ids: list[int] = []
    seen: list[Any] = []

    def ordinal(job_id: int) -> int:
        return ids.index(job_id)

    def record(job_id: int) -> Any:
        found = store.get(job_id)
        return None if found is None else {**vars(found), "id": ordinal(job_id)}

    def insert(*jobs: NewJob) -> None:
        results = store.insert(jobs)
        ids.extend(r.id for r in results if r.inserted)
        seen.append([(ordinal(r.id), r.inserted) for r in results])

    at = NOW + timedelta(microseconds=250)
    insert(job(0), job(1, priority=5, unique_key="u1"), job(2, max_attempts=1, queue="q2"))
    insert(job(3, unique_key="u1"), job(4, state="scheduled", scheduled_at=at, unique_key="u4"))
    insert(job(5, unique_key="any", unique_scope="any"))
    claimed = claim(store, limit=2, now=at)
    seen.append([(ordinal(c.record.id), c.run.attempt, c.lease_until) for c in claimed])
    error = ErrorEntry(at=at, attempt=1, type="ValueError", message="no", traceback="tb")
    finishes = [
        Finish(run=claimed[0].run, state="retrying", at=at, scheduled_at=at + LEASE, error=error),
        Finish(
            run=claimed[1].run, state="available", at=at, scheduled_at=at, give_back_attempt=True
        ),
    ]
    seen.append(store.finish(finishes))
    seen.append(len(store.heartbeat({c.run for c in claimed}, lease_until=at)))
    (lapsing,) = claim(store, queue="q2", now=at)
    rescued = store.rescue(now=at + 2 * LEASE)
    seen.append([(ordinal(r.id), r.kind, r.queue, r.state) for r in rescued])
    seen.append(store.finish([Finish(run=lapsing.run, state="completed", at=at)]))
    seen.append(store.stage(now=at + LEASE))
    claimed = claim(store, limit=10, now=at + LEASE)
    seen.append([(ordinal(c.record.id), c.run.attempt) for c in claimed])
    seen.append(
        store.finish([Finish(run=c.run, state="completed", at=at + LEASE) for c in claimed])
    )
    insert(job(6, unique_key="u1"), job(7, unique_key="any"), job(8, unique_key="u4"))
    store.cancel(ids[-1], now=at)
    store.cancel(ids[0], now=at)  # finished already: left as it is
    store.retry(ids[2], now=at + LEASE)  # dead on its only attempt: gets one more
    seen.append(store.waiting_kinds(["default", "q2", "none"]))
    seen.append(store.counts())
    seen.append([ordinal(r.id) for r in store.list(ListFilter(limit=3, after=ids[-1]))])
    seen.append([ordinal(r.id) for r in store.list(ListFilter(state="completed", queue="default"))])
    seen.append(store.prune(now=at + timedelta(days=2), horizons={"completed": timedelta(days=1)}))
    # Leadership is compared in the contract suite: PostgreSQL's is an advisory lock, not a lease.
    seen.append(store.lead(instance="a", now=at, ttl=LEASE))
    seen.append(store.cron_advance(name="c", tick=at, job=None))
    seen.append([record(job_id) for job_id in ids])
    return seen


def test_the_database_store_answers_like_the_memory_store(store: SQLStore) -> None:
    expected = scenario(MemoryStore())
    assert scenario(store) == expected
    # The rescue's error entry, word for word, and the kept `any` key are part of it:
    assert any("LeaseExpired" in repr(step) for step in expected)


# -- finishes: the store tells plain jobs from workflow steps itself ---------------------------


def test_a_batch_of_plain_runs_is_one_statement_whoever_claimed_them(store: SQLStore) -> None:
    """No transaction and no second statement for plain jobs: neither when this store claimed
    them (it knows they are plain) nor when another instance did (its statement leaves steps
    out)."""
    other = build(store.alias)
    try:
        store.insert([job(i) for i in range(10)])
        mine, theirs = claim(store, limit=5), claim(other, limit=5)
        connection = connections[store.alias]
        for runs in (mine, theirs):
            with CaptureQueriesContext(connection) as queries:
                written = store.finish([Finish(run=c.run, state="completed", at=NOW) for c in runs])
            assert written == [True] * 5
            assert len(queries) == 1, [q["sql"][:60] for q in queries]
        assert store.counts() == {"default": {"completed": 10}}
    finally:
        other.close()


def test_a_step_claimed_by_another_instance_still_settles_its_dependents(
    store: SQLStore,
) -> None:
    from anole_jobs.stores.base import NewStep, NewWorkflow

    other = build(store.alias)
    try:
        workflow = NewWorkflow(id=f"wf-{uuid.uuid4().hex[:8]}", name="w", created_at=NOW)
        first, then = store.insert_workflow(
            workflow,
            [NewStep(job=job(1), name="first"), NewStep(job=job(2), name="then", after=(0,))],
            last=True,
            now=NOW,
        )
        (plain,) = (r.id for r in store.insert([job(3)]))
        claimed = {c.record.id: c for c in claim(other, limit=5)}
        assert set(claimed) == {first, plain}
        results = [
            Finish(run=claimed[plain].run, state="completed", at=NOW),
            Finish(run=claimed[first].run, state="completed", at=NOW, result="1"),
        ]
        assert store.finish(results) == [True, True]
        state = {i: store.get(i).state for i in (first, then, plain)}  # type: ignore[union-attr]
        assert state == {first: "completed", then: "available", plain: "completed"}
        assert store.dependency_results(then) == {"first": 1}
    finally:
        other.close()
