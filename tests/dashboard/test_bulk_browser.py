"""Search and "retry all matching" in a real browser: Playwright driving the system's
Chromium against a live server, with a real `runjobs` process as the worker (the ``browser``
tier; see test_browser.py for how it is run and skipped).

Three dead jobs of one customer and one of another: search by argument value on the jobs
page, open "Retry all matching…", confirm on the page that counts them, see the notice, and
see the worker complete exactly those three."""

from __future__ import annotations

import pytest

from anole_jobs.api import jobs
from tests.dashboard.test_browser import (  # noqa: F401 - fixtures used by name
    BASE,
    screenshots,
    shared_store,
    shot,
    wait_state,
)
from tests.sampleapp.dashboard_jobs import Charge
from tests.support.clients import STAFF_PASSWORD, STAFF_USERNAME, make_staff

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.needs("redis", "chromium")]


def test_search_by_argument_then_retry_all_matching(
    live_server,
    shared_store,  # noqa: F811 - the fixture
    browser,
    screenshots,  # noqa: F811 - the fixture
):
    make_staff()
    mine = [jobs.enqueue(Charge(order_id=7, amount_cents=100 + n)).id for n in range(3)]
    other = jobs.enqueue(Charge(order_id=8)).id
    for job_id in [*mine, other]:
        wait_state(job_id, "dead")  # one attempt each, failed

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(live_server.url + BASE + "jobs/")
    page.get_by_label("Username").fill(STAFF_USERNAME)
    page.get_by_label("Password").fill(STAFF_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/jobs/")

    page.get_by_label("State").select_option("dead")
    page.get_by_label("Arguments contain").fill('{"order_id": 7}')
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/jobs/?*args=*")
    for job_id in mine:
        assert page.get_by_role(
            "link", name=f"Job {job_id}, test.dashboard.charge, dead"
        ).is_visible()
    assert page.get_by_role("link", name=f"Job {other}, test.dashboard.charge, dead").count() == 0
    assert page.get_by_text("Searched jobs 1 to").is_visible()
    shot(page, screenshots, "jobs-search")

    page.get_by_role("link", name="Retry all matching…").click()
    page.wait_for_url("**/bulk/retry?*")
    assert page.get_by_role("heading", name="Retry all 3 matching jobs?").is_visible()
    shot(page, screenshots, "bulk-confirm")
    page.get_by_role("button", name="Retry all 3 matching jobs").click()
    page.wait_for_url("**/jobs/?*args=*")
    assert page.locator(".notice").inner_text() == "3 of 3 matching jobs retried."

    for job_id in mine:
        wait_state(job_id, "completed")  # the retry's attempt succeeds
    assert jobs.get(other).state == "dead"
