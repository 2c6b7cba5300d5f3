"""Every ```python block of the docs and the README runs (see tests/docs/harness.py).

One test per page, each page in a subprocess of its own: a page's kinds, settings and modules
never meet the test suite's, nor another page's. A new page under docs/ is covered
automatically. The selected pages start together, two at a time, when the first of them is
reached, so that the slow part (a Django start-up per page) overlaps.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.docs.harness import REPO, python_blocks

PAGES = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
TEST_NAME = "test_every_python_block_of_the_page_runs"


def run_page(page: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "-m", "tests.docs.harness", str(page)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="session")
def page_runs(request):
    """Start every selected page with python blocks; each test waits for its own page."""
    selected = [
        item.callspec.params["page"]
        for item in request.session.items
        if getattr(item, "originalname", None) == TEST_NAME and hasattr(item, "callspec")
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs: dict[Path, Future[subprocess.CompletedProcess[str]]] = {
            page: pool.submit(run_page, page) for page in selected if python_blocks(page)
        }
        yield runs
        for future in runs.values():
            future.cancel()


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_python_block_of_the_page_runs(page, page_runs):
    if page not in page_runs:
        pytest.skip(f"{page.name} has no python blocks")
    result = page_runs[page].result()
    if result.returncode != 0:
        pytest.fail(f"{page.name}:\n{result.stderr}\n{result.stdout}", pytrace=False)
