"""The test project's own test suite, run as a user would run theirs.

It is a separate Django project with its own settings, so it runs in a subprocess; its tests
use the `anole_jobs` pytest plugin, which pytest loads from the installed package's `pytest11`
entry point (nothing in the test project registers it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTPROJECT = Path(__file__).resolve().parents[1] / "testproject"


def test_the_testproject_suite_passes_with_the_plugin():
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "PYTEST_ADDOPTS", "DATABASE_URL")
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"],
        cwd=TESTPROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "6 passed" in result.stdout, result.stdout[-2000:]
