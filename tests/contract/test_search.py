"""Search on every store: a kind prefix, the last error's text and an argument value, each
alone and with the exact filters, within an id window (`min_id`), newest first; and the
operations layer's search pages, which read a bounded window of ids per page."""

from __future__ import annotations

import pytest

from anole_jobs.errors import InvalidJob
from anole_jobs.operations import listing as listing_module
from anole_jobs.operations.listing import Listing, fetch_page, parse_listing
from anole_jobs.operations.problems import BadInput
from anole_jobs.stores.search import json_contains, last_error_text
from tests.sampleapp.jobs import Prioritized, Validated, Work


def _ids(records):
    return [r.id for r in records]


def _seed(env):
    """Jobs of three kinds, two of them failed once (errors kept), newest last."""
    a = env.jobs.enqueue(Work(action="fail", tag="alpha")).id
    b = env.jobs.enqueue(Work(action="ok", tag="beta")).id
    c = env.jobs.enqueue(Validated(count=7, label="Customer 7")).id
    d = env.jobs.enqueue(Prioritized(name="mail")).id
    e = env.jobs.enqueue(Work(action="explain_fail", tag="alpha")).id
    env.jobs.step()
    return a, b, c, d, e


def test_kind_prefix_matches_kinds_starting_with_it(env):
    a, b, c, d, e = _seed(env)
    assert _ids(env.jobs.list(kind_prefix="test.w")) == [e, b, a]
    assert _ids(env.jobs.list(kind_prefix="test.")) == [e, d, c, b, a]
    assert env.jobs.list(kind_prefix="test.workx") == []
    assert env.jobs.list(kind_prefix="TEST.") == []  # a prefix is exact, case and all


def test_error_matches_the_last_errors_type_and_message_in_any_case(env):
    a, _b, _c, _d, e = _seed(env)
    assert env.jobs.get(a).state == "retrying"
    assert _ids(env.jobs.list(error="valueerror")) == [a]
    assert _ids(env.jobs.list(error="FAILED ON ATTEMPT 1")) == [a]
    assert _ids(env.jobs.list(error="ValueError: failed")) == [a]  # "<type>: <message>"
    assert _ids(env.jobs.list(error="503 from")) == [e]
    assert _ids(env.jobs.list(error="error")) == [e, a]  # RuntimeError, ValueError
    assert env.jobs.list(error="no such text") == []
    assert env.jobs.list(error=":") == [] or all(r.errors for r in env.jobs.list(error=":"))


def test_error_reads_only_the_last_error(env):
    a, *_ = _seed(env)
    env.clock.advance(3600)
    env.jobs.step()  # the second attempt fails too
    assert env.jobs.get(a).attempt == 2
    assert _ids(env.jobs.list(error="attempt 2")) == [a]
    assert env.jobs.list(error="attempt 1") == []


def test_args_matches_jobs_whose_arguments_contain_the_object(env):
    a, b, c, _d, e = _seed(env)
    assert _ids(env.jobs.list(args={"tag": "alpha"})) == [e, a]
    assert _ids(env.jobs.list(args={"tag": "alpha", "action": "fail"})) == [a]
    assert _ids(env.jobs.list(args={"count": 7})) == [c]
    assert _ids(env.jobs.list(args={"count": 7.0})) == [c]  # numbers compare by value
    assert env.jobs.list(args={"count": "7"}) == []  # a string is not a number
    assert env.jobs.list(args={"tag": "Alpha"}) == []
    assert env.jobs.list(args={"missing": None}) == []
    assert b not in _ids(env.jobs.list(args={"tag": "alpha"}))


def test_search_terms_combine_with_the_exact_filters_and_each_other(env):
    a, _b, _c, _d, e = _seed(env)
    assert _ids(env.jobs.list(state="retrying", args={"tag": "alpha"})) == [e, a]
    assert _ids(env.jobs.list(state="completed", args={"tag": "alpha"})) == []
    assert _ids(env.jobs.list(kind="test.work", error="503")) == [e]
    assert _ids(env.jobs.list(queue="mail", kind_prefix="test.")) == [_d]
    assert _ids(env.jobs.list(kind_prefix="test.w", error="valueerror", args={"tag": "alpha"})) == [
        a
    ]


def test_a_search_pages_by_after_and_reads_only_its_id_window(env):
    ids = [r.id for r in env.jobs.enqueue_many([Work(tag="x") for _ in range(12)])]
    assert _ids(env.jobs.list(args={"tag": "x"}, limit=5)) == ids[::-1][:5]
    assert _ids(env.jobs.list(args={"tag": "x"}, limit=5, after=ids[7])) == ids[:7][::-1][:5]
    window = env.jobs.list(args={"tag": "x"}, after=ids[9], min_id=ids[4])
    assert _ids(window) == ids[4:9][::-1]
    assert _ids(env.jobs.list(kind_prefix="test.", min_id=ids[10])) == ids[10:][::-1]


def test_the_facade_refuses_search_terms_of_the_wrong_type(env):
    with pytest.raises(InvalidJob, match="kind_prefix"):
        env.jobs.list(kind_prefix="")
    with pytest.raises(InvalidJob, match="error"):
        env.jobs.list(error=3)
    with pytest.raises(InvalidJob, match="JSON object"):
        env.jobs.list(args=[1])
    with pytest.raises(InvalidJob, match="plain JSON"):
        env.jobs.list(args={"x": float("nan")})
    # Text no store can hold matches nothing (never a database error).
    env.jobs.enqueue(Work(tag="x"))
    assert env.jobs.list(error="a\x00b") == []
    assert env.jobs.list(args={"tag": "\x00"}) == []
    assert env.jobs.list(kind_prefix="\ud800") == []


def test_search_pages_are_bounded_and_say_what_they_searched(env, monkeypatch):
    monkeypatch.setattr(listing_module, "SEARCH_WINDOW", 4)
    monkeypatch.setattr(listing_module, "SEARCH_BUDGET", 8)
    ids = [r.id for r in env.jobs.enqueue_many([Work(tag="x") for _ in range(20)])]
    match = {ids[1], ids[2], ids[15]}
    for job_id in match:
        env.jobs.cancel(job_id)
    listing = parse_listing({"state": ["cancelled"], "kind_prefix": ["test.w"], "limit": ["2"]})
    first = fetch_page(listing)
    # The newest 8 ids hold one match: the page is not full, and says where to go on.
    assert _ids(first.records) == [ids[15]]
    # The window holds the newest 8 jobs (ids are sparse on a Redis Cluster: compare the jobs).
    low, high = first.searched
    assert (high, [i for i in ids if low <= i <= high]) == (ids[19], ids[12:])
    assert first.next_after == low
    pages = [first]
    while pages[-1].next_after is not None:
        pages.append(fetch_page(Listing(**{**vars(listing), "after": pages[-1].next_after})))
    assert [r.id for p in pages for r in p.records] == [ids[15], ids[2], ids[1]]
    assert pages[-1].searched[0] == 1 or pages[-1].next_after is None


def test_a_full_search_page_links_to_the_next_match(env):
    ids = [r.id for r in env.jobs.enqueue_many([Work(tag="x") for _ in range(5)])]
    page = fetch_page(parse_listing({"args": ['{"tag": "x"}'], "limit": ["2"]}))
    assert _ids(page.records) == [ids[4], ids[3]]
    assert page.next_after == ids[3]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"kind_prefix": [""]}, "kind_prefix"),
        ({"error": ["a\x00"]}, "error"),
        ({"args": ["{"]}, "args"),
        ({"args": ["[1]"]}, "args"),
        ({"args": ["{}"]}, "args"),
        ({"args": ['{"x": NaN}']}, "args"),
        ({"args": ["[" * 5000]}, "args"),
        ({"error": ["x" * 1001]}, "error"),
    ],
)
def test_bad_search_input_is_refused_naming_the_field(query, field):
    with pytest.raises(BadInput) as caught:
        parse_listing(query)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("actual", "wanted", "expected"),
    [
        ({"a": 1, "b": 2}, {"a": 1}, True),
        ({"a": {"b": [1, 2, {"c": 3}]}}, {"a": {"b": [{"c": 3}]}}, True),
        ({"a": [1, 2]}, {"a": [2, 1, 2]}, True),
        ({"a": [1, 2]}, {"a": [3]}, False),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": True}, {"a": 1}, False),
        ({"a": 1}, {"a": True}, False),
        ({"a": None}, {"a": None}, True),
        ({"a": "1"}, {"a": 1}, False),
        ({"a": {"b": 1}}, {"a": {}}, True),
        ({"a": 1}, {"a": {}}, False),
    ],
)
def test_json_contains_follows_jsonb_containment(actual, wanted, expected):
    assert json_contains(actual, wanted) is expected


def test_last_error_text():
    assert last_error_text(()) == ""
    assert last_error_text(({"type": "A", "message": "x"}, {"type": "B", "message": "y"})) == "B: y"


def _insert(env, args):
    from datetime import timedelta

    from anole_jobs.stores.base import NewJob

    now = env.clock()
    job = NewJob(
        kind="test.raw",
        queue="default",
        args=args,
        meta={},
        priority=0,
        max_attempts=1,
        state="scheduled",
        scheduled_at=now + timedelta(hours=1),
        created_at=now,
    )
    return env.store.insert([job])[0].id


def test_args_containment_reaches_into_objects_and_arrays_on_every_store(env):
    a = _insert(env, {"customer": {"id": 7, "tier": "gold"}, "tags": ["vip", "eu"], "ok": True})
    b = _insert(env, {"customer": {"id": 8}, "tags": ["eu"], "ok": False, "n": 1.5})
    assert _ids(env.jobs.list(args={"customer": {"id": 7}})) == [a]
    assert _ids(env.jobs.list(args={"tags": ["eu"]})) == [b, a]
    assert _ids(env.jobs.list(args={"tags": ["vip", "eu"], "ok": True})) == [a]
    assert _ids(env.jobs.list(args={"ok": False})) == [b]
    assert _ids(env.jobs.list(args={"n": 1.5})) == [b]
    assert env.jobs.list(args={"ok": 1}) == []  # a boolean is not a number
    assert env.jobs.list(args={"tags": "eu"}) == []  # an array does not contain a bare string
    assert _ids(env.jobs.list(args={"customer": {}})) == [b, a]
