"""Every ```python block of the docs and the README runs (see tests/docs/harness.py).

One test per page, each in a subprocess of its own: a page's kinds, settings and modules never
meet the test suite's, nor another page's. A new page under docs/ is covered automatically.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.docs.harness import REPO, python_blocks

PAGES = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_python_block_of_the_page_runs(page):
    if not python_blocks(page):
        pytest.skip(f"{page.name} has no python blocks")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "-m", "tests.docs.harness", str(page)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(f"{page.name}:\n{result.stderr}\n{result.stdout}", pytrace=False)
