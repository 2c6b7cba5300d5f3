"""New code on a database that is not (fully) migrated says what to do: run migrate."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connections

from anole_jobs import conf
from anole_jobs.stores.database.schema_check import pending_migrations

ROOT = Path(__file__).resolve().parents[2]


def manage(tmp_path: Path, database: Path, *command: str) -> subprocess.CompletedProcess[str]:
    name = f"upgrade_settings_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "SECRET_KEY = 'x'\nUSE_TZ = True\nINSTALLED_APPS = ['anole_jobs']\n"
        f"DATABASES = {{'default': {{'ENGINE': 'django.db.backends.sqlite3', "
        f"'NAME': {str(database)!r}}}}}\n"
        "ANOLE_JOBS = {'STORE': {'database': 'default'}, 'STARTUP_TIMEOUT': 3}\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    env["DJANGO_SETTINGS_MODULE"] = name
    return subprocess.run(
        [sys.executable, "-m", "django", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_runjobs_on_an_unmigrated_database_says_run_migrate(tmp_path: Path) -> None:
    ran = manage(tmp_path, tmp_path / "empty.sqlite3", "runjobs")
    assert ran.returncode != 0
    assert "tables are missing from its database" in ran.stderr
    assert "run `manage.py migrate`" in ran.stderr
    assert "Check that the server runs" not in ran.stderr


def test_runjobs_on_a_database_migrated_by_an_older_release_says_run_migrate(
    tmp_path: Path,
) -> None:
    database = tmp_path / "old.sqlite3"
    assert manage(tmp_path, database, "migrate", "anole_jobs", "0008", "-v0").returncode == 0
    ran = manage(tmp_path, database, "runjobs")
    assert ran.returncode != 0
    assert "lacks migrations of this release (0009_stat_rows," in ran.stderr
    assert "0018_history): run `manage.py migrate`" in ran.stderr


@pytest.mark.django_db(databases=["default"])
def test_pending_migrations_reads_what_the_database_recorded(settings) -> None:
    settings.ANOLE_JOBS = {"STORE": {"database": "default"}, "RUN": "manual"}
    conf.reset()
    try:
        assert pending_migrations(conf.read_settings()) == []
        with connections["default"].cursor() as cursor:
            cursor.execute(
                "DELETE FROM django_migrations WHERE app = 'anole_jobs' AND name >= '0011'"
            )
        assert pending_migrations(conf.read_settings()) == [
            "0011_enqueue_indexes",
            "0012_unique_lock",
            "0013_durable",
            "0014_timeline",
            "0015_flow",
            "0016_deploys",
            "0017_operator",
            "0018_history",
        ]
        settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "MIGRATE": False}
        conf.reset()
        assert pending_migrations(conf.read_settings()) == []  # the user applies the DDL
    finally:
        conf.reset()


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_runjobs_start_up_warns_of_a_trigger_that_differs(settings, caplog) -> None:
    from anole_jobs.api import jobs
    from anole_jobs.stores.database.frozen import statements
    from anole_jobs.worker.runner import wait_for_store

    settings.ANOLE_JOBS = {"STORE": {"database": "default"}, "RUN": "manual"}
    jobs.reset()
    [create] = [
        s for s in statements("0003_counts", "sqlite") if '"anole_jobs_count_delete"' in s[:40]
    ]
    with connections["default"].cursor() as cursor:
        cursor.execute('DROP TRIGGER "anole_jobs_count_delete"')
    try:
        with caplog.at_level("WARNING", logger="anole_jobs.worker"):
            wait_for_store(jobs.service, 10.0)
        [warning] = [r.getMessage() for r in caplog.records if "server functions" in r.message]
        assert "trigger anole_jobs_count_delete: missing" in warning
        assert "run `manage.py migrate`" in warning
    finally:
        with connections["default"].cursor() as cursor:
            cursor.execute(create)
        jobs.reset()
        conf.reset()


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_runjobs_starts_when_its_schema_checks_cannot_read(settings, caplog, monkeypatch) -> None:
    """A role that may not read what the start-up checks look at still starts, saying so."""
    from django.db import ProgrammingError

    from anole_jobs.api import jobs
    from anole_jobs.stores.database import schema_check
    from anole_jobs.worker.runner import wait_for_store

    def refused(settings: object) -> list[str]:
        raise ProgrammingError("permission denied for table django_migrations")

    monkeypatch.setattr(schema_check, "pending_migrations", refused)
    monkeypatch.setattr(schema_check, "schema_drift", refused)
    settings.ANOLE_JOBS = {"STORE": {"database": "default"}, "RUN": "manual"}
    jobs.reset()
    try:
        with caplog.at_level("INFO", logger="anole_jobs.worker"):
            wait_for_store(jobs.service, 10.0)  # returns: the store answered
        lines = [r.getMessage() for r in caplog.records if "could not check" in r.message]
        assert ["which migrations it has" in line for line in lines] == [True, False]
        assert "its server functions and triggers" in lines[1]
        assert all("starting all the same" in line for line in lines)
    finally:
        jobs.reset()
        conf.reset()
