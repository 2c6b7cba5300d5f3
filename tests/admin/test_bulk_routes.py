"""The JSON routes of search and bulk actions on every store: ``GET jobs`` with search
terms, ``GET bulk`` (the count a confirmation shows) and ``POST bulk/<action>`` (one request,
the count done), and their clear 400s."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client

from tests.admin.support import MOUNT
from tests.sampleapp.jobs import Validated, Work

pytestmark = pytest.mark.django_db(databases=["default"])


def _dead(env: Any, n: int, tag: str) -> list[int]:
    ids = [env.jobs.enqueue(Work(action="discard", tag=tag)).id for _ in range(n)]
    env.jobs.step()
    return ids


def _get(client: Client, path: str, **query: str) -> Any:
    return client.get(MOUNT + path + ("?" + urlencode(query) if query else ""))


def _post(client: Client, path: str, **query: str) -> Any:
    return client.post(MOUNT + path + ("?" + urlencode(query) if query else ""))


def test_jobs_are_searched_by_argument_error_and_kind_prefix(env, staff):
    refunds = _dead(env, 2, "refund")
    env.jobs.enqueue(Validated(count=7))
    body = _get(staff, "jobs", args=json.dumps({"tag": "refund"})).json()
    assert [j["id"] for j in body["jobs"]] == refunds[::-1]
    assert body["next_after"] is None
    assert body["searched"]["from"] == 1
    body = _get(staff, "jobs", error="discarded: NOT WORTH").json()
    assert [j["id"] for j in body["jobs"]] == refunds[::-1]
    body = _get(staff, "jobs", kind_prefix="test.v").json()
    assert [j["kind"] for j in body["jobs"]] == ["test.validated"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"args": "{not json"}, "args"),
        ({"args": "[1, 2]"}, "args"),
        ({"kind_prefix": ""}, "kind_prefix"),
        ({"error": "x" * 1001}, "error"),
    ],
)
def test_bad_search_input_is_a_400_naming_it(env, staff, query, field):
    response = _get(staff, "jobs", **query)
    assert response.status_code == 400
    assert response.json()["error"] == "bad_filter"
    assert field in response.json()["message"]


def test_bulk_preview_counts_what_matches(env, staff):
    _dead(env, 3, "refund")
    _dead(env, 1, "other")
    body = _get(staff, "bulk", state="dead", args='{"tag": "refund"}').json()
    assert body == {
        "count": 3,
        "exact": True,
        "filters": {"state": "dead", "args": '{"tag": "refund"}'},
    }
    assert _get(staff, "bulk", state="dead").json()["count"] == 4


def test_bulk_retry_acts_on_every_match_in_one_request(env, staff):
    refunds = _dead(env, 3, "refund")
    other = _dead(env, 1, "other")
    response = _post(staff, "bulk/retry", state="dead", args='{"tag": "refund"}')
    assert response.status_code == 200
    assert response.json() == {
        "action": "retry",
        "matched": 3,
        "done": 3,
        "filters": {"state": "dead", "args": '{"tag": "refund"}'},
    }
    assert {env.jobs.get(i).state for i in refunds} == {"available"}
    assert env.jobs.get(other[0]).state == "dead"


def test_bulk_cancel_and_delete(env, staff):
    waiting = [env.jobs.enqueue(Work(tag="w"), delay=60).id for _ in range(2)]
    dead = _dead(env, 1, "d")
    body = _post(staff, "bulk/cancel", kind="test.work").json()
    assert (body["matched"], body["done"]) == (3, 2)  # the dead job stays dead
    assert {env.jobs.get(i).state for i in waiting} == {"cancelled"}
    body = _post(staff, "bulk/delete", state="cancelled").json()
    assert body["done"] == 2
    assert env.jobs.get(waiting[0]) is None and env.jobs.get(dead[0]) is not None


@pytest.mark.parametrize(
    ("path", "query", "code", "says"),
    [
        ("bulk/retry", {}, "bad_filter", "at least one filter"),
        ("bulk/purge", {"state": "dead"}, "bad_action", "unknown action"),
        ("bulk/retry", {"state": "dead", "limit": "5"}, "bad_filter", "no limit"),
        ("bulk/retry", {"state": "gone"}, "bad_filter", "unknown state"),
        ("bulk/delete", {"args": "7"}, "bad_filter", "JSON object"),
    ],
)
def test_bad_bulk_requests_are_400s_that_say_why(env, staff, path, query, code, says):
    env.jobs.enqueue(Work())
    response = _post(staff, path, **query)
    assert response.status_code == 400
    assert response.json()["error"] == code
    assert says in response.json()["message"]
    assert env.jobs.counts()  # nothing was touched


def test_bulk_preview_without_a_filter_is_a_400(env, staff):
    response = _get(staff, "bulk")
    assert response.status_code == 400
    assert "at least one filter" in response.json()["message"]
