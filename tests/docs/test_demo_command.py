"""The README's `DATABASE_URL` demo: a database that is missing or down is one clear line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.docs.harness import REPO


def run_demo(database_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": database_url}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "manage.py", "demo"],
        cwd=REPO / "testproject",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://postgres@127.0.0.1:1/anole_demo", "Check that PostgreSQL runs there"),
        ("postgresql://postgres@127.0.0.1:5432/anole_no_such_db_h9", "Create it first"),
    ],
    ids=["closed-port", "missing-database"],
)
def test_an_unreachable_database_is_one_line_and_exit_1(url, says):
    if "5432" in url:
        pytest.importorskip("psycopg")
    result = run_demo(url)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    if "5432" in url and "does not exist" not in result.stderr:
        pytest.skip("no PostgreSQL on 127.0.0.1:5432 to tell a missing database apart")
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("CommandError: cannot connect to PostgreSQL database")
    assert says in lines[0]
    assert "unset DATABASE_URL" in lines[0]
    assert "Traceback" not in result.stderr
