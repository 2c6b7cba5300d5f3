"""``manage.py jobs`` search options and bulk actions on every store: filters instead of ids,
the count and the confirmation (``--yes``; refused with no terminal to ask on), the outcome
line and ``--json`` (what ``POST bulk/<action>`` answers), and clear errors."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.admin.nofivexx_support import run_jobs_command
from tests.admin.support import configure_admin
from tests.sampleapp.jobs import Work

pytestmark = pytest.mark.django_db(databases=["default"])


class Terminal(StringIO):
    """A stdin that is a terminal, with the answers typed in advance."""

    def isatty(self) -> bool:
        return True


def cli(*args: str, stdin: StringIO | None = None) -> str:
    out = StringIO()
    call_command("jobs", *args, stdout=out, stderr=StringIO(), stdin=stdin or StringIO())
    return out.getvalue()


def _dead(env, n, tag):
    ids = [env.jobs.enqueue(Work(action="discard", tag=tag)).id for _ in range(n)]
    env.jobs.step()
    return ids


@pytest.fixture(autouse=True)
def _admin(env):
    configure_admin(env)


def test_retry_with_filters_asks_then_acts_on_every_match(env):
    refunds = _dead(env, 3, "refund")
    other = _dead(env, 1, "other")
    out = cli("retry", "--state", "dead", "--args", '{"tag": "refund"}', stdin=Terminal("y\n"))
    assert 'retry 3 jobs matching --state dead --args {"tag": "refund"}? [y/N]' in out
    assert out.rstrip().endswith("3 of 3 matching jobs retried")
    assert {env.jobs.get(i).state for i in refunds} == {"available"}
    assert env.jobs.get(other[0]).state == "dead"


def test_an_answer_other_than_yes_changes_nothing(env):
    dead = _dead(env, 2, "x")
    with pytest.raises(CommandError, match="not confirmed") as caught:
        cli("delete", "--state", "dead", stdin=Terminal("n\n"))
    assert caught.value.returncode == 1
    assert all(env.jobs.get(i) is not None for i in dead)


def test_without_a_terminal_it_refuses_unless_yes(env):
    dead = _dead(env, 2, "x")
    with pytest.raises(CommandError, match="pass --yes") as caught:
        cli("cancel", "--kind", "test.work")
    assert caught.value.returncode == 1
    assert cli("delete", "--kind", "test.work", "--yes").strip() == "2 of 2 matching jobs deleted"
    assert all(env.jobs.get(i) is None for i in dead)


def test_cancel_says_how_many_it_left_as_they_were(env):
    _dead(env, 1, "x")
    env.jobs.enqueue(Work(), delay=60)
    out = cli("cancel", "--kind-prefix", "test.", "--yes")
    assert out.startswith("1 of 2 matching jobs cancelled (1 left as they were: finished")


def test_no_match_says_so(env):
    assert cli("retry", "--error", "nothing like it", "--yes").strip() == (
        "no jobs match --error nothing like it: nothing retried"
    )


def test_json_prints_what_the_route_answers(env):
    _dead(env, 2, "x")
    out = cli("retry", "--state", "dead", "--yes", "--json")
    assert json.loads(out) == {
        "action": "retry",
        "matched": 2,
        "done": 2,
        "filters": {"state": "dead"},
    }


def test_list_searches_and_says_what_it_searched(env):
    ids = _dead(env, 2, "refund")
    out = cli("list", "--error", "DISCARDED")
    assert str(ids[0]) in out and str(ids[1]) in out
    assert "searched ids 1 to" in out
    body = json.loads(cli("list", "--args", '{"tag": "refund"}', "--json"))
    assert [j["id"] for j in body["jobs"]] == ids[::-1]


@pytest.mark.parametrize(
    ("args", "says", "code"),
    [
        (("retry",), "give job ids, or filters", 2),
        (("retry", "1", "--state", "dead"), "ids or filters, not both", 2),
    ],
)
def test_unusable_requests_exit_with_a_clear_error(env, args, says, code):
    with pytest.raises(CommandError, match=says) as caught:
        cli(*args, "--yes")
    assert caught.value.returncode == code


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("retry", "--yes", "--queue", ""), "--queue must not be empty"),
        (("cancel", "--yes", "--queue", "q" * 201), "--queue must be at most 200 characters"),
        (("delete", "--yes", "--kind", "a\tb"), "--kind 'a\\tb' contains a control character"),
        (("list", "--queue", "x" * 10_000), "--queue must be at most 200 characters"),
    ],
)
def test_a_name_no_store_holds_is_a_usage_error(env, args, says):
    ran = run_jobs_command(*args)
    assert ran.code == 2 and ran.crashed is None, str(ran)
    assert says in ran.err.splitlines()[-1], str(ran)


@pytest.mark.parametrize(
    "args",
    [("list", "--args", "[1]"), ("list", "--kind-prefix", ""), ("retry", "--args", "{bad")],
)
def test_bad_search_options_are_usage_errors(env, args, capsys):
    with pytest.raises(CommandError, match="Error: argument --"):
        cli(*args)
