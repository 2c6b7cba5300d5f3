"""The supported matrix the releases page writes down is the one CI runs and pyproject.toml
declares: each Python and Django of the table is a pair `.ci/run` tests, and a classifier."""

from __future__ import annotations

import re
import tomllib

from tests.docs.harness import REPO


def row(text: str, name: str) -> str:
    match = re.search(rf"^\| {name} \|(.*)$", text, re.MULTILINE)
    assert match, f"no {name} row in docs/releases.md"
    return match.group(1)


def test_the_supported_matrix_is_what_ci_runs_and_pyproject_declares():
    page = (REPO / "docs" / "releases.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pythons = sorted(set(re.findall(r"\b3\.1\d\b", row(page, "Python").split("|")[0])))
    djangos = re.findall(r"\b[56]\.\d\b", row(page, "Django").split("|")[0])
    assert pythons == ["3.11", "3.12"] and djangos == ["5.2", "6.0"]
    for python in pythons:
        assert f"find_python {python}" in ci
    for django in djangos:
        major = int(django.split(".")[0])
        assert f'"Django>={django},<{major + 1}"' in ci or f'"Django>={major}.0,<{major + 1}"' in ci
        assert f"Framework :: Django :: {django}" in project["classifiers"]
    assert project["requires-python"] == ">=3.11"
    assert "wheel_demo" in ci and "tools/check_wheel.py" in ci


def test_the_changelog_has_an_upgrading_note_per_release():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    assert releases, "no release in CHANGELOG.md"
    for release in releases:
        assert "### Upgrading" in release, release.splitlines()[0]
