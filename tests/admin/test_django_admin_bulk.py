"""The Django admin's "all N matching": with Django's "Select all" the actions ask first on a
confirmation page with the count, then act on every job the changelist's filters match, in
batches through the facade, and say how many changed. Database stores only (the admin shows
their table)."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages

from tests.admin.support import configure_admin
from tests.sampleapp.jobs import Work
from tests.support.clients import logged_in, staff_client

pytestmark = pytest.mark.django_db(databases=["default"])
CHANGELIST = "/admin/anole_jobs/job/"
CONFIRM = "confirm_all_matching"


@pytest.fixture
def admin_client(env, users):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    configure_admin(env)
    return staff_client(users["staff"])


def _dead(env, n, tag):
    ids = [env.jobs.enqueue(Work(action="discard", tag=tag)).id for _ in range(n)]
    env.jobs.step()
    return ids


def _across(client, action, query="", **extra):
    data = {"action": action, "select_across": "1", "index": "0", "_selected_action": ["1"]}
    return client.post(CHANGELIST + query, {**data, **extra}, follow=True)


def test_all_matching_asks_first_with_the_count(env, admin_client):
    dead = _dead(env, 3, "x")
    env.jobs.enqueue(Work(), delay=60)
    page = _across(admin_client, "retry_jobs", "?state__exact=dead")
    html = page.content.decode()
    assert "Retry all 3 matching jobs?" in html
    assert f'name="{CONFIRM}" value="yes"' in html
    assert {env.jobs.get(i).state for i in dead} == {"dead"}  # nothing done yet


def test_confirmed_it_acts_on_every_match_in_batches(env, admin_client, monkeypatch):
    from anole_jobs import admin as admin_module

    monkeypatch.setattr(admin_module, "BULK_BATCH_MAX", 2)
    dead = _dead(env, 5, "x")
    waiting = env.jobs.enqueue(Work(), delay=60).id
    response = _across(admin_client, "retry_jobs", "?state__exact=dead", **{CONFIRM: "yes"})
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "5 of 5 matching jobs retried."
    ]
    assert {env.jobs.get(i).state for i in dead} == {"available"}
    assert env.jobs.get(waiting).state == "scheduled"


def test_cancel_and_delete_all_matching(env, admin_client):
    waiting = [env.jobs.enqueue(Work(), delay=60).id for _ in range(2)]
    dead = _dead(env, 1, "x")
    response = _across(admin_client, "cancel_jobs", "?kind=test.work", **{CONFIRM: "yes"})
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "2 of 3 matching jobs cancelled."
    ]
    response = _across(admin_client, "delete_jobs", "?state__exact=dead", **{CONFIRM: "yes"})
    assert env.jobs.get(dead[0]) is None
    assert all(env.jobs.get(i).state == "cancelled" for i in waiting)


def test_a_user_who_may_not_operate_cannot_act_across(env, users):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    configure_admin(env)
    dead = _dead(env, 1, "x")
    client = logged_in(users["plain"])
    response = _across(client, "delete_jobs", "?state__exact=dead", **{CONFIRM: "yes"})
    assert response.status_code in (302, 403) or "login" in response.request["PATH_INFO"]
    assert env.jobs.get(dead[0]) is not None
