"""The Makefile's interpreter handling (README "Two commands"), in a temporary copy.

Each test copies the Makefile and tools/ensure-venv.sh next to a placeholder pyproject.toml and
runs make there. `PIP_INSTALL` stands in for pip and `VENV_ARGS=--without-pip` keeps venv
creation fast, so nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.harness import REPO

PY311 = sys.executable  # the suite runs on a supported Python
OTHER_PYTHONS = [
    path
    for path in (
        shutil.which("python3.12"),
        shutil.which("python3.13"),
        shutil.which("python3.11"),
        "/root/.pyenv/versions/3.11.7/bin/python",
        "/root/.pyenv/versions/3.12.1/bin/python",
    )
    if path
]


def working(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", "import venv"], capture_output=True).returncode == 0
    except OSError:
        return False


def recent(python: str) -> bool:
    check = "import sys; sys.exit(sys.version_info < (3, 11))"
    return subprocess.run([python, "-c", check], capture_output=True).returncode == 0


def other_interpreter() -> str | None:
    """A working Python 3.11+ that is not the one running the tests, if the machine has one."""
    me = os.path.realpath(sys._base_executable)
    for python in OTHER_PYTHONS:
        if working(python) and recent(python) and real_interpreter(python) != me:
            return python
    return None


pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO / "tools" / "ensure-venv.sh", tmp_path / "tools" / "ensure-venv.sh")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'placeholder'\n")
    return tmp_path


def make(checkout: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "MAKEFLAGS")}
    environ.update({"PIP_INSTALL": "echo pip is noisy", "VENV_ARGS": "--without-pip", **env})
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=checkout,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


def real_interpreter(python: str) -> str:
    """The file behind `python` (a venv's base, a pyenv shim's target), as it reports itself."""
    out = subprocess.run(
        [python, "-c", "import os, sys; print(os.path.realpath(sys._base_executable))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def venv_base(checkout: Path) -> str:
    return real_interpreter(str(checkout / ".venv" / "bin" / "python"))


OTHER = other_interpreter()


def test_an_interpreter_that_does_not_exist_is_named_as_missing(checkout):
    result = make(checkout, "venv", "PYTHON=python3.99")
    assert result.returncode != 0
    assert "PYTHON=python3.99: no such interpreter" in result.stderr
    assert "3.11 or newer" not in result.stderr
    assert not (checkout / ".venv").exists()


def test_an_interpreter_too_old_is_named_with_its_version(checkout):
    candidates = (shutil.which("python3.10"), "/root/.pyenv/versions/3.10.13/bin/python")
    old = next((path for path in candidates if path and working(path)), None)
    if old is None:
        pytest.skip("no Python 3.10 on this machine")
    result = make(checkout, "venv", f"PYTHON={old}")
    assert result.returncode != 0
    assert "is Python 3.10" in result.stderr
    assert "needs Python 3.11 or newer" in result.stderr


def test_the_install_is_quiet_and_runs_once(checkout):
    first = make(checkout, "venv", f"PYTHON={PY311}")
    assert first.returncode == 0, first.stderr
    assert "pip is noisy" not in first.stdout + first.stderr
    assert "installing anole_jobs" in first.stderr
    assert (checkout / ".venv" / ".anole-installed").exists()
    again = make(checkout, "venv", f"PYTHON={PY311}")
    assert again.returncode == 0
    assert again.stderr == ""  # up to date: not a word


def test_a_failed_install_shows_pips_output(checkout):
    result = make(checkout, "venv", PIP_INSTALL="echo 'ERROR: no matching distribution'; exit 3")
    assert result.returncode != 0
    assert "ERROR: no matching distribution" in result.stderr
    assert "the install failed" in result.stderr
    assert not (checkout / ".venv" / ".anole-installed").exists()


@pytest.mark.skipif(OTHER is None, reason="needs a second Python 3.11+ interpreter")
def test_naming_another_python_rebuilds_the_venv_and_says_so(checkout):
    assert make(checkout, "venv", f"PYTHON={PY311}").returncode == 0
    before = venv_base(checkout)
    result = make(checkout, "venv", f"PYTHON={OTHER}")
    assert result.returncode == 0, result.stderr
    assert "rebuilding it with PYTHON=" in result.stderr
    assert venv_base(checkout) == real_interpreter(OTHER) != before


@pytest.mark.skipif(OTHER is None, reason="needs a second Python 3.11+ interpreter")
def test_without_python_an_existing_venv_is_kept(checkout):
    assert make(checkout, "venv", f"PYTHON={OTHER}").returncode == 0
    before = venv_base(checkout)
    result = make(checkout, "venv")
    assert result.returncode == 0, result.stderr
    assert "rebuilding" not in result.stderr
    assert venv_base(checkout) == before
