"""End-to-end fixtures: a store per test, `runjobs` subprocesses, and reads of the jobs they ran.

Each test gets a `Backend`: SQLite (a copy of a migrated template file, so each test starts
empty), PostgreSQL (one database per session, ``anole_e2e_<ANOLE_TEST_RUN_ID>``, created with
psycopg, migrated once, emptied before each test and dropped at the end) or Redis (a
`KEY_PREFIX` unique to the test, deleted after). `Backend.spawn` starts
``python -m django runjobs`` with ``DJANGO_SETTINGS_MODULE=tests.e2e.settings``; every process a
test starts is killed at its teardown, and its output is printed there (pytest shows it when
the test fails).

Waiting is always bounded and wakes on what happens, not on a timer: every `runjobs` process's
output is read line by line by a thread that notifies `OUTPUT`, and `wait_until` re-checks its
condition each time a line arrives (handlers print a line for every marker they touch, and
the runtime logs every run's end after its write). A slow re-check (`RECHECK`) covers the few
changes that print nothing, such as a lock held in the database.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from tests.conftest import _flush_redis, require
from tests.support.waiting import wait_until as support_wait_until

ROOT = Path(__file__).resolve().parents[2]
RUN_ID = os.environ.get("ANOLE_TEST_RUN_ID", uuid.uuid4().hex[:10])
DRAIN = 2.0  # drain_timeout of the "default" queue in tests/e2e/settings.py, in seconds
WRITE_GRACE = 3.0  # a process exits within max(drain_timeout) + 3 s of the signal
#: Python's own start-up and shut-down around the bound, measured from the signal.
ALLOWANCE = 1.5
COMMAND_TIMEOUT = 60.0
RECHECK = 0.5  # seconds between re-checks when no output arrives


class Output:
    """Notified on every line any `runjobs` process of this session prints."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.lines = 0

    def seen(self) -> int:
        with self.cond:
            return self.lines

    def line(self) -> None:
        with self.cond:
            self.lines += 1
            self.cond.notify_all()

    def wait_after(self, seen: int, timeout: float) -> None:
        """Wait until a line arrives after `seen` lines, or `timeout` seconds pass."""
        with self.cond:
            self.cond.wait_for(lambda: self.lines != seen, timeout)


OUTPUT = Output()


def _output_after_now() -> Callable[[float], None]:
    """A wait that ends when a process prints a line after this call."""
    return functools.partial(OUTPUT.wait_after, OUTPUT.seen())


#: `tests.support.waiting.wait_until` that re-checks whenever a process prints a line (at
#: most `RECHECK` s apart).
wait_until = functools.partial(support_wait_until, recheck=RECHECK, changed=_output_after_now)


def base_env(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANOLE_E2E_", "DJANGO_SETTINGS_MODULE"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="tests.e2e.settings",
        PYTHONUNBUFFERED="1",
        # A runjobs that hangs is sent SIGABRT before it is killed (`Worker.wait`): with the
        # fault handler on, it prints every thread's stack first, so the failure says where.
        PYTHONFAULTHANDLER="1",
        ANOLE_TEST_RUN_ID=RUN_ID,
        **extra,
    )
    return env


def manage(env: dict[str, str], *args: str, timeout: float = COMMAND_TIMEOUT) -> str:
    """Run ``python -m django ARGS`` to completion; its stdout (fails the test on an error)."""
    done = subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"`django {' '.join(args)}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done.stdout


class Worker:
    """One ``runjobs`` subprocess; its stdout and stderr go to a file the test can read. It runs
    this tree's code unless `python` and `cwd` name another (an older release's, say)."""

    def __init__(
        self,
        env: dict[str, str],
        args: tuple[str, ...],
        log_path: Path,
        *,
        python: str = sys.executable,
        cwd: Path = ROOT,
    ) -> None:
        self.args = args
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in `close`
        self.proc = subprocess.Popen(
            [python, "-m", "django", "runjobs", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        self._reader = threading.Thread(target=self._read, name=f"runjobs-{self.pid}-output")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            self._log.flush()
            OUTPUT.line()
        OUTPUT.line()  # the process ended: waiters re-check (and see it exited)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_output(self, text: str, timeout: float = 30.0, *, since: int = 0) -> str:
        """Wait until `text` appears in the output (past offset `since`); fails early if the
        process exits first."""

        def seen() -> bool:
            if text in self.output()[since:]:
                return True
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"runjobs exited ({self.proc.returncode}) before printing {text!r}:\n"
                    + self.output()
                )
            return False

        wait_until(seen, f"{text!r} in the output of runjobs {self.pid}", timeout)
        return self.output()

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Signals are safe to send once runjobs says it runs (its handlers are installed)."""
        self.wait_output("send SIGTERM or SIGINT to drain", timeout)

    def signal(self, signum: int = signal.SIGTERM) -> float:
        """Send `signum`; returns the monotonic time it was sent."""
        sent = time.monotonic()
        os.kill(self.proc.pid, signum)
        return sent

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.dump_stacks()
            raise AssertionError(
                f"runjobs {self.pid} still runs {timeout} s later:\n{self.output()}"
            ) from None

    def dump_stacks(self) -> None:
        """Ask a hung runjobs for every thread's stack (the fault handler prints them on
        SIGABRT, then the process ends) and wait until its output is read."""
        if self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGABRT)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return
        self._reader.join(timeout=10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def close(self) -> None:
        self.kill()
        self._reader.join(timeout=30)
        self._log.close()


@dataclass
class Spec:
    """Jobs to enqueue: `count` jobs of `kind` with `args` (to `queue`, or the kind's); with
    `spread`, one by one over that many seconds (a burst, each with ``n`` its index)."""

    kind: str
    count: int = 1
    queue: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    spread: float | None = None


@dataclass
class Backend:
    """One store for one test: its env for subprocesses and direct reads of its jobs."""

    name: str
    env: dict[str, str]
    tmp: Path
    reader: Callable[[list[int]], dict[int, dict[str, Any]]]
    workers: list[Worker] = field(default_factory=list)
    pg: Any = None  # a psycopg connection to the test database (postgres only)
    #: ``{state: n}`` of the "default" queue as the dashboard shows it: the store's counts,
    #: read in one snapshot (the count table on SQL, the counts hash on Redis).
    default_counts: Callable[[], dict[str, int]] = lambda: {}  # noqa: E731

    @property
    def markers(self) -> Path:
        """Where the e2e handlers touch their ``<id>.<attempt>.<what>`` files."""
        return self.tmp / "markers"

    # -- processes ---------------------------------------------------------------------------
    def spawn(self, *args: str, **env: str) -> Worker:
        """Start ``runjobs ARGS`` with extra ``ANOLE_E2E_*`` settings (e.g. DRAIN="10")."""
        extra = {f"ANOLE_E2E_{key}": value for key, value in env.items()}
        worker = Worker(
            {**self.env, **extra},
            args,
            self.tmp / f"runjobs-{len(self.workers) + 1}.log",
        )
        self.workers.append(worker)
        return worker

    def manage(self, *args: str, **env: str) -> str:
        extra = {f"ANOLE_E2E_{key}": value for key, value in env.items()}
        return manage({**self.env, **extra}, *args)

    def run_command(self, *args: str, timeout: float = COMMAND_TIMEOUT, **env: str) -> Any:
        """Run any django command with this backend's settings; the CompletedProcess."""
        extra = {f"ANOLE_E2E_{key}": value for key, value in env.items()}
        return subprocess.run(
            [sys.executable, "-m", "django", *args],
            cwd=ROOT,
            env={**self.env, **extra},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    # -- jobs --------------------------------------------------------------------------------
    def enqueue(
        self, kind: str, count: int = 1, queue: str | None = None, **args: Any
    ) -> list[int]:
        """Enqueue `count` jobs of `kind` with `args`; their ids."""
        (ids,) = self.enqueue_specs(Spec(kind, count, queue, args))
        return ids

    def enqueue_specs(self, *specs: Spec) -> list[list[int]]:
        """Enqueue several batches with one process start; one list of ids per spec."""
        payload = [
            {"kind": s.kind, "args": s.args, "count": s.count, "queue": s.queue}
            | ({} if s.spread is None else {"spread": s.spread})
            for s in specs
        ]
        ids: list[list[int]] = json.loads(self.manage("e2e_enqueue", json.dumps(payload)))
        return ids

    def jobs(self, ids: list[int]) -> dict[int, dict[str, Any]]:
        """``{id: {kind, state, attempt, errors}}`` read from the store as it is now."""
        return self.reader(ids)

    def wait_jobs(
        self,
        ids: list[int],
        check: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = 30.0,
    ) -> dict[int, dict[str, Any]]:
        """Poll until every job in `ids` passes `check`; returns their records."""

        def done() -> dict[int, dict[str, Any]] | None:
            records = self.jobs(ids)
            if len(records) == len(ids) and all(check(r) for r in records.values()):
                return records
            return None

        try:
            return wait_until(done, what, timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\njobs now: {self.jobs(ids)}") from None

    def wait_state(
        self, ids: list[int], state: str, timeout: float = 30.0
    ) -> dict[int, dict[str, Any]]:
        return self.wait_jobs(ids, lambda r: r["state"] == state, f"jobs {ids} {state}", timeout)

    def wait_markers(
        self, count: int, what: str = "started", timeout: float = 30.0, job_id: int | None = None
    ) -> None:
        """Wait until `count` handlers (of `job_id` only, if given) touched `what`."""
        wait_markers(self.markers, count, what, timeout, job_id)


def wait_markers(
    directory: Path,
    count: int,
    what: str = "started",
    timeout: float = 30.0,
    job_id: int | None = None,
) -> None:
    """Wait until `count` handlers touched ``<id>.<attempt>.<what>`` in `directory`."""
    pattern = f"{job_id}.*.{what}" if job_id is not None else f"*.{what}"
    wait_until(
        lambda: len(list(directory.glob(pattern))) >= count,
        f"{count} handlers {what}",
        timeout,
    )


# -- readers -------------------------------------------------------------------------------------
def _decode_errors(value: Any) -> list[dict[str, Any]]:
    errors = json.loads(value) if isinstance(value, (str, bytes)) else value
    return list(errors or [])


def _sql_rows(rows: list[tuple[Any, ...]]) -> dict[int, dict[str, Any]]:
    return {
        row[0]: {
            "id": row[0],
            "kind": row[1],
            "state": row[2],
            "attempt": row[3],
            "errors": _decode_errors(row[4]),
        }
        for row in rows
    }


JOB_COLUMNS = "id, kind, state, attempt, errors"


def sqlite_reader(path: Path) -> Callable[[list[int]], dict[int, dict[str, Any]]]:
    def read(ids: list[int]) -> dict[int, dict[str, Any]]:
        marks = ", ".join("?" for _ in ids)
        # WAL: a reader is never blocked by the worker's writes; the busy timeout covers
        # a checkpoint.
        with sqlite3.connect(path, timeout=20) as db:
            rows = db.execute(
                f"SELECT {JOB_COLUMNS} FROM anole_jobs_job WHERE id IN ({marks})", ids
            ).fetchall()
        return _sql_rows(rows)

    return read


def postgres_reader(connection: Any) -> Callable[[list[int]], dict[int, dict[str, Any]]]:
    def read(ids: list[int]) -> dict[int, dict[str, Any]]:
        rows = connection.execute(
            f"SELECT {JOB_COLUMNS} FROM anole_jobs_job WHERE id = ANY(%s)", [ids]
        ).fetchall()
        return _sql_rows(rows)

    return read


def store_reader(store: Any) -> Callable[[list[int]], dict[int, dict[str, Any]]]:
    """Reads through a store object in this process (Redis: no SQL to read directly)."""

    def read(ids: list[int]) -> dict[int, dict[str, Any]]:
        records = [r for r in (store.get(job_id) for job_id in ids) if r is not None]
        return {
            r.id: {
                "id": r.id,
                "kind": r.kind,
                "state": r.state,
                "attempt": r.attempt,
                "errors": [dict(e) for e in r.errors],
            }
            for r in records
        }

    return read


def _counts_reader(
    name: str, sqlite_path: Path, pg: Any, redis_store: Any
) -> Callable[[], dict[str, int]]:
    query = "SELECT state, SUM(n) FROM anole_jobs_count WHERE queue = 'default' GROUP BY state"
    if name == "sqlite":

        def read_sqlite() -> dict[str, int]:
            with contextlib.closing(sqlite3.connect(sqlite_path)) as connection:
                return {state: int(n) for state, n in connection.execute(query) if n}

        return read_sqlite
    if name == "postgres":
        return lambda: {state: int(n) for state, n in pg.execute(query).fetchall() if n}
    return lambda: redis_store.counts().get("default", {})


# -- session resources ---------------------------------------------------------------------------
@pytest.fixture(scope="session")
def e2e_tmp(tmp_path_factory: Any) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def sqlite_template(e2e_tmp: Path) -> Path:
    """A migrated SQLite file; each test works on a copy of it."""
    path = e2e_tmp / "template.sqlite3"
    manage(base_env(ANOLE_E2E_STORE="sqlite", ANOLE_E2E_SQLITE=str(path)), "migrate", "--noinput")
    return path


def _pg_connect(dbname: str) -> Any:
    import psycopg

    db = django_settings.DATABASES["pg"]
    return psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=dbname, autocommit=True
    )


@contextlib.contextmanager
def migrated_pg_database(name: str, e2e_tmp: Path) -> Iterator[str]:
    """A PostgreSQL database `name`, created (dropped first if a killed run left it) and
    migrated by `manage.py migrate`; dropped on the way out."""
    require("postgres")
    with _pg_connect("postgres") as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        manage(
            base_env(
                ANOLE_E2E_STORE="postgres",
                ANOLE_E2E_PG_DB=name,
                ANOLE_E2E_SQLITE=str(e2e_tmp / "pg-default.sqlite3"),
            ),
            "migrate",
            "--noinput",
        )
        yield name
    finally:
        with _pg_connect("postgres") as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_database(e2e_tmp: Path) -> Iterator[str]:
    """``anole_e2e_<run id>``: created and migrated once per session, dropped at the end."""
    with migrated_pg_database(f"anole_e2e_{RUN_ID}", e2e_tmp) as name:
        yield name


BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.needs("postgres")),
    pytest.param("redis", id="redis", marks=pytest.mark.needs("redis")),
]


@pytest.fixture(params=BACKENDS)
def backend(request: Any, tmp_path: Path) -> Iterator[Backend]:
    yield from _backend(request, request.param, tmp_path)


@pytest.fixture
def sqlite_backend(request: Any, tmp_path: Path) -> Iterator[Backend]:
    """For tests whose point does not depend on the store."""
    yield from _backend(request, "sqlite", tmp_path)


@pytest.fixture
def cluster_backend(request: Any, tmp_path: Path) -> Iterator[Backend]:
    """The Redis store on the session's local 3-master Redis Cluster."""
    yield from _backend(request, "redis_cluster", tmp_path)


@pytest.fixture
def pg_backend(request: Any, tmp_path: Path) -> Iterator[Backend]:
    require("postgres")
    yield from _backend(request, "postgres", tmp_path)


def wal_file(path: Path) -> None:
    """Create the SQLite file Django's default database names, in WAL mode, as `migrate`
    would leave it. The other stores never migrate it, and the settings' init_command switches
    each new connection to WAL: two processes starting at once on a file not in WAL yet both
    try the switch, and SQLite fails the loser at once ("database is locked") instead of
    waiting out its busy timeout. WAL is kept in the file, so on a file already in WAL the
    pragma changes nothing and takes no lock."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)


def _backend(request: Any, name: str, tmp_path: Path) -> Iterator[Backend]:
    (tmp_path / "markers").mkdir()
    sqlite_path = tmp_path / "jobs.sqlite3"
    env = base_env(ANOLE_E2E_STORE=name, ANOLE_E2E_SQLITE=str(sqlite_path))
    pg = None
    prefix = None
    redis_store = None
    if name != "sqlite":
        wal_file(sqlite_path)  # the default database of the other stores' processes
    if name == "sqlite":
        shutil.copyfile(request.getfixturevalue("sqlite_template"), sqlite_path)
        reader = sqlite_reader(sqlite_path)
    elif name == "postgres":
        database = request.getfixturevalue("pg_database")
        env["ANOLE_E2E_PG_DB"] = database
        pg = _pg_connect(database)
        pg.execute(
            "TRUNCATE anole_jobs_job, anole_jobs_leader, anole_jobs_cron, anole_jobs_queue,"
            " anole_jobs_worker"
        )
        reader = postgres_reader(pg)
    elif name == "redis_cluster":
        from redis.cluster import RedisCluster

        from anole_jobs.stores.redis.cluster import RedisClusterStore

        cluster = request.getfixturevalue("local_redis_cluster")
        prefix = f"anole-e2e:{RUN_ID}:{uuid.uuid4().hex[:8]}:"
        env["ANOLE_E2E_REDIS"] = cluster.urls[0]
        env["ANOLE_E2E_KEY_PREFIX"] = prefix
        redis_store = RedisClusterStore(RedisCluster.from_url(cluster.urls[0]), key_prefix=prefix)
        reader = store_reader(redis_store)
    else:
        require("redis")
        from anole_jobs import conf
        from anole_jobs.stores import open_store

        prefix = f"anole-e2e:{RUN_ID}:{uuid.uuid4().hex[:8]}:"
        env["ANOLE_E2E_REDIS"] = django_settings.REDIS_TEST_URL
        env["ANOLE_E2E_KEY_PREFIX"] = prefix
        # The test settings' "jobs" cache is the same Redis (REDIS_TEST_URL).
        redis_store = open_store(conf.parse({"STORE": {"redis": "jobs"}, "KEY_PREFIX": prefix}))
        reader = store_reader(redis_store)
    backend = Backend(
        name=name,
        env=env,
        tmp=tmp_path,
        reader=reader,
        pg=pg,
        default_counts=_counts_reader(name, sqlite_path, pg, redis_store),
    )
    try:
        yield backend
    finally:
        for worker in backend.workers:
            worker.close()
        for index, worker in enumerate(backend.workers, 1):
            print(f"----- runjobs #{index} {' '.join(worker.args)} (exit {worker.proc.returncode})")
            print(worker.output())
        if pg is not None:
            pg.close()
        if redis_store is not None:
            redis_store.close()
        if prefix is not None and name == "redis_cluster":
            from anole_jobs.stores.redis.keys import Keys

            request.getfixturevalue("local_redis_cluster").delete(Keys(prefix).pattern())
        elif prefix is not None:
            _flush_redis(prefix)
