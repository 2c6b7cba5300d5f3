"""An enqueue inside `transaction.atomic()` on a store that cannot join it (memory, Redis) is
stored at once, whatever the transaction does: warn once per kind per process, naming
on_commit=True. SQL stores join the transaction and say nothing."""

from __future__ import annotations

import pytest
from django.db import transaction

from anole_jobs import service
from tests.sampleapp.jobs import Prioritized, Work


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(service, "_warned_outside_transaction", set())


def warnings_of(caplog):
    return [
        record
        for record in caplog.records
        if record.name == "anole_jobs" and "transaction.atomic()" in record.getMessage()
    ]


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_a_store_without_transactions_warns_once_per_kind(env, caplog):
    env.require("supports_transactions", absent=True)
    with caplog.at_level("WARNING", logger="anole_jobs"), transaction.atomic():
        env.jobs.enqueue(Work())
        env.jobs.enqueue(Work())
        env.jobs.enqueue_many([Work(), Prioritized(name="x")])
    first, second = warnings_of(caplog)
    assert first.levelname == "WARNING"
    assert first.getMessage() == (
        f"enqueue('test.work') ran inside transaction.atomic(), which the {env.store.name} "
        "store cannot join: the job is stored now, even if the transaction rolls back, and "
        "may run before it commits. Pass on_commit=True to enqueue it when the transaction "
        "commits."
    )
    assert "'test.priority'" in second.getMessage()

    caplog.clear()
    with caplog.at_level("WARNING", logger="anole_jobs"):
        with transaction.atomic():
            env.jobs.enqueue(Work())  # already warned about this kind
            env.jobs.enqueue(Work(), on_commit=True)  # the way out: no warning
        env.jobs.enqueue(Prioritized(name="y"))  # outside any transaction
    assert warnings_of(caplog) == []


def test_sql_stores_join_the_transaction_and_do_not_warn(env, caplog):
    env.require("supports_transactions")
    with caplog.at_level("WARNING", logger="anole_jobs"), transaction.atomic(using=env.alias):
        env.jobs.enqueue(Work())
    assert warnings_of(caplog) == []


@pytest.mark.django_db(databases=["default"])  # a TestCase-style test: wrapped in atomic
def test_the_atomic_blocks_of_a_django_test_case_do_not_count(settings, clock, caplog):
    from anole_jobs.api import jobs

    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "CLOCK": clock}
    try:
        with caplog.at_level("WARNING", logger="anole_jobs"):
            jobs.enqueue(Work())
            assert warnings_of(caplog) == []
            with transaction.atomic():  # the test's own block does count
                jobs.enqueue(Work())
        assert len(warnings_of(caplog)) == 1
    finally:
        jobs.reset()
