"""The live pages and the Django admin's job list in a real browser: Playwright driving the
system's Chromium against pytest-django's live server (one process; the store is the SQLite
database store on the test database, moved by hand with `jobs.step()` under a fake clock).

- The jobs page refreshes itself: a job enqueued after the page loaded shows up without a
  reload, the filters stay; a hidden tab stops asking and a shown one asks at once; a refresh
  that fails keeps the last table and says so.
- With scripts off, the pages are plain pages.
- The admin's job list fits 1,280 px, and a dead job's row is one line of error.

The ``browser`` tier, as tests/dashboard/test_browser.py: skipped with the reason when Chromium
or Playwright is missing, unless ``ANOLE_TEST_REQUIRE`` names ``chromium``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.contrib import admin as admin_module

from anole_jobs.dashboard import views
from anole_jobs.testing import drain
from tests.sampleapp import jobs as sample_jobs
from tests.sampleapp import tasks
from tests.sampleapp.jobs import Work

BOARD = "/ops/jobs/dashboard/"
CHANGELIST = "/admin/anole_jobs/job/"
#: How long a page may take to show what the test waits for (a condition wait, not a sleep).
WAIT_MS = 15_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.e2e,
    pytest.mark.needs("chromium"),
    pytest.mark.django_db(databases=["default"], transaction=True),
]


@pytest.fixture
def board(settings, anole_jobs, monkeypatch):
    """The facade on the SQLite store of the live server's database, refreshing every 2 s;
    the live server serves the Django admin's own CSS (its static folder, uncollected)."""
    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "STORE": {"database": "default"}}
    settings.STATIC_ROOT = str(Path(admin_module.__file__).resolve().parent / "static")
    monkeypatch.setattr(views, "REFRESH_SECONDS", 2)
    return anole_jobs


@pytest.fixture
def logged_in(browser, live_server, django_user_model, client):
    """A browser context holding a staff user's session."""
    user = django_user_model.objects.create_user("ops", password="pw", is_staff=True)
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    session = client.cookies["sessionid"].value
    context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
    yield context
    context.close()


@pytest.fixture
def screenshots(tmp_path):
    folder = os.environ.get("ANOLE_TEST_SCREENSHOTS")
    return Path(folder) if folder else tmp_path / "screenshots"


def shot(page, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def set_visibility(page, state: str) -> None:
    """What the browser does when the tab is hidden or shown again."""
    page.evaluate(
        """state => {
        Object.defineProperty(document, "visibilityState", {value: state, configurable: true});
        document.dispatchEvent(new Event("visibilitychange"));
    }""",
        state,
    )


def test_the_jobs_page_refreshes_itself_and_keeps_its_filters(board, logged_in, live_server):
    board.enqueue(Work(tag="first"))
    page = logged_in.new_page()
    page.clock.install()  # the page's timers move only when the test moves them
    page.goto(f"{live_server.url}{BOARD}jobs/?kind=test.work")
    status = page.locator(".live [role=status]")
    assert page.get_by_role("button", name="Pause updates").is_visible()

    later = board.enqueue(Work(tag="later")).id
    tasks.add.enqueue(1, 2)  # another kind, which the filter leaves out
    with page.expect_response(lambda response: "partial=1" in response.url):
        page.clock.run_for(2_500)
    page.get_by_role("link", name=f"Job {later}, test.work, available").wait_for(timeout=WAIT_MS)
    assert page.url.endswith("/jobs/?kind=test.work")  # no reload, filters kept
    assert page.get_by_text("django.tasks").count() == 0
    status.filter(has_text="Updated at").wait_for(timeout=WAIT_MS)

    # A hidden tab stops asking; shown again, it asks at once.
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    set_visibility(page, "hidden")
    page.clock.run_for(60_000)
    assert [url for url in asked if "partial=1" in url] == []
    with page.expect_request(lambda request: "partial=1" in request.url, timeout=WAIT_MS):
        set_visibility(page, "visible")

    # Paused by hand: no asking either, until resumed.
    page.get_by_role("button", name="Pause updates").click()
    asked.clear()
    page.clock.run_for(60_000)
    assert [url for url in asked if "partial=1" in url] == []
    with page.expect_request(lambda request: "partial=1" in request.url, timeout=WAIT_MS):
        page.get_by_role("button", name="Resume updates").click()


def test_a_failed_refresh_keeps_the_table_and_says_so(board, logged_in, live_server):
    job = board.enqueue(Work()).id
    page = logged_in.new_page()
    page.clock.install()
    page.goto(f"{live_server.url}{BOARD}")
    page.route(
        "**/dashboard/?partial=1",
        lambda route: route.fulfill(status=503, body="down", headers={"Retry-After": "5"}),
    )
    status = page.locator(".live [role=status]")
    page.clock.run_for(2_500)
    status.filter(has_text="the jobs store did not answer").wait_for(timeout=WAIT_MS)
    assert "showing the table as it was" in status.inner_text()
    assert page.get_by_role("link", name="1 available jobs in default").is_visible()
    page.unroute("**/dashboard/?partial=1")
    page.clock.run_for(2_500)
    status.filter(has_text="Updated at").wait_for(timeout=WAIT_MS)
    assert board.get(job) is not None


def test_a_notice_is_gone_from_the_address_and_from_a_reload(board, logged_in, live_server):
    job = board.enqueue(Work()).id
    page = logged_in.new_page()
    page.goto(f"{live_server.url}{BOARD}jobs/{job}/")
    page.get_by_role("button", name="Delete…").click()  # it asks first, on a page: say no
    page.get_by_role("heading", name=f"Delete job {job}?").wait_for(timeout=WAIT_MS)
    page.get_by_role("link", name=f"Back to job {job}").click()
    assert board.get(job) is not None
    page.get_by_role("button", name="Cancel").click()
    page.wait_for_url(f"**/jobs/{job}/")
    assert page.get_by_role("status").first.inner_text() == "The job was cancelled."
    page.reload()
    assert page.get_by_text("The job was cancelled.").count() == 0


def test_every_page_works_with_scripts_off(board, browser, logged_in, live_server):
    job = board.enqueue(Work()).id
    context = browser.new_context(java_script_enabled=False)
    context.add_cookies(logged_in.cookies())
    page = context.new_page()
    page.goto(f"{live_server.url}{BOARD}jobs/?state=available")
    assert page.get_by_role("link", name=f"Job {job}, test.work, available").is_visible()
    assert page.get_by_role("button", name="Pause updates").count() == 0
    page.get_by_label("Kind", exact=True).fill("test.work")
    page.get_by_role("button", name="Filter").click()
    # The form sends its search fields too, blank.
    page.wait_for_url("**/jobs/?state=available&queue=&kind=test.work&**")
    page.get_by_role("link", name=f"Job {job}, test.work, available").click()
    page.get_by_role("button", name="Cancel").click()
    page.wait_for_url(f"**/jobs/{job}/")
    assert page.get_by_role("heading", name=f"Job {job} cancelled").is_visible()
    context.close()


def test_the_admin_job_list_fits_1280_pixels_with_one_line_errors(
    board, logged_in, live_server, screenshots, monkeypatch
):
    def long_failure(job, args):
        trace = "\n".join(f'  File "/srv/app/billing/step_{n}.py", line {n}' for n in range(40))
        raise RuntimeError(f"payment service refused order 1042 after a long wait\n{trace}")

    monkeypatch.setitem(sample_jobs.HOOKS, "long_failure", long_failure)
    for n in range(2):
        board.enqueue(Work(action="fail", tag=f"order {n}"))
    board.enqueue(Work(action="long_failure"))
    board.enqueue(Work())
    tasks.add.enqueue(1, 2)
    drain()
    page = logged_in.new_page()
    page.goto(f"{live_server.url}{CHANGELIST}")
    shot(page, screenshots, "admin-jobs-1280")
    overflow = page.evaluate(
        """() => [document.documentElement, document.querySelector('.results')]
            .map(box => box.scrollWidth - box.clientWidth)"""
    )
    assert overflow == [0, 0], f"wider than the window, or than the table's box: {overflow}"
    dead = page.locator("#result_list tbody tr", has_text="dead")
    heights = [box["height"] for box in (row.bounding_box() for row in dead.all()) if box]
    assert len(heights) == 3 and max(heights) < 60, heights  # two lines at most, no traceback
    assert page.get_by_text("django.tasks: tests.sampleapp.tasks.add").is_visible()
    assert page.get_by_text("ValueError: failed on attempt 3").first.is_visible()
    long_error = page.locator("td.field-last_error span", has_text="RuntimeError")
    assert long_error.inner_text() == "RuntimeError: payment service refused order 104…"
    assert long_error.get_attribute("title") == (
        "RuntimeError: payment service refused order 1042 after a long wait"
    )
