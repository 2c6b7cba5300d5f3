"""The dashboard in a real browser: Playwright driving the system's Chromium against a live
server, with a real `runjobs` process as the worker.

The ``browser`` tier: `make test` leaves it out (``ANOLE_TEST_TIERS=all`` or ``pytest -m
browser`` runs it), and it is skipped with the reason when Chromium (``ANOLE_TEST_CHROMIUM``,
default /usr/bin/chromium) or Playwright is missing, unless ``ANOLE_TEST_REQUIRE`` names
``chromium``.

Log in, see the failed job on the queue and job pages, open it, retry it, and see it complete
after the worker's next round. A screenshot of each page goes to ANOLE_TEST_SCREENSHOTS when
set, else to the test's temporary folder: the pictures in docs/screenshots/ come from one
command, ``python -m tools.screenshots`` (``make screenshots``). The web process
and the worker share a Redis store under a key prefix unique to the test.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from anole_jobs.api import jobs
from tests.conftest import _flush_redis
from tests.e2e.conftest import Worker, base_env, wait_until
from tests.sampleapp.dashboard_jobs import Charge
from tests.support.clients import STAFF_PASSWORD, STAFF_USERNAME, make_staff

BASE = "/ops/jobs/dashboard/"

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.needs("redis", "chromium")]


@pytest.fixture
def shared_store(settings, tmp_path):
    """This process (the live server) and a runjobs process on one Redis key prefix."""
    prefix = f"anole-dash:{uuid.uuid4().hex[:10]}:"
    settings.ROOT_URLCONF = "tests.dashboard.browser_urls"
    settings.LOGIN_URL = "/login/"
    settings.ANOLE_JOBS = {
        "STORE": {"redis": "jobs"},
        "KEY_PREFIX": prefix,
        "QUEUES": {"default": {}, "other": {}},
        "CRON": [
            {"name": "nightly-report", "schedule": "0 3 * * *", "job": "tests.sampleapp.jobs.Work"},
            {"name": "hourly-sync", "schedule": "0 * * * *", "job": "tests.sampleapp.jobs.Work"},
        ],
    }
    env = base_env(
        ANOLE_E2E_STORE="redis",
        ANOLE_E2E_REDIS=settings.REDIS_TEST_URL,
        ANOLE_E2E_KEY_PREFIX=prefix,
        ANOLE_E2E_SQLITE=str(tmp_path / "worker.sqlite3"),
    )
    worker = Worker(env, ("--queue", "default"), tmp_path / "runjobs.log")
    try:
        yield worker
    finally:
        worker.close()
        print(worker.output())
        jobs.reset()
        _flush_redis(prefix)


def wait_state(job_id: int, state: str) -> None:
    wait_until(
        lambda: (record := jobs.get(job_id)) is not None and record.state == state,
        f"job {job_id} {state}",
        timeout=60,
    )


@pytest.fixture
def screenshots(tmp_path):
    folder = os.environ.get("ANOLE_TEST_SCREENSHOTS")
    if folder:
        return Path(folder)
    return tmp_path / "screenshots"


def shot(page, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def test_log_in_see_a_failed_job_retry_it_and_see_it_complete(
    live_server, shared_store, browser, django_user_model, screenshots
):
    make_staff()
    failed = jobs.enqueue(Charge(order_id=1042))
    for n in range(3):
        jobs.enqueue(Charge(order_id=2000 + n), delay=3600)  # waiting, for the queue page
    wait_state(failed.id, "dead")  # the worker's first round: one attempt, failed

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(live_server.url + BASE)
    assert page.url.startswith(live_server.url + "/login/?next=")
    page.get_by_label("Username").fill(STAFF_USERNAME)
    page.get_by_label("Password").fill(STAFF_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(live_server.url + BASE)
    assert page.get_by_role("heading", name="Queues").is_visible()
    shot(page, screenshots, "queues")

    page.get_by_role("link", name="1 dead jobs in default").click()
    page.wait_for_url("**/jobs/?queue=default&state=dead")
    link = page.get_by_role("link", name=f"Job {failed.id}, test.dashboard.charge, dead")
    assert link.is_visible()
    shot(page, screenshots, "jobs")

    link.click()
    page.wait_for_url(f"**/jobs/{failed.id}/")
    assert page.get_by_text("payment service answered 503 for order 1042").first.is_visible()
    assert page.get_by_text("Traceback").first.is_visible()
    shot(page, screenshots, "job-failed")

    page.keyboard.press("Tab")  # the skip link takes keyboard focus first
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.get_by_role("button", name="Retry now").click()
    page.wait_for_url(f"**/jobs/{failed.id}/")  # the notice is a message, not in the URL
    # The notice of the action (a job still waiting also shows a live "Updates every 5 s."
    # status beside it, until a worker has run it).
    notice = page.locator("p.notice[role=status]")
    assert notice.inner_text() == "The job was made available again."

    wait_state(failed.id, "completed")  # the worker's next round
    page.reload()
    assert page.get_by_role("heading", name=f"Job {failed.id} completed").is_visible()
    assert page.get_by_text("2 of 2").is_visible()  # a retry of a dead job gives one more
    shot(page, screenshots, "job-completed")

    page.get_by_role("link", name="Cron").click()
    page.wait_for_url("**/cron/")
    assert page.get_by_role("row", name="nightly-report").is_visible()
    shot(page, screenshots, "cron")

    phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
    phone.context.add_cookies(page.context.cookies())
    phone.goto(live_server.url + BASE)
    assert phone.get_by_role("heading", name="Queues").is_visible()
    shot(phone, screenshots, "queues-phone")
    phone.goto(f"{live_server.url}{BASE}jobs/{failed.id}/")
    shot(phone, screenshots, "job-phone")
