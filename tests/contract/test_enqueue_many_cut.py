"""A large `enqueue_many` whose connection is cut between two batches stores nothing (on a
store that can join a transaction), so a retry of the call does not enqueue twice; on a store
that cannot, the error says how many were stored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, connections

from anole_jobs.api import jobs
from tests.sampleapp.jobs import Work


@pytest.fixture
def pg_store(settings: Any) -> Iterator[None]:
    settings.ANOLE_JOBS = {"STORE": {"database": "pg"}, "RUN": "manual"}
    jobs.reset()
    yield
    jobs.reset()


def cut(alias: str) -> None:
    """Cut the connection of `alias` from the server's side, as a failover or a network cut
    does: another session ends its backend."""
    pid = connections[alias].connection.info.backend_pid
    target = connections.settings[alias]
    with psycopg.connect(
        host=target["HOST"] or "127.0.0.1",
        port=int(target["PORT"] or 5432),
        user=target["USER"],
        dbname=target["NAME"],
        autocommit=True,
    ) as killer:
        killer.execute("SELECT pg_terminate_backend(%s)", [pid])


def stored(kind: str) -> int:
    with connections["pg"].cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM anole_jobs_job WHERE kind = %s", [kind])
        return int(cursor.fetchone()[0])


@pytest.mark.needs("postgres")
@pytest.mark.django_db(databases=["default", "pg"], transaction=True)
def test_a_connection_cut_between_batches_stores_none_of_them(
    pg_store: None, monkeypatch: Any
) -> None:
    store = jobs.service.store
    insert = store.insert
    batches: list[int] = []

    def insert_then_cut(new_jobs: Any) -> Any:
        if batches:
            cut("pg")  # the connection dies before the second batch
        batches.append(len(new_jobs))
        return insert(new_jobs)

    monkeypatch.setattr(store, "insert", insert_then_cut)
    with pytest.raises(DatabaseError):
        jobs.enqueue_many([Work(tag="cut") for _ in range(2500)])
    assert batches == [1000, 1000]
    connections["pg"].close()
    assert stored("test.work") == 0
    # After the outage the same call stores every job, once.
    monkeypatch.setattr(store, "insert", insert)
    enqueued = jobs.enqueue_many([Work(tag="again") for _ in range(2500)])
    assert len({result.id for result in enqueued}) == 2500
    assert stored("test.work") == 2500


def test_a_store_without_transactions_says_how_many_it_stored(settings: Any, monkeypatch) -> None:
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual"}
    jobs.reset()
    try:
        store = jobs.service.store
        insert = store.insert
        batches: list[int] = []

        def insert_then_fail(new_jobs: Any) -> Any:
            if batches:
                raise ConnectionError("connection reset")
            batches.append(len(new_jobs))
            return insert(new_jobs)

        monkeypatch.setattr(store, "insert", insert_then_fail)
        with pytest.raises(ConnectionError) as caught:
            jobs.enqueue_many([Work(tag="cut") for _ in range(2500)])
        assert caught.value.__notes__ == [
            "enqueue_many stored the first 1000 of 2500 jobs before this error"
            " (in batches of 1,000; the rest were not stored)"
        ]
    finally:
        jobs.reset()
