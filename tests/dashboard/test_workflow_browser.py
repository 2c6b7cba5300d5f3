"""The workflow page's action in Chromium, against a live site with a real `runjobs` worker
(`tools.screenshots`' site, seeded with a small workflow: one step completed, one running,
one retrying, one pending): cancelling the workflow from its page, through the confirmation
the page asks for, leaves the completed step as it was and every other step cancelled.

Its own site (module scope), so that cancelling does not change what the every-page test
sees. The ``browser`` tier: skipped with the reason when Chromium or Playwright is missing.
"""

from __future__ import annotations

import pytest

from tests.conftest import CHROMIUM, require
from tools.screenshots import PAGES, launch, new_page, running_site, visit

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.needs("chromium")]

WORKFLOW = next(page for page in PAGES if page.name == "workflow")


@pytest.fixture(scope="module")
def site():
    with running_site() as running:
        yield running


@pytest.fixture(autouse=True)
def _async_unsafe(monkeypatch):
    # Playwright's sync API keeps an event loop in this thread (see test_every_page_browser).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def step_rows(page) -> dict[str, str]:
    """``{step name: its row's text}`` of the page's steps table (the step in the first cell)."""
    rows = page.locator("table").last.locator("tbody tr")
    found = {}
    for index in range(rows.count()):
        row = rows.nth(index)
        found[row.locator("td, th").first.inner_text().strip()] = row.inner_text()
    return found


def test_cancel_workflow_from_its_page_after_the_confirmation(site):
    require("chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright, CHROMIUM)
        try:
            page = new_page(browser, site, phone=False)
            visit(page, site, WORKFLOW)
            assert "completed" in step_rows(page)["fetch"]
            # It asks first, on a page of its own (scripts or not).
            page.get_by_role("button", name="Cancel workflow…").click()
            page.get_by_role("heading", name="Cancel workflow import feed 42?").wait_for()
            page.get_by_role("button", name="Cancel the workflow").click()
            page.get_by_text("cancelled", exact=True).first.wait_for()
            # The page after the redirect: the workflow cancelled, its finished step kept.
            heading = page.locator("h1").inner_text()
            assert "import feed 42" in heading and "cancelled" in heading
            states = step_rows(page)
            assert "completed" in states["fetch"], states
            assert all("cancelled" in states[name] for name in ("parse", "thumbs", "publish")), (
                states
            )
            assert page.get_by_role("button", name="Cancel workflow…").count() == 0
        finally:
            browser.close()
