"""PostgreSQL as a role with only the privileges docs/deployment.md asks for: not a superuser,
not the tables' owner, no CREATE anywhere. The owner migrates; the app role enqueues, runs
workers (claims, heartbeats, outcomes, rescue, leadership on an advisory lock, LISTEN/NOTIFY,
pruning) and uses the admin calls — and everything works.
"""

from __future__ import annotations

import json
import re
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos.harness import Cluster
from tests.e2e.conftest import RUN_ID, Backend, Spec, _pg_connect, base_env, manage, postgres_reader

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.needs("postgres")]

DEPLOYMENT_DOC = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"


def documented_grants() -> str:
    """The SQL block of docs/deployment.md that grants the app's role its privileges, with its
    example names (`mydb`, `myapp`) as placeholders: the test runs exactly what users read."""
    blocks = re.findall(r"```sql\n(.*?)```", DEPLOYMENT_DOC.read_text(), flags=re.S)
    (grants,) = [block for block in blocks if "GRANT CONNECT ON DATABASE" in block]
    return grants.replace("mydb", "{database}").replace("myapp", "{role}")


GRANTS = documented_grants()


@pytest.fixture
def app_role_backend(tmp_path: Path) -> Iterator[Backend]:
    suffix = uuid.uuid4().hex[:6]
    role = f"anole_app_{suffix}"
    database = f"anole_role_{RUN_ID}_{suffix}"
    with _pg_connect("postgres") as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
        admin.execute(
            f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT"
            f" PASSWORD 'app-{suffix}'"
        )
    backend = None
    try:
        owner_env = base_env(
            ANOLE_E2E_STORE="postgres",
            ANOLE_E2E_PG_DB=database,
            ANOLE_E2E_SQLITE=str(tmp_path / "unused.sqlite3"),
        )
        manage(owner_env, "migrate", "--noinput")  # as the owner (postgres)
        with _pg_connect(database) as owner:
            for statement in GRANTS.format(database=f'"{database}"', role=role).split(";"):
                if statement.strip():
                    owner.execute(statement)
        (tmp_path / "markers").mkdir()
        pg = _pg_connect(database)
        backend = Backend(
            name="postgres",
            env={**owner_env, "ANOLE_TEST_PG_USER": role, "PGPASSWORD": f"app-{suffix}"},
            tmp=tmp_path,
            reader=postgres_reader(pg),
            pg=pg,
        )
        yield backend
    finally:
        if backend is not None:
            for worker in backend.workers:
                worker.close()
            for worker in backend.workers:
                print(worker.output())
            backend.pg.close()
        with _pg_connect("postgres") as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_the_documented_privileges_are_enough(app_role_backend: Backend) -> None:
    backend = app_role_backend
    who = backend.pg.execute(
        "SELECT rolsuper FROM pg_roles WHERE rolname = %s", [backend.env["ANOLE_TEST_PG_USER"]]
    ).fetchone()
    assert who == (False,)
    cluster = Cluster(backend)
    ids = cluster.enqueue(
        Spec("chaos.task", count=30, args={"seconds": 0.02}),
        Spec("chaos.task", count=3, args={"mode": "fail", "fail_attempts": 1}),
    )
    first, second = cluster.start(2)
    first.wait_ready()
    cluster.wait_all_final(timeout=60)
    cluster.reconcile()
    # Leadership: the advisory lock needs no privilege.
    assert "is now leader" in first.output() + second.output()
    out = backend.run_command("e2e_jobs", str(ids[0]))  # reads, as the app role
    assert out.returncode == 0, out.stderr
    # The job counts (kept by triggers that run as the app role), as the admin reads them.
    out = backend.run_command("jobs", "counts", "--json")
    assert out.returncode == 0, out.stderr
    assert sum(sum(states.values()) for states in json.loads(out.stdout).values()) == 33
    # Each worker recorded itself (the workers page), as the app role.
    out = backend.run_command("jobs", "workers", "--json")
    assert out.returncode == 0, out.stderr
    listed = {worker["pid"] for worker in json.loads(out.stdout)["workers"]}
    assert listed == {first.pid, second.pid}
    for worker in cluster.alive():
        cluster.drained.add(worker.pid)
        worker.signal(signal.SIGTERM)
        assert worker.wait(timeout=20) == 0, worker.output()
    for worker in cluster.workers:
        assert "permission denied" not in worker.output(), worker.output()
        assert "could not record this worker" not in worker.output(), worker.output()
