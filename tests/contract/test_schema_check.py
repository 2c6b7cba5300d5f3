"""W003: the check that the database's server functions and triggers are the ones this
release's migrations define."""

from __future__ import annotations

import pytest
from django.db import connections

from anole_jobs import conf
from anole_jobs.checks import check_schema_functions


@pytest.fixture
def store_on(settings):
    def use(alias: str) -> None:
        settings.ANOLE_JOBS = {"STORE": {"database": alias}, "RUN": "manual"}
        conf.reset()

    yield use
    conf.reset()


def warnings(alias: str) -> list[str]:
    return [message.msg for message in check_schema_functions(databases=[alias])]


@pytest.mark.django_db(databases=["default"])
def test_a_migrated_sqlite_database_passes_and_an_edited_trigger_does_not(store_on) -> None:
    store_on("default")
    assert warnings("default") == []
    with connections["default"].cursor() as cursor:
        cursor.execute('DROP TRIGGER "anole_jobs_count_delete"')
        cursor.execute(
            'CREATE TRIGGER "anole_jobs_count_delete" AFTER DELETE ON "anole_jobs_job"'
            " BEGIN SELECT 1; END"
        )
        cursor.execute('DROP TRIGGER "anole_jobs_stat_runs"')
    [message] = check_schema_functions(databases=["default"])
    assert message.id == "anole_jobs.W003"
    assert "trigger anole_jobs_count_delete: not the body" in message.msg
    assert "trigger anole_jobs_stat_runs: missing" in message.msg
    assert "manage.py migrate" in message.hint


@pytest.mark.needs("postgres")
@pytest.mark.django_db(databases=["default", "pg"])
def test_a_migrated_postgres_database_passes_and_an_edited_function_does_not(store_on) -> None:
    store_on("pg")
    assert warnings("pg") == []
    with connections["pg"].cursor() as cursor:
        # A function edited by hand, and one dropped (an older schema), in this test's
        # transaction, which ends rolled back.
        cursor.execute(
            'CREATE OR REPLACE FUNCTION "anole_jobs_count_jobs"() RETURNS trigger'
            " LANGUAGE plpgsql AS $body$ BEGIN RETURN NULL; END $body$"
        )
        cursor.execute(
            'DROP FUNCTION "anole_jobs_claim_limited"(text, text[], integer, timestamptz,'
            " timestamptz, text, integer, integer, double precision)"
        )
        cursor.execute('DROP TRIGGER "anole_jobs_stat_runs" ON "anole_jobs_job"')
    [message] = warnings("pg")
    assert "function anole_jobs_count_jobs: not the body" in message
    assert "function anole_jobs_claim_limited: missing" in message
    assert "trigger anole_jobs_stat_runs: missing" in message


def test_it_does_not_connect_unless_databases_are_requested(store_on, monkeypatch) -> None:
    store_on("default")

    def connect(*args: object, **kwargs: object) -> None:
        raise AssertionError("the check connected")

    monkeypatch.setattr("anole_jobs.stores.database.schema_check.differences", connect)
    assert check_schema_functions(databases=None) == []
    assert check_schema_functions(databases=["other"]) == []


@pytest.mark.django_db(databases=["default"])
def test_it_leaves_a_database_with_migrations_to_apply_to_migrate(store_on) -> None:
    """`migrate` runs the database checks before it migrates: what it is about to create is
    not reported missing."""
    store_on("default")
    with connections["default"].cursor() as cursor:
        cursor.execute('DROP TRIGGER "anole_jobs_stat_runs"')
        assert warnings("default") != []
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = 'anole_jobs' AND name = '0012_unique_lock'"
        )
    assert warnings("default") == []
