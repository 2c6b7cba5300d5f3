"""The settings and declarations of fair flow and sequences: a queue's `fairness` and a kind's
`sequence=` are refused with a clear error when malformed, and a fairness field no kind of
the queue has is a system-check error."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from anole_jobs import conf, kind
from anole_jobs.checks import check_settings
from anole_jobs.errors import InvalidJob
from anole_jobs.limits import parse_fairness


@kind("test.flow_settings.report", queue="flow-checked")
@dataclass
class Report:
    account: int = 0


@pytest.mark.parametrize(
    ("fairness", "message"),
    [
        ([], "non-empty list"),
        (["customer", "customer"], "twice"),
        (3, "field name"),
        ({"weights": {"a": 2}}, '"key"'),
        ({"key": "customer", "weight": {}}, '"key"'),
        ({"key": "customer", "weights": {"a": 0}}, "positive number"),
        ({"key": "customer", "weights": {"a": "2"}}, "positive number"),
        ({"key": "customer", "weights": ["a"]}, "dict"),
    ],
)
def test_bad_fairness_is_a_system_check_error(fairness, message):
    problems = conf.problems({"QUEUES": {"default": {"fairness": fairness}}})
    assert [p.id for p in problems] == ["anole_jobs.E016"]
    assert message in problems[0].message and "fairness" in problems[0].message


def test_fairness_forms():
    assert parse_fairness("customer").fields == ("customer",)
    assert parse_fairness(["a", "b"]).fields == ("a", "b")
    fair = parse_fairness({"key": "customer", "weights": {"gold": 3, 7: 2.5}})
    assert fair.weight(fair.key({"customer": "gold"})) == 3.0
    assert fair.weight(fair.key({"customer": 7})) == 2.5
    assert fair.weight(fair.key({"customer": "other"})) == 1.0
    assert fair.weight(fair.key({})) == 1.0  # a missing field is the value null


def test_a_queue_with_fairness_is_read_from_the_settings(settings):
    settings.ANOLE_JOBS = {"STORE": "memory", "QUEUES": {"default": {"fairness": "customer"}}}
    limits = conf.read_settings().queues["default"].limits
    assert limits.fairness is not None and limits.flow and not limits.active


@pytest.mark.parametrize(
    ("field", "errors"),
    [("account", []), ("acount", ["anole_jobs.E030"])],
)
def test_a_fairness_field_no_kind_of_the_queue_has_is_a_check_error(settings, field, errors):
    settings.ANOLE_JOBS = {
        "STORE": "memory",
        "QUEUES": {"default": {}, "flow-checked": {"fairness": field}},
    }
    found = [m for m in check_settings() if m.id == "anole_jobs.E030"]
    assert [m.id for m in found] == errors
    if found:
        assert "'flow-checked'" in found[0].msg and "no turns" in found[0].msg


@pytest.mark.parametrize(
    ("sequence", "message"),
    [
        ([], "non-empty list"),
        (["a", "a"], "distinct"),
        (5, "field name"),
        ("nope", "no field"),
    ],
)
def test_a_bad_sequence_is_refused_where_the_kind_is_declared(sequence, message):
    with pytest.raises(InvalidJob, match=message):

        @kind("test.flow.bad_sequence", sequence=sequence)
        @dataclass
        class Bad:
            a: int = 0


def test_a_sequence_of_several_fields():
    from anole_jobs.kinds import sequence_key, spec_of

    @kind("test.flow.two_fields", sequence=["a", "b"])
    @dataclass
    class Two:
        a: int = 0
        b: str = ""

    spec = spec_of(Two)
    assert spec.sequence == ("a", "b")
    assert sequence_key(spec, {"a": 1, "b": "x"}) == 'test.flow.two_fields:[1, "x"]'
