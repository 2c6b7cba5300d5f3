"""Every dashboard page in Chromium, at a desktop and a phone width, against the site the
screenshots are taken of (`tools.screenshots`: a live server, a real `runjobs` worker and
seeded jobs): no page scrolls sideways and none logs a console error, and every page shows
its content with scripts off. Then the workers page: it refreshes itself, and it is a plain
page with scripts off.

A page added to `tools.screenshots.PAGES` (for a screenshot) is checked here too. The
``browser`` tier: skipped with the reason when Chromium or Playwright is missing.
"""

from __future__ import annotations

import pytest

from tests.conftest import CHROMIUM, require
from tools.screenshots import PAGES, launch, new_page, running_site, visit

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.needs("chromium")]

#: How far past the viewport a page may reach (sub-pixel rounding), in CSS pixels.
SLACK = 1


@pytest.fixture(scope="module")
def site():
    with running_site() as running:
        yield running


@pytest.fixture(scope="module")
def chromium():
    require("chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright, CHROMIUM)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(autouse=True)
def _async_unsafe(monkeypatch):
    # Playwright's sync API keeps an event loop in this thread; Django's checks would refuse
    # the ORM next to it (this module makes no ORM call, but fixtures may).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_no_page_scrolls_sideways_or_logs_a_console_error(site, chromium, phone):
    page = new_page(chromium, site, phone=phone)
    errors: list[str] = []

    def console(message):
        # A failed load is reported by `response` below, with its address.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            errors.append(message.text)

    def response(answer):
        # The browser asks for the site's /favicon.ico on its own: the project's, not ours.
        if answer.status >= 400 and not answer.url.endswith("/favicon.ico"):
            errors.append(f"{answer.status} for {answer.url}")

    page.on("console", console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("response", response)
    problems = []
    for entry in PAGES:
        visit(page, site, entry)
        width = page.evaluate("document.documentElement.scrollWidth")
        # The width asked for: a mobile browser widens its layout viewport (and
        # window.innerWidth) to fit a page that is too wide, zooming out.
        viewport = page.viewport_size["width"]
        if width > viewport + SLACK:
            widest = page.evaluate(
                """(limit) => [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > limit + 1)
                    .slice(0, 3).map(e => e.tagName + '.' + e.className)""",
                viewport,
            )
            problems.append(f"{entry.name}: {width} px wide in a {viewport} px viewport ({widest})")
        if errors:
            problems.append(f"{entry.name}: console errors {errors}")
            errors.clear()
    page.context.close()
    assert problems == []


def test_the_workers_page_refreshes_itself(site, chromium):
    page = new_page(chromium, site, phone=False)
    workers = next(entry for entry in PAGES if entry.name == "workers")
    visit(page, site, workers)
    assert page.get_by_role("heading", name="Workers").is_visible()
    assert page.get_by_text("worker-1 · pid").first.is_visible()
    assert page.get_by_role("row", name="Job").first.is_visible()
    before = page.locator("#live p.muted").last.inner_text()  # "As of <time>."
    # live.js fetches the region again (every 5 s); its status line says when it did.
    page.get_by_role("status").filter(has_text="Updated at").wait_for(timeout=15_000)
    assert page.locator("#live p.muted").last.inner_text() != before
    assert page.get_by_text("worker-1 · pid").first.is_visible()
    page.context.close()


def test_every_page_reads_with_scripts_off(site, chromium):
    context = chromium.new_context(java_script_enabled=False)
    context.add_cookies([{"name": "sessionid", "value": site.session, "url": site.url}])
    page = context.new_page()
    missing = []
    for entry in PAGES:
        answer = page.goto(site.page_url(entry))
        if answer is None or answer.status != 200:
            missing.append(f"{entry.name}: {answer and answer.status}")
        elif page.get_by_text(entry.ready).count() == 0:
            missing.append(f"{entry.name}: {entry.ready!r} not shown")
    context.close()
    assert missing == []


def test_the_workers_page_is_a_plain_page_with_scripts_off(site, chromium):
    context = chromium.new_context(java_script_enabled=False)
    context.add_cookies([{"name": "sessionid", "value": site.session, "url": site.url}])
    page = context.new_page()
    page.goto(site.url + "/ops/jobs/dashboard/workers/")
    assert page.get_by_text("worker-1 · pid").first.is_visible()
    assert page.get_by_text("no worker runs").is_visible()
    assert page.get_by_role("button", name="Pause updates").count() == 0  # no live bar
    context.close()
