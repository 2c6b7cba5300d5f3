"""The dashboard's browser tests share one Chromium, driven by Playwright (Debian's package,
no browser download): skipped with the reason when it is missing."""

from __future__ import annotations

import pytest

from tests.conftest import CHROMIUM, require


@pytest.fixture
def browser(monkeypatch):
    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are
    # synchronous code that Django would otherwise refuse next to it.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    require("chromium")
    import playwright.sync_api as playwright_api

    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
