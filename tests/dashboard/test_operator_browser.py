"""Worker controls and the Audit page in Chromium, at 1,280 px and at a phone's 390 px: a
worker with a 10,000-character host name keeps the workers page within the screen, its Quiet
button asks first and then shows who asked; the Audit page lists that action, filtered, within
the screen. Playwright driving the system's Chromium against pytest-django's live server, the
SQLite store moved by hand.

The ``browser`` tier, as tests/dashboard/test_browser.py: skipped with the reason when
Chromium or Playwright is missing, unless ``ANOLE_TEST_REQUIRE`` names ``chromium``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from anole_jobs.stores.workers import QueueSlots, WorkerRecord
from tests.dashboard.test_live_browser import BOARD, board, logged_in
from tests.dashboard.test_round_two_browser import context_at

__all__ = ["board", "logged_in"]  # fixtures this module uses

pytestmark = [
    pytest.mark.browser,
    pytest.mark.e2e,
    pytest.mark.needs("chromium"),
    pytest.mark.django_db(databases=["default"], transaction=True),
]
WAIT_MS = 15_000
WORD = "h" * 10_000


def wide(page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


@pytest.mark.parametrize("width", [1280, 390])
def test_quiet_a_worker_then_find_it_in_the_audit_log(
    board, browser, logged_in, live_server, width
):
    now = board.service.clock()

    def alive(host: str, pid: int) -> WorkerRecord:
        return WorkerRecord(
            id=f"{host}:{pid}:abc123",
            host=host,
            pid=pid,
            version="1.0",
            queues=(QueueSlots(name="default", busy=0, total=4),),
            started_at=now,
            last_seen=now,
            expires_at=now + timedelta(hours=1),
        )

    # The long one stretches the table; the short one is quieted (a 10,000-character path
    # is more than the live server's static-file check takes).
    board.service.store.record_worker(alive(WORD, 77))
    record = alive("box-2", 78)
    board.service.store.record_worker(record)
    board.record_audit(actor=WORD, action="pause", target=f"queue {WORD}", surface="cli")
    context = context_at(browser, logged_in, width)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(live_server.url + BOARD + "workers/")
    button = page.get_by_role("button", name="Quiet worker box-2 pid 78")
    button.wait_for(timeout=WAIT_MS)
    assert wide(page) <= width + 1
    box = button.bounding_box()
    assert box is not None and box["x"] + box["width"] <= width
    button.click()
    page.get_by_text("Within a second it claims nothing more").wait_for(timeout=WAIT_MS)
    assert wide(page) <= width + 1
    page.get_by_role("button", name="Quiet the worker").click()
    page.get_by_text("The worker was asked to quiet").wait_for(timeout=WAIT_MS)
    page.get_by_text("asked by ops (dashboard)").first.wait_for(timeout=WAIT_MS)
    assert wide(page) <= width + 1
    assert board.service.store.worker_control(record.id).action == "quiet"
    page.goto(live_server.url + BOARD + "audit/?action=worker_quiet")
    page.get_by_role("cell", name="worker_quiet").wait_for(timeout=WAIT_MS)
    assert wide(page) <= width + 1
    assert page.get_by_role("cell", name="pause").count() == 0
    page.goto(live_server.url + BOARD + "audit/")
    page.get_by_role("cell", name="pause").wait_for(timeout=WAIT_MS)
    assert wide(page) <= width + 1
    context.close()
    assert errors == []
