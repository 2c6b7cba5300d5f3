"""A rolling deploy on PostgreSQL: the previous release's code keeps working against the schema
this release's migrations leave, while this release's workers run beside it.

The previous release is a pinned commit of this repository (the last one before migration
0011), extracted with ``git archive`` into a temporary directory and run by a virtualenv of its
own whose only path entries are that tree and this interpreter's installed packages (nothing is
downloaded). Both releases run one small project written here (settings, kinds, a cron entry),
so what each does is the same code path the users' projects take: ``jobs.enqueue`` and
``runjobs``.

The deploy, in the order docs/upgrading.md gives: the old release runs (its worker leads and
runs cron) and enqueues; this release's ``migrate`` runs while it does; this release's workers
start; the old release enqueues again (plain and unique jobs, a unique one twice) and its leader
keeps inserting cron ticks. Every enqueue must succeed, every job must complete, no cron minute
may go missing, and neither release may log an error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require
from tests.e2e.conftest import ROOT, RUN_ID, Worker, _pg_connect, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.needs("postgres")]

#: The last commit before migration 0011 (found with ``git log --first-parent --
#: anole_jobs/migrations``): its schema is 0001-0008, and it inserts with
#: ``ON CONFLICT (unique_lock)``.
PREVIOUS_RELEASE = "df2bf2f6c5af5d037806bc64059be19c5c43f9ef"

SETTINGS = """\
import os

SECRET_KEY = "rolling-deploy-test"
USE_TZ = True
DEBUG = False
INSTALLED_APPS = ["anole_jobs", "rolling_app"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["ROLLING_DB"],
        "USER": os.environ.get("ANOLE_TEST_PG_USER", "postgres"),
        "HOST": os.environ.get("ANOLE_TEST_PG_HOST", "127.0.0.1"),
        "PORT": os.environ.get("ANOLE_TEST_PG_PORT", "5432"),
    }
}
ANOLE_JOBS = {
    "STORE": {"database": "default"},
    "QUEUES": {"default": {"concurrency": 4, "drain_timeout": 2}},
    "LEASE": 5,
    "CRON": [{"name": "rolling-tick", "schedule": "* * * * *", "job": "rolling_app.jobs.Tick"}],
}
LOGGING = {
    "version": 1,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"anole_jobs": {"handlers": ["console"], "level": "INFO"}},
}
"""

KINDS = """\
from dataclasses import dataclass

from anole_jobs import Job, Unique, jobs, kind


@kind("rolling.plain")
@dataclass
class Plain:
    n: int


@kind("rolling.once", unique=Unique())
@dataclass
class Once:
    key: str


@kind("rolling.tick")
@dataclass
class Tick:
    pass


@jobs.handler(Plain)
def plain(job: Job, args: Plain) -> None:
    pass


@jobs.handler(Once)
def once(job: Job, args: Once) -> None:
    pass


@jobs.handler(Tick)
def tick(job: Job, args: Tick) -> None:
    pass
"""

#: Enqueues `count` plain jobs one by one, as many in one `enqueue_many`, and `count` unique
#: ones, the first of them twice; prints every id it got as JSON, and which release it ran.
ENQUEUE = """\
import json
import sys

import django

django.setup()

import anole_jobs
from anole_jobs import jobs
from rolling_app.jobs import Once, Plain

tag, count = sys.argv[1], int(sys.argv[2])
ids = [jobs.enqueue(Plain(n=i)).id for i in range(count)]
ids += [e.id for e in jobs.enqueue_many([Plain(n=i) for i in range(count)])]
ids += [jobs.enqueue(Once(key=f"{tag}-{i}")).id for i in range(count)]
again = jobs.enqueue(Once(key=f"{tag}-0"))
print(json.dumps({"ids": ids, "again": again.id, "code": anole_jobs.__file__}))
"""


def previous_release(tmp: Path) -> Path:
    """The pinned release's tree, extracted with git archive; skipped without git history."""
    tree = tmp / "previous"
    tree.mkdir()
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", PREVIOUS_RELEASE, "anole_jobs"],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"the previous release {PREVIOUS_RELEASE[:7]} is not in this clone: {exc}")
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True, timeout=60)
    return tree


def venv_of(tree: Path, directory: Path) -> Path:
    """A virtualenv that imports `tree` first, then this interpreter's installed packages
    (Django, psycopg, cronsim...), and not this tree's anole_jobs (an editable install is a
    .pth file, which a path listed in another .pth does not run)."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(directory)
    python = directory / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "previous_release.pth").write_text(f"{tree}\n{ours}\n")
    return python


def project(directory: Path) -> Path:
    directory.mkdir()
    (directory / "rolling_settings.py").write_text(SETTINGS)
    (directory / "rolling_app").mkdir()
    (directory / "rolling_app" / "__init__.py").write_text("")
    (directory / "rolling_app" / "jobs.py").write_text(KINDS)
    (directory / "enqueue.py").write_text(ENQUEUE)
    return directory


class Release:
    """One release's interpreter, run in the test project."""

    def __init__(self, name: str, python: str, project: Path, database: str) -> None:
        self.name = name
        self.python = python
        self.project = project
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "DJANGO"))}
        self.env = {
            **env,
            "PYTHONPATH": str(project),
            "DJANGO_SETTINGS_MODULE": "rolling_settings",
            "PYTHONUNBUFFERED": "1",
            "ROLLING_DB": database,
        }

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [self.python, *args],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{self.name}: {' '.join(args)}\n{done.stdout}{done.stderr}"
        return done.stdout

    def migrate(self) -> str:
        return self.run("-m", "django", "migrate", "--noinput", "-v1")

    def enqueue(self, tag: str, count: int) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.run("enqueue.py", tag, str(count)))
        return result

    def worker(self, log: Path) -> Worker:
        return Worker(self.env, (), log, python=self.python, cwd=self.project)


@pytest.fixture
def database() -> Iterator[str]:
    require("postgres")
    name = f"anole_rolling_{RUN_ID}"
    with _pg_connect("postgres") as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with _pg_connect("postgres") as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_previous_release_keeps_working_through_the_migration(
    tmp_path: Path, database: str
) -> None:
    site = project(tmp_path / "project")
    old = Release(
        "previous release",
        str(venv_of(previous_release(tmp_path), tmp_path / "venv")),
        site,
        database,
    )
    new = Release("this release", sys.executable, site, database)
    workers: list[Worker] = []
    try:
        old.migrate()
        workers.append(old.worker(tmp_path / "old-worker.log"))
        workers[0].wait_ready()
        before = old.enqueue("before", 20)
        assert before["code"].startswith(str(tmp_path / "previous"))  # the old code ran

        migrated = new.migrate()  # while the old worker runs
        assert "0012_unique_lock" in migrated
        migrated_at = datetime.now(UTC)
        workers.append(new.worker(tmp_path / "new-worker.log"))
        workers[1].wait_ready()

        after = old.enqueue("after", 20)
        ours = new.enqueue("ours", 20)
        ids = [
            *before["ids"],
            before["again"],
            *after["ids"],
            after["again"],
            *ours["ids"],
            ours["again"],
        ]

        with _pg_connect(database) as pg:

            def states() -> dict[int, str]:
                rows = pg.execute(
                    "SELECT id, state FROM anole_jobs_job WHERE id = ANY(%s)", [ids]
                ).fetchall()
                return dict(rows)

            def all_completed() -> bool:
                found = states()
                return len(found) == len(set(ids)) and set(found.values()) == {"completed"}

            wait_until(all_completed, "every job completed", 60)

            # The old leader inserts the cron ticks after the migration too (within a minute
            # and a bit), one per minute with none missing.
            def ticks() -> list[tuple[datetime, str]]:
                return pg.execute(
                    "SELECT scheduled_at, state FROM anole_jobs_job"
                    " WHERE kind = 'rolling.tick' ORDER BY scheduled_at"
                ).fetchall()

            wait_until(
                lambda: any(at >= migrated_at and state == "completed" for at, state in ticks()),
                "a cron tick after the migration, completed",
                100,
                recheck=1.0,
            )
            minutes = [at.replace(second=0, microsecond=0) for at, _ in ticks()]
            assert len(set(minutes)) == len(minutes)
            spans = [(b - a).total_seconds() for a, b in zip(minutes, minutes[1:], strict=False)]
            assert all(span == 60 for span in spans), minutes
        for worker in workers:
            assert worker.proc.poll() is None, worker.output()
            output = worker.output()
            for bad in ("Traceback", "ERROR", "unreachable", "ProgrammingError"):
                assert bad not in output, f"{bad} in {worker.log_path.name}:\n{output}"
    finally:
        for worker in workers:
            worker.close()
