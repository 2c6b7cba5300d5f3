"""The query and action layer under every surface (`anole_jobs.operations`): ids and filters
from any text, keyset pages that say "more" only when there is more (on every store), actions
that say whether they changed anything (on every store), the error map and the permission."""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError, ProgrammingError
from django.test import RequestFactory

from anole_jobs import NewQueue
from anole_jobs.core import LIST_LIMIT_MAX, MAX_JOB_ID
from anole_jobs.errors import InvalidJob, StoreUnavailable
from anole_jobs.operations import actions
from anole_jobs.operations.ids import parse_job_id
from anole_jobs.operations.listing import (
    Listing,
    each_page,
    fetch_page,
    parse_listing,
)
from anole_jobs.operations.permissions import Access, access, setting_problem
from anole_jobs.operations.problems import BadInput, NotFound, problem_of
from tests.admin.support import CRON_ENTRY
from tests.sampleapp.jobs import Work

pytestmark = pytest.mark.django_db(databases=["default"])

HOSTILE_IDS = [
    "²",
    "-1",
    "0",
    "99999999999999999999",
    str(MAX_JOB_ID + 1),
    "1e3",
    " 7",
    "7 ",
    "+7",
    "",
    "0x10",
    "1.0",
    "٣",  # an Arabic-Indic digit: a digit to str.isdigit, not an id
    "7\n",
    "\x00",
    "9" * 5000,
]


# -- ids ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", HOSTILE_IDS)
def test_text_that_is_not_an_id_names_no_job(text):
    with pytest.raises(NotFound, match="no job with id"):
        parse_job_id(text)


@pytest.mark.parametrize(("text", "value"), [("1", 1), ("42", 42), (str(MAX_JOB_ID), MAX_JOB_ID)])
def test_ids_from_1_to_the_largest_a_store_holds(text, value):
    assert parse_job_id(text) == value


# -- listing filters ---------------------------------------------------------------------------


def test_a_listing_is_one_frozen_value_with_defaults():
    listing = parse_listing({"state": ["dead"], "queue": ["mail"], "after": ["9"]})
    assert listing == Listing(state="dead", queue="mail", limit=100, after=9)
    with pytest.raises(AttributeError):
        listing.limit = 5  # type: ignore[misc]
    assert listing.filters() == {"state": "dead", "queue": "mail"}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"state": ["finished"]}, "state"),
        ({"state": ["dead", "completed"]}, "state"),
        ({"queue": [""]}, "queue"),
        ({"kind": [""]}, "kind"),
        ({"workflow": [""]}, "workflow"),
        ({"workflow": ["x" * 101]}, "workflow"),
        ({"stat": ["dead"]}, "stat"),
        *[({"limit": [text]}, "limit") for text in ("0", "-1", "1e3", "²", " 7", "", "ten")],
        *[({"after": [text]}, "after") for text in HOSTILE_IDS],
    ],
)
def test_bad_filters_raise_one_error_naming_the_field(query, field):
    with pytest.raises(BadInput) as raised:
        parse_listing(query)
    assert raised.value.field == field
    assert raised.value.status == 400 and raised.value.code == "bad_filter"
    assert field in raised.value.message or "unknown" in raised.value.message


def test_a_large_limit_reads_as_the_cap():
    for text in ("1000", "5000", "9" * 5000):
        assert parse_listing({"limit": [text]}).limit == LIST_LIMIT_MAX


def test_a_form_sends_blank_fields_and_page_parameters():
    query = {"state": [""], "queue": ["mail"], "kind": [""], "after": [""], "notice": ["x"]}
    listing = parse_listing(query, default_limit=50, blank_is_absent=True, ignore=("notice",))
    assert listing == Listing(queue="mail", limit=50)
    with pytest.raises(BadInput):
        parse_listing(query)  # the JSON routes take blank values at their word


# -- pages, on every store ---------------------------------------------------------------------


def test_an_exactly_full_page_is_the_last(env):
    ids = [e.id for e in env.jobs.enqueue_many([Work(tag=str(n)) for n in range(4)])]
    first = fetch_page(Listing(limit=2))
    assert [r.id for r in first.records] == [ids[3], ids[2]] and first.next_after == ids[2]
    second = fetch_page(Listing(limit=2, after=first.next_after))
    assert [r.id for r in second.records] == [ids[1], ids[0]]
    assert second.next_after is None and not second.more
    whole = fetch_page(Listing(limit=4))
    assert len(whole.records) == 4 and whole.next_after is None
    assert fetch_page(Listing(limit=2, after=ids[0])).records == []
    assert [len(p.records) for p in each_page(Listing(limit=3))] == [3, 1]
    assert [len(p.records) for p in each_page(Listing(limit=2))] == [2, 2]


def test_a_page_of_the_stores_cap_still_knows_whether_more_follow(env):
    ids = [e.id for e in env.jobs.enqueue_many([Work() for _ in range(LIST_LIMIT_MAX + 1)])]
    page = fetch_page(Listing(limit=LIST_LIMIT_MAX))
    assert len(page.records) == LIST_LIMIT_MAX and page.next_after == ids[1]
    env.jobs.delete(ids[0])
    page = fetch_page(Listing(limit=LIST_LIMIT_MAX))
    assert len(page.records) == LIST_LIMIT_MAX and page.next_after is None


# -- actions, on every store -------------------------------------------------------------------


def test_job_actions_say_whether_they_changed_the_job(env):
    job = env.jobs.enqueue(Work()).id
    first = actions.cancel(job)
    assert first.changed and first.record.state == "cancelled"
    again = actions.cancel(job)
    assert not again.changed and again.record.state == "cancelled"
    retried = actions.retry(job)
    assert retried.changed and retried.record.state == "available"
    assert not actions.retry(job).changed  # it was available already
    env.jobs.step()
    assert env.jobs.get(job).state == "completed"
    finished = actions.cancel(job)
    assert not finished.changed and finished.record.state == "completed"
    assert actions.delete(job).changed
    for act in (actions.get, actions.retry, actions.cancel, actions.delete):
        with pytest.raises(NotFound, match=f"no job with id {job}"):
            act(job)


def test_queue_actions_say_whether_they_changed_the_queue(env):
    paused = actions.pause("mail")
    assert paused.changed and paused.record.paused
    assert not actions.pause("mail").changed
    assert actions.resume("mail").changed
    assert not actions.resume("mail").changed


def test_a_queue_nobody_knows_is_refused_with_did_you_mean(env):
    with pytest.raises(NotFound) as raised:
        actions.pause("mial", how_to_create="pass --create")
    message = raised.value.message
    assert "no queue named 'mial'" in message and "did you mean 'mail'?" in message
    assert "pass --create" in message and raised.value.code == "unknown_queue"
    with pytest.raises(NotFound, match="did you mean 'default'"):
        actions.resume("defualt")
    with pytest.raises(NotFound) as unlike:
        actions.pause("zzzzzz")
    assert "did you mean" not in unlike.value.message
    assert [q.name for q in env.jobs.queues()] == ["default", "mail"]  # nothing created
    created = actions.pause("reports/eu", create=True)
    assert created.changed and created.record.name == "reports/eu"
    assert actions.resume("reports/eu").changed  # known now: by its pause
    env.jobs.enqueue(Work(), queue=NewQueue("bulk"))
    assert actions.pause("bulk").changed  # known by its jobs


def test_trigger_says_whether_it_enqueued(env):
    env.configure(CRON=[CRON_ENTRY])
    outcome = actions.trigger("nightly")
    assert outcome.changed and env.jobs.get(outcome.record.id) is not None
    with pytest.raises(NotFound, match="no cron entry named 'nope'"):
        actions.trigger("nope")


# -- the error map -----------------------------------------------------------------------------


def test_every_failure_maps_to_one_problem():
    bad = problem_of(BadInput("limit", "limit must be a whole number"))
    assert (bad.status, bad.code, bad.headers) == (400, "bad_request", {})
    missing = problem_of(NotFound("no job with id 3"))
    assert (missing.status, missing.code, missing.message) == (404, "not_found", "no job with id 3")
    assert problem_of(InvalidJob("queue names cannot hold NUL")).status == 400
    for error in (StoreUnavailable("down"), OperationalError("gone")):
        outage = problem_of(error)
        assert outage.status == 503 and outage.headers == {"Retry-After": "5"}
        assert outage.code == "store_unavailable" and "did not answer" in outage.message
    table = problem_of(ProgrammingError("no such table: anole_jobs_job"))
    assert table.status == 503 and "run `manage.py migrate`" in table.message
    assert problem_of(ProgrammingError("syntax error")) is None  # a bug: not hidden
    assert problem_of(KeyError("x")) is None


def test_a_driver_error_over_several_lines_is_one_line(caplog):
    """psycopg's connection error spans lines; the message and the log line do not."""
    error = OperationalError(
        'connection failed: connection to server at "127.0.0.1", port 1 failed:\n'
        "\tConnection refused\n\tIs the server running on that host?"
    )
    with caplog.at_level(logging.WARNING, logger="anole_jobs.admin"):
        outage = problem_of(error)
    assert outage is not None and "\n" not in outage.message and "\t" not in outage.message
    assert "failed: Connection refused Is the server" in outage.message
    assert [r.getMessage().count("\n") for r in caplog.records] == [0]
    caplog.clear()
    assert problem_of(error, log=False) is not None
    assert caplog.records == []


# -- permission --------------------------------------------------------------------------------


def raising_permission(request):
    raise RuntimeError("the permission service is down")


def test_a_permission_that_raises_refuses_and_logs(settings, caplog, django_user_model):
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "ADMIN_PERMISSION": "tests.admin.test_operations.raising_permission",
    }
    request = RequestFactory().get("/")
    from django.contrib.auth.models import AnonymousUser

    request.user = AnonymousUser()
    with caplog.at_level(logging.ERROR, logger="anole_jobs.admin"):
        assert access(request) is Access.ANONYMOUS
    assert "raised; the request is refused" in caplog.text
    request.user = django_user_model(username="x", is_staff=True, is_active=True)
    assert access(request) is Access.FORBIDDEN


class UnreachableUser:
    """A request's user as Django's lazy middleware gives it while the database holding the
    sessions does not answer: reading it raises."""

    @property
    def is_authenticated(self) -> bool:
        raise OperationalError("unable to open database file")

    is_active = is_staff = is_authenticated


@pytest.mark.parametrize(
    "permission",
    [None, "tests.admin.test_operations.raising_permission"],
    ids=["default", "raises"],
)
def test_a_database_outage_while_reading_the_user_is_an_outage_not_a_refusal(settings, permission):
    """The surfaces answer it as 503 (the error map), not as a refusal or a server error."""
    if permission is not None:
        settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "ADMIN_PERMISSION": permission}
    request = RequestFactory().get("/")
    request.user = UnreachableUser()
    with pytest.raises(OperationalError) as raised:
        access(request)
    assert problem_of(raised.value).status == 503


def test_a_permission_setting_that_cannot_be_used_refuses(settings, caplog):
    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "ADMIN_PERMISSION": "no.such.module.check"}
    request = RequestFactory().get("/")
    with caplog.at_level(logging.ERROR, logger="anole_jobs.admin"):
        assert access(request) is Access.ANONYMOUS
    assert "cannot be imported" in caplog.text


def test_the_setting_problems_the_system_check_reports():
    assert setting_problem(None) is None
    assert setting_problem(raising_permission) is None
    assert setting_problem("tests.admin.test_operations.raising_permission") is None
    assert "cannot be imported" in str(setting_problem("no.such.module.check"))
    assert "is not callable" in str(setting_problem("tests.admin.test_operations.HOSTILE_IDS"))
    assert "dotted path or a callable" in str(setting_problem(3))
