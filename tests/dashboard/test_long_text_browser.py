"""Long unbroken text in Chromium, at 1,280 px and at a phone's 390 px: a 200-character queue
name (the longest a queue may have), 10,000-character words in a job's arguments, its error
message, its workflow's name and step name never make a page wider than the screen, the
queues page's Pause button stays on screen, and the statistics page's charts read at 10 px or
more on the phone. Playwright driving the system's Chromium against pytest-django's live
server, the SQLite store moved by hand.

The ``browser`` tier, as tests/dashboard/test_browser.py: skipped with the reason when
Chromium or Playwright is missing, unless ``ANOLE_TEST_REQUIRE`` names ``chromium``.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from anole_jobs import Workflow
from tests.dashboard.test_live_browser import BOARD, board, logged_in
from tests.sampleapp import jobs as sample_jobs
from tests.sampleapp.jobs import Work

__all__ = ["board", "logged_in"]  # fixtures this module uses

pytestmark = [
    pytest.mark.browser,
    pytest.mark.e2e,
    pytest.mark.needs("chromium"),
    pytest.mark.django_db(databases=["default"], transaction=True),
]
WAIT_MS = 15_000
QUEUE = "q" * 200
WORD = "w" * 10_000
#: The smallest text a chart may show on a phone, in CSS pixels.
SMALLEST_PX = 10


@pytest.fixture
def long_site(board, settings, monkeypatch):
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "QUEUES": {**settings.ANOLE_JOBS.get("QUEUES", {"default": {}}), QUEUE: {}},
        "CRON": [{"name": "c" * 200, "schedule": "0 3 * * *", "job": "tests.sampleapp.jobs.Work"}],
    }

    def fail(job, args):
        raise ValueError(f"declined: {WORD}")

    monkeypatch.setitem(sample_jobs.HOOKS, "long", fail)
    failed = board.enqueue(Work(action="long", tag=WORD), queue=QUEUE).id
    board.enqueue(Work(tag=WORD), queue=QUEUE)
    board.step()
    flow = Workflow("f" * 10_000)
    flow.add(Work(tag=WORD), name="s" * 200)
    workflow = board.enqueue_workflow(flow).id
    board.pause(QUEUE)
    return {"failed": failed, "workflow": workflow}


PATHS = (
    "",
    "jobs/",
    f"jobs/?queue={quote(QUEUE)}&error=declined",
    "jobs/{failed}/",
    "jobs/{failed}/delete",
    "stats/",
    f"stats/?queue={quote(QUEUE)}",
    "workflows/{workflow}/",
    "cron/",
    "workers/",
)


@pytest.mark.parametrize("width", [1280, 390])
def test_no_page_is_wider_than_the_screen_with_long_words(
    long_site, browser, logged_in, live_server, width
):
    context = browser.new_context(
        viewport={"width": width, "height": 900},
        is_mobile=width < 500,
        has_touch=width < 500,
    )
    context.add_cookies(logged_in.cookies())
    page = context.new_page()
    too_wide = []
    for path in PATHS:
        url = live_server.url + BOARD + path.format(**long_site)
        answer = page.goto(url)
        assert answer is not None and answer.status == 200, (path, answer and answer.status)
        scroll = page.evaluate("document.documentElement.scrollWidth")
        if scroll > width + 1:
            too_wide.append(f"{path[:40]}: {scroll} px")
    # The long queue's Resume button (it is paused) is on screen, not pushed off it.
    page.goto(live_server.url + BOARD)
    button = page.get_by_role("button", name=f"Resume queue {QUEUE}")
    box = button.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 1
    context.close()
    assert too_wide == []


def test_the_charts_text_is_at_least_10_px_on_a_phone(long_site, browser, logged_in, live_server):
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    context.add_cookies(logged_in.cookies())
    page = context.new_page()
    for path in ("", "stats/"):
        page.goto(live_server.url + BOARD + path)
        page.locator("svg.chart").first.wait_for(state="attached", timeout=WAIT_MS)
        sizes = page.evaluate(
            """() => [...document.querySelectorAll('svg.chart')]
                .filter(svg => svg.getBoundingClientRect().width > 0)
                .flatMap(svg => {
                    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
                    return [...svg.querySelectorAll('text')].map(
                        t => parseFloat(getComputedStyle(t).fontSize) * scale);
                })"""
        )
        assert sizes, f"{path}: no chart shown"
        assert min(sizes) >= SMALLEST_PX, (path, min(sizes))
    context.close()
