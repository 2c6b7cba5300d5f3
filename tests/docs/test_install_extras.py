"""The quickstart's table of extras is pyproject.toml's: every extra, with every package it
installs (`dev` aside, which says "all of the above, plus" the tools)."""

from __future__ import annotations

import re
import tomllib

from tests.docs.harness import REPO

ROW = re.compile(r"^\|\s*`(?P<extra>[\w-]+)`\s*\|(?P<installs>[^|]*)\|", re.MULTILINE)


def test_the_quickstart_lists_every_extra_with_what_it_installs():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    text = (REPO / "docs" / "quickstart.md").read_text(encoding="utf-8")
    rows = {m["extra"]: m["installs"] for m in ROW.finditer(text)}
    assert set(extras) - set(rows) == set(), "extras the quickstart's table omits"
    for extra, requirements in extras.items():
        if extra == "dev":
            continue
        documented = set(re.findall(r"`([^`]+)`", rows[extra]))
        assert documented == set(requirements), extra
