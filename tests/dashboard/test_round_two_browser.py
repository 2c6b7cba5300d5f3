"""The second round's pages and controls in Chromium, at 1,280 px and at a phone's 390 px:
the Errors, Kinds, Workflows and queue pages and a confirmation page fit the screen; rows
chosen on the jobs list are acted on after a question; the job page refreshes itself and
says when in UTC; times switch to the browser's zone and back; the pages follow a dark
system theme. Playwright driving the system's Chromium against pytest-django's live server,
the SQLite store moved by hand.

The ``browser`` tier, as tests/dashboard/test_browser.py: skipped with the reason when
Chromium or Playwright is missing, unless ``ANOLE_TEST_REQUIRE`` names ``chromium``.
"""

from __future__ import annotations

import re

import pytest

from anole_jobs import Workflow
from tests.dashboard.test_live_browser import BOARD, board, logged_in
from tests.sampleapp.jobs import Work

__all__ = ["board", "logged_in"]  # fixtures this module uses

pytestmark = [
    pytest.mark.browser,
    pytest.mark.e2e,
    pytest.mark.needs("chromium"),
    pytest.mark.django_db(databases=["default"], transaction=True),
]
WAIT_MS = 15_000


@pytest.fixture
def seeded(board):
    dead = [board.enqueue(Work(action="discard")).id for _ in range(3)]
    board.enqueue(Work())
    flow = Workflow("import feed 42")
    flow.add(Work(tag="a"), name="fetch")
    board.enqueue_workflow(flow)
    board.step()
    waiting = board.enqueue(Work(tag="waits")).id
    return {"dead": dead, "waiting": waiting}


def context_at(browser, logged_in, width, **options):
    phone = width < 500
    context = browser.new_context(
        viewport={"width": width, "height": 900}, is_mobile=phone, has_touch=phone, **options
    )
    context.add_cookies(logged_in.cookies())
    return context


@pytest.mark.parametrize("width", [1280, 390])
def test_the_new_pages_fit_the_screen(seeded, browser, logged_in, live_server, width):
    context = context_at(browser, logged_in, width)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    too_wide = []
    for path, shows in (
        ("errors/", "Discarded"),
        ("kinds/", "test.work"),
        ("workflows/", "import feed 42"),
        ("queues/default/", "Change the limits"),
        (f"jobs/{seeded['dead'][0]}/delete", "cannot be undone"),
        ("jobs/?state=dead", "Retry chosen…"),
    ):
        answer = page.goto(live_server.url + BOARD + path)
        assert answer is not None and answer.status == 200, path
        page.get_by_text(shows).first.wait_for(timeout=WAIT_MS)
        scroll = page.evaluate("document.documentElement.scrollWidth")
        if scroll > width + 1:
            too_wide.append(f"{path}: {scroll} px")
    context.close()
    assert too_wide == [] and errors == []


@pytest.mark.parametrize("width", [1280, 390])
def test_chosen_rows_are_acted_on_after_a_question(
    seeded, board, browser, logged_in, live_server, width
):
    context = context_at(browser, logged_in, width)
    page = context.new_page()
    page.goto(live_server.url + BOARD + "jobs/?state=dead")
    first, _, third = seeded["dead"]
    page.get_by_label(f"Choose job {first}").check()
    page.get_by_label(f"Choose job {third}").check()
    page.get_by_role("button", name="Retry chosen…").click()
    page.get_by_role("heading", name="Retry 2 chosen jobs?").wait_for(timeout=WAIT_MS)
    assert {board.get(job).state for job in seeded["dead"]} == {"dead"}
    page.get_by_role("button", name="Retry 2 chosen").click()
    page.wait_for_url("**/jobs/?state=dead*", timeout=WAIT_MS)
    assert page.get_by_text("2 of 2 chosen jobs retried.").is_visible()
    assert [board.get(job).state for job in seeded["dead"]] == ["available", "dead", "available"]
    context.close()


def test_the_job_page_refreshes_and_says_when_in_utc(
    seeded, board, browser, logged_in, live_server
):
    context = context_at(browser, logged_in, 1280)
    page = context.new_page()
    page.clock.install()
    job = seeded["waiting"]
    page.goto(f"{live_server.url}{BOARD}jobs/{job}/")
    assert page.get_by_role("heading", name=f"Job {job} available").is_visible()
    board.step()  # it completes while the page is open
    with page.expect_response(lambda response: "partial=1" in response.url):
        page.clock.run_for(2_500)
    page.get_by_role("heading", name=f"Job {job} completed").wait_for(timeout=WAIT_MS)
    status = page.locator(".live [role=status]").inner_text()
    assert re.search(r"Updated at \d\d:\d\d:\d\d UTC", status), status
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_times_switch_to_local_and_back(seeded, browser, logged_in, live_server, width):
    context = context_at(browser, logged_in, width, timezone_id="Asia/Kolkata")
    page = context.new_page()
    page.goto(f"{live_server.url}{BOARD}jobs/{seeded['waiting']}/")
    created = page.locator("dd time").first
    assert created.inner_text().endswith(" UTC")
    page.get_by_role("button", name="Times: UTC").click()
    assert created.inner_text().endswith(" local")
    utc = created.get_attribute("data-utc")
    assert utc is not None and utc[11:13] != created.inner_text()[11:13]  # +05:30
    page.reload()  # the choice is kept
    assert page.locator("dd time").first.inner_text().endswith(" local")
    page.get_by_role("button", name="Times: local").click()
    assert page.locator("dd time").first.inner_text().endswith(" UTC")
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_pages_follow_a_dark_system_theme(seeded, browser, logged_in, live_server, width):
    context = context_at(browser, logged_in, width, color_scheme="dark")
    page = context.new_page()
    page.goto(live_server.url + BOARD + "errors/")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(n) for n in re.findall(r"\d+", background)[:3])
    assert max(red, green, blue) < 60, background
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_queue_page_changes_limits_and_pauses(
    seeded, board, browser, logged_in, live_server, width
):
    context = context_at(browser, logged_in, width)
    page = context.new_page()
    page.goto(live_server.url + BOARD)
    page.get_by_role("link", name="default", exact=True).first.click()
    page.get_by_role("heading", name="Queue default").wait_for(timeout=WAIT_MS)
    page.get_by_label("At once (across every worker)").fill("3")
    page.get_by_role("button", name="Save limits").click()
    page.get_by_text("The queue's limits were changed").wait_for(timeout=WAIT_MS)
    [record] = [queue for queue in board.queues() if queue.name == "default"]
    assert record.limits.global_concurrency == 3
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_text("The queue is paused").wait_for(timeout=WAIT_MS)
    assert page.url.endswith("/queues/default/") or "/queues/default/?" in page.url
    assert any(queue.paused for queue in board.queues() if queue.name == "default")
    context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_delete_asks_on_a_page_with_scripts_off(
    seeded, board, browser, logged_in, live_server, width
):
    context = context_at(browser, logged_in, width, java_script_enabled=False)
    page = context.new_page()
    job = seeded["dead"][1]
    page.goto(f"{live_server.url}{BOARD}jobs/{job}/")
    page.get_by_role("button", name="Delete…").click()
    page.get_by_role("heading", name=f"Delete job {job}?").wait_for(timeout=WAIT_MS)
    assert board.get(job) is not None
    page.get_by_role("button", name="Delete", exact=True).click()
    page.get_by_text("The job was deleted.").wait_for(timeout=WAIT_MS)
    assert board.get(job) is None
    context.close()
