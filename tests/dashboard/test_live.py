"""The dashboard's live pages and its small readings, through Django's test client on every
store: the partial a refresh fetches (the table only, filters kept, a store outage a 503 the
script can tell apart), the script itself, notices shown once (messages framework) or carried
in the URL without it, JSON arguments, one time format, and the display kind of a
``django.tasks`` job."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from anole_jobs.dashboard import views
from anole_jobs.dashboard.tags import moment, relative
from anole_jobs.errors import StoreUnavailable
from tests.admin.support import MOUNT, configure_admin, make_users
from tests.sampleapp import tasks
from tests.sampleapp.jobs import Prioritized, Work
from tests.support.clients import logged_in

pytestmark = pytest.mark.django_db(databases=["default"])
BOARD = MOUNT + "dashboard/"
PARTIAL = {"partial": "1"}


@pytest.fixture
def users():
    return make_users()


@pytest.fixture
def staff(env, users) -> Client:
    configure_admin(env)
    return logged_in(users["staff"])


def unmasked(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


# -- the partial a live page fetches ------------------------------------------------------------


def test_the_queue_pages_partial_is_its_table_only(env, staff):
    env.jobs.enqueue(Work())
    page = staff.get(BOARD)
    assert f'<div id="live" data-live="{views.REFRESH_SECONDS}">' in page.text
    assert f'<script src="{BOARD}live.js" defer></script>' in page.text
    assert "X-Anole-Partial" not in page

    partial = staff.get(BOARD, PARTIAL)
    assert partial.status_code == 200 and partial["X-Anole-Partial"] == "1"
    assert partial["Cache-Control"] == "no-store"
    html = partial.text
    assert "<html" not in html and "<h1>" not in html and "<header>" not in html
    assert 'aria-label="1 available jobs in default"' in html
    assert 'name="csrfmiddlewaretoken"' in html  # its pause buttons still work
    # The page's region and the partial hold the same table (each render masks the CSRF
    # token anew).
    assert unmasked(html).strip() in unmasked(page.text)


def test_the_job_lists_partial_keeps_the_filters_and_the_page(env, staff):
    works = [env.jobs.enqueue(Work(tag=str(n))).id for n in range(3)]
    other = env.jobs.enqueue(Prioritized(name="p")).id
    html = staff.get(BOARD + "jobs/", {"kind": "test.work", "limit": "2", **PARTIAL}).text
    assert "<h1>" not in html and '<form class="filters"' not in html
    assert f"Job {works[2]}," in html and f"Job {works[1]}," in html
    assert f"Job {works[0]}," not in html and f"Job {other}," not in html
    # The pager's links keep the filters, and never carry `partial`.
    assert f'href="?kind=test.work&amp;limit=2&amp;after={works[1]}"' in html
    assert "partial" not in html
    older = staff.get(
        BOARD + "jobs/", {"kind": "test.work", "limit": "2", "after": works[1], **PARTIAL}
    ).text
    assert f"Job {works[0]}," in older and f"Job {works[1]}," not in older


def test_a_bad_filter_page_is_not_live_and_its_partial_is_a_400(env, staff):
    page = staff.get(BOARD + "jobs/", {"state": "lost"})
    assert page.status_code == 400 and "data-live" not in page.text
    partial = staff.get(BOARD + "jobs/", {"state": "lost", **PARTIAL})
    assert partial.status_code == 400 and "X-Anole-Partial" not in partial


def test_a_refresh_while_the_store_is_down_is_a_503_without_the_partial_header(
    env, staff, monkeypatch
):
    def broken(*args, **kwargs):
        raise StoreUnavailable("connection refused")

    for method in ("counts", "list", "paused_queues"):
        monkeypatch.setattr(env.store, method, broken)
    for path in ("", "jobs/"):
        response = staff.get(BOARD + path, PARTIAL)
        assert response.status_code == 503, path
        assert response["Retry-After"] == "5" and "X-Anole-Partial" not in response


def test_an_anonymous_refresh_is_sent_to_log_in_not_given_a_table(env, client):
    configure_admin(env)
    response = client.get(BOARD, PARTIAL)
    assert response.status_code == 302 and "X-Anole-Partial" not in response


def test_the_script_is_served_by_the_dashboard(env, client):
    response = client.get(BOARD + "live.js")  # static code: no login needed, as admin assets
    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    script = response.content.decode()
    for part in (
        "document.visibilityState",  # a hidden tab stops asking
        "visibilitychange",
        'set("partial", "1")',
        "X-Anole-Partial",
        "history.replaceState",  # a notice in the URL shows once
        "data-confirm",
    ):
        assert part in script, part
    assert client.post(BOARD + "live.js").status_code == 405


def test_no_page_holds_an_inline_script_or_handler(env, staff):
    job = env.jobs.enqueue(Work()).id
    for path in ("", "jobs/", f"jobs/{job}/", "cron/"):
        html = staff.get(BOARD + path).text
        assert "<script>" not in html and "onclick" not in html, path
    # Delete asks first without a script: its button opens a confirmation page.
    assert (
        f'<form method="get" action="{BOARD}jobs/{job}/delete">'
        in staff.get(f"{BOARD}jobs/{job}/").text
    )


# -- notices ------------------------------------------------------------------------------------


def test_a_notice_shows_once_through_the_messages_framework(env, staff):
    job = env.jobs.enqueue(Work()).id
    response = staff.post(f"{BOARD}queues/default/pause")
    assert response["Location"] == BOARD
    first = staff.get(BOARD).text
    assert '<p class="notice" role="status">The queue is paused' in first
    assert "The queue is paused" not in staff.get(BOARD).text  # a reload shows it no more
    cancel = staff.post(f"{BOARD}jobs/{job}/cancel")
    assert cancel["Location"] == f"{BOARD}jobs/{job}/"
    assert "The job was cancelled." in staff.get(cancel["Location"]).text


def test_without_the_messages_middleware_the_notice_rides_in_the_url(env, staff, settings):
    settings.MIDDLEWARE = [
        name
        for name in settings.MIDDLEWARE
        if name != "django.contrib.messages.middleware.MessageMiddleware"
    ]
    job = env.jobs.enqueue(Work()).id
    response = staff.post(f"{BOARD}jobs/{job}/cancel")
    assert response["Location"] == f"{BOARD}jobs/{job}/?notice=cancelled"
    assert "The job was cancelled." in staff.get(response["Location"]).text
    assert "The job was cancelled." not in staff.get(f"{BOARD}jobs/{job}/").text
    # An unknown code shows nothing (the page never echoes the URL's text).
    assert (
        "<script"
        not in staff.get(f"{BOARD}jobs/{job}/", {"notice": "<script>"})
        .text.split("</header>")[1]
        .split("<script src")[0]
    )


# -- what the pages show ------------------------------------------------------------------------


def test_arguments_meta_and_error_data_are_json(env, staff):
    job = env.jobs.enqueue(Work(tag="ünïcode"), meta={"team": "billing", "n": [1, None]}).id
    html = staff.get(f"{BOARD}jobs/{job}/").text
    args = html.split("<h2>Arguments</h2>")[1].split("</pre>")[0]
    assert "&quot;tag&quot;: &quot;ünïcode&quot;" in args and "&#x27;" not in args
    meta = html.split("<h2>Meta</h2>")[1].split("</pre>")[0]
    assert "&quot;n&quot;: [\n    1,\n    null\n  ]" in meta and "None" not in meta


def test_every_time_reads_one_way(env, staff):
    env.clock.set(datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC))
    job = env.jobs.enqueue(Work(), delay=90).id
    expected = (
        '<time datetime="2030-01-01T12:01:30Z" title="in 1 min">2030-01-01 12:01:30 UTC</time>'
    )
    assert expected in staff.get(f"{BOARD}jobs/{job}/").text
    assert expected in staff.get(BOARD + "jobs/").text
    now = '<time datetime="2030-01-01T12:00:00Z" title="just now">2030-01-01 12:00:00 UTC</time>'
    assert now in staff.get(BOARD).text
    cron = staff.get(BOARD + "cron/").text  # next run of "0 3 * * *"
    assert '<time datetime="2030-01-02T03:00:00Z" title="in 15 h">' in cron


def test_relative_times_and_stored_text():
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert relative(now - timedelta(seconds=42), now) == "42 s ago"
    assert relative(now - timedelta(minutes=3, seconds=59), now) == "3 min ago"
    assert relative(now + timedelta(hours=2), now) == "in 2 h"
    assert relative(now - timedelta(days=9), now) == "9 d ago"
    assert relative(now, now) == "just now"
    assert moment("2030-01-01T11:00:00+00:00", now) == (
        '<time datetime="2030-01-01T11:00:00Z" title="1 h ago">2030-01-01 11:00:00 UTC</time>'
    )
    assert moment("not a time", now) == "not a time"
    assert moment(None, now) == ""


def test_a_django_task_job_shows_its_function(env, staff):
    result = tasks.add.enqueue(1, 2)
    job = int(result.id)
    shown = "django.tasks: tests.sampleapp.tasks.add"
    assert f"<dd>{shown}</dd>" in staff.get(f"{BOARD}jobs/{job}/").text
    listed = staff.get(BOARD + "jobs/", {"kind": "django.tasks"}).text  # the filter still works
    assert f'<td data-label="Kind">{shown}</td>' in listed
    assert f"Job {job}, {shown}, available" in listed
    assert staff.get(BOARD + "jobs/", {"kind": shown}).text.count('data-label="Kind"') == 0
