"""The statistics charts in a real browser (Playwright driving the system's Chromium against
pytest-django's live server, the SQLite store moved by hand under a fake clock): the queues
page's chart and the statistics page's two charts render, are announced as images with their
titles, fit a desktop and a phone screen, and the page works with scripts off.

The ``browser`` tier, as tests/dashboard/test_browser.py: skipped with the reason when Chromium
or Playwright is missing, unless ``ANOLE_TEST_REQUIRE`` names ``chromium``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection

from anole_jobs.stores.database.ddl import stat_table
from tests.dashboard.test_live_browser import BOARD, board, logged_in, screenshots, shot
from tests.sampleapp.jobs import Work

__all__ = ["board", "logged_in", "screenshots"]  # fixtures this module uses

pytestmark = [
    pytest.mark.browser,
    pytest.mark.e2e,
    pytest.mark.needs("chromium"),
    pytest.mark.django_db(databases=["default"], transaction=True),
]
WAIT_MS = 15_000


@pytest.fixture
def ran(board, anole_clock):
    """Runs in two minutes: three completed and one failed, then two completed."""
    with connection.cursor() as cursor:  # the stat table is no model: no flush empties it
        cursor.execute(f'DELETE FROM "{stat_table("anole_jobs_")}"')
    anole_clock.set(datetime(2030, 1, 1, 12, 0, 30, tzinfo=UTC))
    board.enqueue_many([Work(), Work(), Work(), Work(action="discard")])
    board.step()
    anole_clock.set(datetime(2030, 1, 1, 12, 1, 30, tzinfo=UTC))
    board.enqueue_many([Work(), Work()])
    board.step()
    return board


@pytest.mark.parametrize(("width", "name"), [(1280, "stats"), (390, "stats-phone")])
def test_the_charts_render_are_named_and_fit_the_screen(
    ran, logged_in, live_server, screenshots, width, name
):
    page = logged_in.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + BOARD + "stats/")
    throughput = page.get_by_role("img", name="Jobs completed, failed and started, all queues")
    runtime = page.get_by_role("img", name="Run time of completed jobs, all queues")
    throughput.wait_for(timeout=WAIT_MS)
    for chart in (throughput, runtime):
        box = chart.bounding_box()
        assert box is not None and 0 < box["width"] <= width and box["height"] > 50
    assert page.locator("svg.chart text", has_text="completed").count() >= 2  # legend + line
    summary = page.locator("#live p").first.inner_text()  # summed over the hour
    assert "5 completed" in summary and "1 failed" in summary and "1 dead" in summary
    shot(page, screenshots, name)
    page.goto(live_server.url + BOARD)
    page.get_by_role("img", name="Jobs completed, failed and started, all queues").wait_for(
        timeout=WAIT_MS
    )
    page.close()


def test_the_statistics_page_works_with_scripts_off(ran, browser, logged_in, live_server):
    context = browser.new_context(java_script_enabled=False)
    context.add_cookies(logged_in.cookies())
    page = context.new_page()
    page.goto(live_server.url + BOARD + "stats/")
    page.select_option("#s-period", "day")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/stats/?*period=day*", timeout=WAIT_MS)
    assert (
        page.get_by_role(
            "img", name="Jobs completed, failed and started, all queues, per hour over the last day"
        ).count()
        == 1
    )
    context.close()
