"""The dashboard's search and bulk actions through Django's test client, on every store: the
search fields filter the jobs page, its current filters link to a confirmation page with the
count, the confirmation POSTs (CSRF-protected) and redirects back with a notice shown once,
and bad input is a 400 page naming the field."""

from __future__ import annotations

import json
import re
from urllib.parse import urlencode

import pytest
from django.test import Client

from tests.admin.support import configure_admin
from tests.sampleapp.jobs import Validated, Work
from tests.support.clients import logged_in, make_staff, staff_client

BASE = "/ops/jobs/dashboard/"
pytestmark = pytest.mark.django_db(databases=["default"])


@pytest.fixture
def staff(env):
    configure_admin(env)
    return staff_client()


def _dead(env, n, tag):
    ids = [env.jobs.enqueue(Work(action="discard", tag=tag)).id for _ in range(n)]
    env.jobs.step()
    return ids


def test_the_jobs_page_searches_and_links_to_the_bulk_actions(env, staff):
    refunds = _dead(env, 2, "refund")
    other = _dead(env, 1, "other")
    env.jobs.enqueue(Validated(count=3))
    query = {"state": "dead", "args": json.dumps({"tag": "refund"})}
    page = staff.get(BASE + "jobs/?" + urlencode(query)).content.decode()
    for job_id in refunds:
        assert f"Job {job_id}<" in page
    assert f"Job {other[0]}<" not in page
    # Every job was looked at (the ids start where the store's sequence is: not 1 on a
    # PostgreSQL database that earlier tests used). The page offers older jobs exactly when
    # its window of ids stopped above id 1 (a sequence past the search's budget).
    searched = re.search(r"Searched jobs (\d+) to (\d+)([.;])", page)
    assert searched is not None
    assert int(searched.group(1)) <= min(refunds) and int(searched.group(2)) >= max(refunds)
    assert searched.group(3) == ("." if int(searched.group(1)) <= 1 else ";")
    assert f'href="{BASE}bulk/retry?{urlencode(query)}"'.replace("&", "&amp;") in page
    page = staff.get(BASE + "jobs/?" + urlencode({"kind_prefix": "test.v"})).content.decode()
    assert "test.validated" in page and "test.work" not in page
    page = staff.get(BASE + "jobs/?" + urlencode({"error": "WORTH RETRYING"})).content.decode()
    assert all(f"Job {i}<" in page for i in [*refunds, *other])


def test_a_page_without_filters_offers_no_bulk_action(env, staff):
    assert "all matching" not in staff.get(BASE + "jobs/").content.decode()


def test_retry_all_matching_confirms_with_the_count_then_acts(env, staff):
    refunds = _dead(env, 3, "refund")
    other = _dead(env, 1, "other")
    query = {"state": "dead", "args": '{"tag": "refund"}'}
    confirm = staff.get(BASE + "bulk/retry?" + urlencode(query))
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "Retry all 3 matching jobs?" in html
    assert "Running jobs stay with their worker" in html
    assert {env.jobs.get(i).state for i in refunds} == {"dead"}  # nothing done yet
    response = staff.post(BASE + "bulk/retry", query)
    assert response.status_code == 302
    assert response["Location"] == BASE + "jobs/?" + urlencode(query)
    assert {env.jobs.get(i).state for i in refunds} == {"available"}
    assert env.jobs.get(other[0]).state == "dead"
    shown = staff.get(response["Location"]).content.decode()
    assert "3 of 3 matching jobs retried." in shown
    again = staff.get(response["Location"]).content.decode()
    assert "matching jobs retried." not in again  # a notice shows once


def test_delete_all_matching(env, staff):
    dead = _dead(env, 2, "x")
    html = staff.get(BASE + "bulk/delete?state=dead").content.decode()
    assert "Delete all 2 matching jobs?" in html and "cannot be undone" in html
    staff.post(BASE + "bulk/delete", {"state": "dead"})
    assert all(env.jobs.get(i) is None for i in dead)


def test_a_confirmation_with_no_match_offers_nothing_to_press(env, staff):
    html = staff.get(BASE + "bulk/cancel?kind=no.such").content.decode()
    assert "No job matches" in html and "<button" not in html.split("<main", 1)[-1]


def test_without_the_messages_framework_the_notice_rides_in_the_url(env, staff, settings):
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if "messages" not in m]
    _dead(env, 1, "x")
    response = staff.post(BASE + "bulk/retry", {"state": "dead"})
    assert response["Location"].endswith("?state=dead&notice=bulk_retried")
    assert (
        "The matching jobs were made available again."
        in staff.get(response["Location"]).content.decode()
    )


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("bulk/retry", 400, "at least one filter"),
        ("bulk/retry?args=%5B1%5D", 400, "args must be a JSON object"),
        ("bulk/purge?state=dead", 404, "no bulk action"),
        ("jobs/?args=%7Bnope", 400, "args must be a JSON object"),
    ],
)
def test_bad_input_is_a_page_that_says_why(env, staff, path, status, says):
    response = staff.get(BASE + path)
    assert response.status_code == status
    assert says in response.content.decode()


def test_the_bulk_action_needs_csrf_and_permission(env, staff, django_user_model):
    dead = _dead(env, 1, "x")
    strict = logged_in(make_staff("strict"), enforce_csrf_checks=True)
    assert strict.post(BASE + "bulk/delete", {"state": "dead"}).status_code == 403
    plain = logged_in(django_user_model.objects.create_user("plain"))
    assert plain.get(BASE + "bulk/delete?state=dead").status_code == 403
    assert plain.post(BASE + "bulk/delete", {"state": "dead"}).status_code == 403
    assert Client().post(BASE + "bulk/delete", {"state": "dead"}).status_code == 302
    assert env.jobs.get(dead[0]) is not None
