"""The statistics charts in a real browser (Playwright driving the system's Chromium against
pytest-django's live server, the SQLite store moved by hand under a fake clock): the queues
page's chart and the statistics page's two charts render, are announced as images with their
titles, fit a desktop and a phone screen, and the page works with scripts off. The 30-day
range, read from the hours the leader rolled up, fits both screens too, its x labels apart.

The ``browser`` tier, as tests/dashboard/test_browser.py: skipped with the reason when Chromium
or Playwright is missing, unless ``ANOLE_TEST_REQUIRE`` names ``chromium``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from anole_jobs.stores.database.ddl import stat_hour_table, stat_table
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


def clear_stats() -> None:
    # The stat tables are no models: no flush empties them.
    with connection.cursor() as cursor:
        for table in (stat_table("anole_jobs_"), stat_hour_table("anole_jobs_")):
            cursor.execute(f'DELETE FROM "{table}"')


@pytest.fixture
def ran(board, anole_clock):
    """Runs in two minutes: three completed and one failed, then two completed."""
    clear_stats()
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


@pytest.fixture
def month(board, anole_clock):
    """Runs on 25 of the last 30 days, more each day, one in four failing; each day's leader
    round rolls the ended hours up and prunes the minutes past a day."""
    clear_stats()
    end = datetime(2030, 1, 31, 12, 0, 30, tzinfo=UTC)
    for day in range(25):
        anole_clock.set(end - timedelta(days=25 - day, hours=day % 7))
        board.enqueue_many([Work(action="discard" if i % 4 == 3 else "ok") for i in range(day)])
        board.step()
    anole_clock.set(end)
    board.step()
    return board


@pytest.mark.parametrize(
    ("width", "period", "name"),
    [
        (1280, "month", "stats-month"),
        (390, "month", "stats-month-phone"),
        (390, "week", "stats-week-phone"),
    ],
)
def test_the_30_day_range_fits_the_screen_with_its_labels_apart(
    month, browser, logged_in, live_server, screenshots, width, period, name
):
    context = browser.new_context(
        viewport={"width": width, "height": 900}, is_mobile=width < 500, has_touch=width < 500
    )
    context.add_cookies(logged_in.cookies())
    page = context.new_page()
    page.goto(live_server.url + BOARD + f"stats/?period={period}")
    span = {"month": "the last 30 days", "week": "the last 7 days"}[period]
    title = f"Jobs completed, failed and started, all queues, per hour over {span}"
    chart = page.get_by_role("img", name=title)
    chart.wait_for(timeout=WAIT_MS)
    box = chart.bounding_box()
    assert box is not None and 0 < box["width"] <= width and box["height"] > 50
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    summary = page.locator("#live p").first.inner_text()
    days = range(25) if period == "month" else range(19, 25)  # day 18 is 7 days and 4 h ago
    dead = sum(1 for day in days for i in range(day) if i % 4 == 3)
    assert f"{span}: {sum(days) - dead} completed, {dead} failed" in summary
    # Every chart shown: text at 10 px or more, and no two x labels overlapping.
    found = page.evaluate(
        """() => [...document.querySelectorAll('svg.chart')]
            .filter(svg => svg.getBoundingClientRect().width > 0)
            .map(svg => {
                const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
                const texts = [...svg.querySelectorAll('text')];
                const axis = texts.filter(t => t.getAttribute('text-anchor') === 'middle')
                    .map(t => t.getBoundingClientRect()).map(r => [r.left, r.right]);
                return {
                    smallest: Math.min(...texts.map(
                        t => parseFloat(getComputedStyle(t).fontSize) * scale)),
                    axis: axis.sort((a, b) => a[0] - b[0]),
                };
            })"""
    )
    assert len(found) == 2
    for chart_found in found:
        assert chart_found["smallest"] >= 10
        axis = chart_found["axis"]
        assert len(axis) >= 4
        assert all(a[1] <= b[0] for a, b in zip(axis, axis[1:], strict=False)), axis
    shot(page, screenshots, name)
    context.close()
