"""No surface a person reaches answers a server error or a traceback, for any input: the JSON
routes, the dashboard, the Django admin's pages for the jobs table and ``manage.py jobs``.

- The matrix: every page × every asker (`nofivexx_support.ASKERS`) × every store, with the
  store up (the page's own answer, or the asker's refusal) and with it down (staff get 503
  with ``Retry-After``, as JSON from the routes and as a page from the dashboard and the
  Django admin).
- Hostile input, case by case: ids that are not ids, page markers and filters that are junk,
  queue and cron names with any character a store accepts (a ``/`` included), bodies that are
  not what anyone expects. Unknown ids are "not found"; bad filters are 400 with the message
  on the page.
- A fuzz (Hypothesis) over all of it, with the store up and down.
- The command line: any argument ends with exit 0, 1 (one line on stderr) or argparse's usage
  error (2), never a traceback; with the store down, exit 1 and one line.

Everything is asked from outside (URLs, statuses, headers, bodies, exit statuses), so these
tests keep their meaning whatever the surfaces are built on.
"""

from __future__ import annotations

import contextlib
import os
import random
import string
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anole_jobs import Workflow
from tests.admin.nofivexx_support import (
    ADMIN,
    ADMIN_JOBS,
    ASKERS,
    DASHBOARD,
    SLASHED_QUEUE,
    STAFF,
    Asker,
    JsonOperation,
    body_text,
    cli_problems,
    client_for,
    closed_port,
    configure,
    describe,
    is_html,
    is_json,
    json_operations,
    login_redirect,
    make_users,
    problems_with,
    run_jobs_command,
    schema_problems,
    take_store_down,
)
from tests.admin.support import MOUNT
from tests.sampleapp.jobs import Work

pytestmark = pytest.mark.django_db(databases=["default"])
ROOT = Path(__file__).resolve().parents[2]
OUTAGES = pytest.mark.parametrize("down", [False, True], ids=["store-up", "store-down"])


@pytest.fixture
def people() -> dict[str, Any]:
    return make_users()


@pytest.fixture
def document(env: Any, people: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document, as the routes serve it to staff."""
    configure(env)
    response = client_for(STAFF, people).get(MOUNT + "openapi.json")
    assert response.status_code == 200, response.content
    return dict(response.json())


# -- the pages -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    """One page or action a person can reach, and what the allowed staff user gets."""

    surface: str  # "json", "dashboard" or "admin"
    method: str
    path: str  # may hold {job}
    ok: tuple[int, ...]  # with a database store for the Django admin
    ok_elsewhere: tuple[int, ...] = ()  # the Django admin on the memory and Redis stores
    reads_store: bool = True
    data: dict[str, Any] | None = None
    operation: JsonOperation | None = None

    def url(self, job: int) -> str:
        return (
            self.path.replace("{job}", str(job))
            .replace("{workflow}", WORKFLOW_OF.get(job, "-"))
            .replace("{worker_id}", WORKER_ID)
        )

    def expected(self, env: Any, asker: Asker) -> tuple[int, ...]:
        if asker.allowed:
            shown = env.alias is not None or self.surface != "admin"
            return self.ok if shown else self.ok_elsewhere
        if self.surface == "json":
            return (401,) if asker.user is None else (403,)
        if self.surface == "dashboard":
            return (302,) if asker.user is None else (403,)
        # The Django admin sends whoever is not staff to its login page; staff the permission
        # refuses are staff without the model's permissions (403), or see the index (200).
        if asker.user != "staff":
            return (302,)
        return (200,) if self.path == ADMIN else (403, 302)

    def touches_store(self, env: Any) -> bool:
        return self.reads_store and (env.alias is not None or self.surface != "admin")


#: The workflow of each page's job, for pages that name a workflow (its one step is the job).
WORKFLOW_OF: dict[int, str] = {}


#: The worker the worker-control pages act on (recorded alive before each of them).
WORKER_ID = "host-a:101:abc"


def job_for(env: Any, page: Page) -> int:
    if "{worker_id}" in page.path:
        from tests.contract.test_workers import worker

        env.store.record_worker(worker(env, WORKER_ID))
    if "{workflow}" not in page.path:
        return env.jobs.enqueue(Work(tag=page.path)).id
    workflow = Workflow(page.path)
    workflow.add(Work(tag=page.path), name="only")
    created = env.jobs.enqueue_workflow(workflow)
    WORKFLOW_OF[created.jobs["only"]] = created.id
    return created.jobs["only"]


DASHBOARD_PAGES = (
    Page("dashboard", "GET", DASHBOARD, (200,)),
    Page("dashboard", "GET", DASHBOARD + "jobs/", (200,)),
    Page("dashboard", "GET", DASHBOARD + "jobs/?state=available&queue=default", (200,)),
    Page("dashboard", "GET", DASHBOARD + "jobs/{job}/", (200,)),
    Page("dashboard", "GET", DASHBOARD + "cron/", (200,)),
    Page("dashboard", "GET", DASHBOARD + "workers/", (200,)),
    Page("dashboard", "GET", DASHBOARD + "workflows/{workflow}/", (200,)),
    Page("dashboard", "POST", DASHBOARD + "workflows/{workflow}/cancel", (302,)),
    Page("dashboard", "POST", DASHBOARD + "queues/default/pause", (302,)),
    Page("dashboard", "POST", DASHBOARD + "queues/default/resume", (302,)),
    Page("dashboard", "POST", DASHBOARD + "jobs/{job}/retry", (302,)),
    Page("dashboard", "POST", DASHBOARD + "jobs/{job}/cancel", (302,)),
    Page("dashboard", "POST", DASHBOARD + "jobs/{job}/delete", (302,)),
    Page("dashboard", "POST", DASHBOARD + "cron/nightly/trigger", (302,)),
    # search and bulk actions
    Page("dashboard", "GET", DASHBOARD + 'jobs/?args={"tag":1}&error=x&kind_prefix=t', (200,)),
    Page("dashboard", "GET", DASHBOARD + "bulk/retry?state=dead", (200,)),
    Page("dashboard", "POST", DASHBOARD + "bulk/cancel", (302,), data={"kind": ["no.such"]}),
    # a GET on an action URL asks first; paths without a page
    Page("dashboard", "GET", DASHBOARD + "jobs/{job}/delete", (200,)),
    Page("dashboard", "GET", DASHBOARD + "jobs/{job}/retry", (200,)),
    Page("dashboard", "GET", DASHBOARD + "jobs/{job}/cancel", (200,)),
    Page("dashboard", "GET", DASHBOARD + "queues/default/pause", (200,), reads_store=False),
    Page("dashboard", "GET", DASHBOARD + "cron/nightly/trigger", (200,), reads_store=False),
    Page("dashboard", "GET", DASHBOARD + "workflows/{workflow}/cancel", (200,)),
    Page("dashboard", "GET", DASHBOARD + "jobs", (302,), reads_store=False),
    Page("dashboard", "GET", DASHBOARD + "no/such/page", (404,), reads_store=False),
    # errors, kinds, chosen rows, a queue's page
    Page("dashboard", "GET", DASHBOARD + "queues/default/", (200,)),
    Page(
        "dashboard",
        "POST",
        DASHBOARD + "queues/default/limits",
        (302,),
        data={"global_concurrency": "3", "rate_limit": ""},
    ),
    Page("dashboard", "GET", DASHBOARD + "errors/", (200,)),
    Page("dashboard", "GET", DASHBOARD + "kinds/", (200,)),
    Page("dashboard", "GET", DASHBOARD + "workflows/", (200,)),
    # worker controls and the audit log
    Page("dashboard", "GET", DASHBOARD + "workers/{worker_id}/quiet", (200,)),
    Page("dashboard", "POST", DASHBOARD + "workers/{worker_id}/quiet", (302,)),
    Page("dashboard", "POST", DASHBOARD + "workers/{worker_id}/stop", (302,)),
    Page("dashboard", "GET", DASHBOARD + "audit/", (200,)),
    Page("dashboard", "GET", DASHBOARD + "audit/?action=retry&before=99999999999999999999", (200,)),
    Page("dashboard", "GET", DASHBOARD + "chosen?action=retry&id={job}", (200,), reads_store=False),
    Page(
        "dashboard",
        "POST",
        DASHBOARD + "chosen",
        (302,),
        data={"action": "cancel", "id": ["{job}"]},
    ),
)
ADMIN_PAGES = (
    Page("admin", "GET", ADMIN, (200,), (200,), reads_store=False),
    Page("admin", "GET", ADMIN_JOBS, (200,), (403,)),
    Page("admin", "GET", ADMIN_JOBS + "?state=available&queue=default", (200,), (403,)),
    Page("admin", "GET", ADMIN_JOBS + "?q=test", (200,), (403,)),
    Page("admin", "GET", ADMIN_JOBS + "{job}/change/", (200,), (403,)),
    # Django's history page looks the row up before asking for permission.
    Page("admin", "GET", ADMIN_JOBS + "{job}/history/", (200,), (302, 403)),
    Page("admin", "GET", ADMIN_JOBS + "add/", (403,), (403,), reads_store=False),
    Page("admin", "GET", ADMIN_JOBS + "{job}/delete/", (403,), (403,), reads_store=False),
    Page(
        "admin",
        "POST",
        ADMIN_JOBS,
        (302,),
        (403,),
        data={"action": "cancel_jobs", "_selected_action": ["{job}"]},
    ),
)


def json_pages(document: dict[str, Any]) -> tuple[Page, ...]:
    return tuple(
        Page(
            "json",
            operation.method,
            operation.url(job_id="{job}"),
            (operation.ok,),
            reads_store=not operation.path.startswith("/openapi"),
            operation=operation,
        )
        for operation in json_operations(document)
    )


def ask(client: Any, page: Page, job: int) -> Any:
    url = page.url(job)
    if page.data is not None:
        data = {
            key: [str(v).replace("{job}", str(job)) for v in value]
            if isinstance(value, list)
            else value
            for key, value in page.data.items()
        }
        return client.post(url, data)
    return client.generic(page.method, url)


def check_page(
    env: Any, document: dict[str, Any], page: Page, asker: Asker, response: Any, *, down: bool
) -> list[str]:
    problems = problems_with(response, down=down)
    if down and asker.allowed and page.touches_store(env):
        expected: tuple[int, ...] = (503,)
    elif down:
        expected = (*page.expected(env, asker), 503)
    else:
        expected = page.expected(env, asker)
    if response.status_code not in expected:
        problems.append(f"expected {' or '.join(map(str, expected))}")
    if response.status_code == 302 and asker.user != "staff" and not login_redirect(response):
        problems.append(f"a redirect to {response.get('Location')!r}, not to a login page")
    if page.surface == "json":
        if response.status_code != 204 and page.method != "HEAD" and not is_json(response):
            problems.append(f"not JSON ({response.get('Content-Type')})")
        elif page.operation is not None and is_json(response):
            problems += schema_problems(document, page.operation, response)
    elif response.status_code in (200, 400, 404, 503) and not is_html(response):
        problems.append(f"not a page ({response.get('Content-Type')})")
    return problems


def run_matrix(env: Any, people: Any, document: Any, asker: Asker, *, down: bool) -> None:
    configure(env, asker)
    client = client_for(asker, people)
    pages = (*json_pages(document), *DASHBOARD_PAGES, *ADMIN_PAGES)
    jobs = [job_for(env, page) for page in pages]
    answers = []
    with take_store_down(env) if down else contextlib.nullcontext():
        for page, job in zip(pages, jobs, strict=True):
            answers.append(ask(client, page, job))
    failures = []
    for page, job, response in zip(pages, jobs, answers, strict=True):
        if down and page.path == ADMIN and env.alias == "default":
            continue  # Django's own index, which needs the site's database to know who asks
        problems = check_page(env, document, page, asker, response, down=down)
        if problems:
            failures.append(f"{describe(page.method, page.url(job), response)}: {problems}")
    assert failures == [], "\n".join(failures)


@OUTAGES
@pytest.mark.parametrize("asker", ASKERS, ids=lambda asker: asker.name)
def test_every_page_for_every_asker(env, people, document, asker, down):
    run_matrix(env, people, document, asker, down=down)


# -- hostile ids -----------------------------------------------------------------------------

HOSTILE_IDS = (
    "0",
    "-1",
    "²",
    "١٢",  # Arabic-Indic digits: isdigit() says yes, int() says yes, no job has that id
    "1.5",
    "1e3",
    "abc",
    "é",
    "99999999999999999999",
    "9223372036854775808",
    "%00",
    "%2F",
    "1" * 400,
)


@pytest.fixture
def staff(env, people) -> Any:
    configure(env)
    return client_for(STAFF, people)


def quoted(text: str) -> str:
    return text if text.startswith("%") else quote(text, safe="")


@pytest.mark.parametrize("job_id", HOSTILE_IDS, ids=lambda text: text if len(text) < 30 else "long")
def test_ids_that_are_not_jobs_are_not_found(env, staff, job_id):
    env.jobs.enqueue(Work())
    ident = quoted(job_id)
    failures = []
    for method, url, expected in (
        ("GET", f"{MOUNT}jobs/{ident}", (404,)),
        ("DELETE", f"{MOUNT}jobs/{ident}", (404,)),
        ("POST", f"{MOUNT}jobs/{ident}/retry", (404,)),
        ("POST", f"{MOUNT}jobs/{ident}/cancel", (404,)),
        ("GET", f"{DASHBOARD}jobs/{ident}/", (404,)),
        # An action on a job that is not there: 404, or back to the list saying so.
        ("POST", f"{DASHBOARD}jobs/{ident}/retry", (404, 302)),
        ("POST", f"{DASHBOARD}jobs/{ident}/cancel", (404, 302)),
        ("POST", f"{DASHBOARD}jobs/{ident}/delete", (404, 302)),
        # Django's admin sends an unknown row back to the index with a message.
        ("GET", f"{ADMIN_JOBS}{ident}/change/", (404, 302, 403)),
        ("GET", f"{ADMIN_JOBS}{ident}/history/", (404, 302, 403)),
    ):
        response = staff.generic(method, url)
        problems = problems_with(response, down=False)
        if response.status_code not in expected:
            problems.append(f"expected {expected}")
        if problems:
            failures.append(f"{describe(method, url, response)}: {problems}")
    assert failures == [], "\n".join(failures)


# -- filters ---------------------------------------------------------------------------------

BAD_FILTERS = (
    "after=%C2%B2",  # ²
    "after=99999999999999999999",
    "after=9223372036854775808",
    "after=-1",
    "after=0",
    "after=abc",
    "after=%00",
    "state=finished",
    "state=%00",
    "limit=-1",
    "limit=ten",
    "limit=%C2%B2",
)


@pytest.mark.parametrize("query", BAD_FILTERS)
def test_a_bad_filter_is_a_400_naming_it(env, staff, query):
    env.jobs.enqueue(Work())
    name = query.split("=")[0]
    json_answer = staff.get(f"{MOUNT}jobs?{query}")
    assert json_answer.status_code == 400, describe("GET", f"jobs?{query}", json_answer)
    assert json_answer.json()["message"]
    if name == "limit":
        return  # the dashboard has no limit filter
    page = staff.get(f"{DASHBOARD}jobs/?{query}")
    assert problems_with(page, down=False) == [], describe("GET", query, page)
    assert page.status_code == 400 and is_html(page), describe("GET", query, page)
    assert name in body_text(page).lower(), "the page says which filter is wrong"


JUNK_ADMIN_QUERIES = (
    "q=%C2%B2",
    "q=99999999999999999999",
    "q=%00",
    "q=" + "9" * 18,
    "state=%00",
    "state=finished",
    "queue=%00",
    "kind=a%00b",
    "queue=reports%2Feu",
    "id=%C2%B2",
    "id__gt=abc",
    "p=abc",
    "p=99999999999999999999",
    "o=abc",
    "o=99",
    "all=",
    "e=1",
    "nonexistent=1",
    "_changelist_filters=%00",
)


@pytest.mark.parametrize("query", JUNK_ADMIN_QUERIES)
def test_the_django_admin_table_copes_with_junk_in_its_query(env, staff, query):
    env.jobs.enqueue(Work())
    response = staff.get(f"{ADMIN_JOBS}?{query}")
    assert problems_with(response, down=False) == [], describe("GET", query, response)
    assert response.status_code in (200, 302, 400, 403, 404), describe("GET", query, response)
    if "%00" in query and env.alias is not None:  # no job holds a NUL: a bad filter, named
        assert response.status_code == 400 and is_html(response), describe("GET", query, response)
        assert query.split("=")[0] in body_text(response)


# -- names -----------------------------------------------------------------------------------

#: Names a store accepts for a queue, as they are written in a URL (a `/` as is or as %2F).
NAMES = {
    "reports/eu": "reports/eu",
    "reports%2Feu": "reports/eu",
    "with space": "with%20space",
    "é-ü-日本": quote("é-ü-日本"),
    "semi;colon?": quote("semi;colon?", safe=""),
    "dots..": "dots..",
    "percent%": "percent%25",
}


def queue_state(staff: Any, name: str) -> bool | None:
    for queue in staff.get(f"{MOUNT}queues").json()["queues"]:
        if queue["name"] == name:
            return bool(queue["paused"])
    return None


def ask_to_queue(staff: Any, url: str, *, create: bool) -> Any:
    """Pause or resume by `url`, asking to use a new queue (`create`) or not: the JSON routes
    take the body ``{"create": true}``, the dashboard's form the field ``create=on``."""
    if not create:
        return staff.post(url)
    if url.startswith(DASHBOARD):
        return staff.post(url, {"create": "on"})
    return staff.post(url, '{"create": true}', content_type="application/json")


@pytest.mark.parametrize("label", NAMES)
def test_any_queue_name_can_be_paused_and_resumed_everywhere(env, staff, label):
    """A name nobody knows is refused (404, "unknown_queue") until the request asks to create
    the queue; then any name a store accepts is paused and resumed on every surface."""
    written = NAMES[label]
    name = label.replace("%2F", "/")
    failures = []
    for base in (f"{MOUNT}queues/", f"{DASHBOARD}queues/"):
        refused = staff.post(f"{base}{written}/pause")
        problems = problems_with(refused, down=False)
        if (
            refused.status_code != 404
            or "unknown_queue" not in body_text(refused)
            and ("no queue named" not in body_text(refused).replace("&#x27;", "'"))
        ):
            problems.append("expected 404 naming the unknown queue without create")
        elif queue_state(staff, name) is not None:
            problems.append(f"the refused pause made the queue {name!r}")
        if problems:
            failures.append(f"{describe('POST', f'{base}{written}/pause', refused)}: {problems}")
        for verb, paused in (("pause", True), ("resume", False)):
            url = f"{base}{written}/{verb}"
            response = ask_to_queue(staff, url, create=True)
            problems = problems_with(response, down=False)
            if response.status_code not in (200, 302):
                problems.append("expected 200 (JSON) or 302 (dashboard)")
            # A resumed queue with no jobs that is not in QUEUES is listed no more.
            elif bool(queue_state(staff, name)) is not paused:
                problems.append(f"the queue {name!r} is not {'paused' if paused else 'running'}")
            if paused:
                index = staff.get(DASHBOARD)
                shown = body_text(index).replace("&#x27;", "'").replace("&amp;", "&")
                if index.status_code != 200 or name not in shown:
                    problems.append(f"the dashboard's index: {describe('GET', DASHBOARD, index)}")
            if problems:
                failures.append(f"{describe('POST', url, response)}: {problems}")
    assert failures == [], "\n".join(failures)


def test_a_mistyped_queue_name_is_refused_with_did_you_mean_everywhere(env, staff):
    """``defualt`` for ``default``: refused on the JSON routes and the dashboard with the
    nearest known name, and nothing is paused; with create it is a new, paused queue."""
    for base in (f"{MOUNT}queues/", f"{DASHBOARD}queues/"):
        url = f"{base}defualt/pause"
        refused = staff.post(url)
        shown = body_text(refused).replace("&#x27;", "'")
        assert refused.status_code == 404, describe("POST", url, refused)
        assert "did you mean 'default'" in shown, describe("POST", url, refused)
        assert queue_state(staff, "defualt") is None
        created = ask_to_queue(staff, url, create=True)
        assert created.status_code in (200, 302), describe("POST", url, created)
        assert queue_state(staff, "defualt") is True
        ask_to_queue(staff, f"{base}defualt/resume", create=True)


def test_a_slashed_queue_in_settings_does_not_break_the_dashboard(env, people):
    configure(env, slashed_queue=True)
    staff = client_for(STAFF, people)
    env.jobs.enqueue(Work(), queue=SLASHED_QUEUE)
    index = staff.get(DASHBOARD)
    assert index.status_code == 200, describe("GET", DASHBOARD, index)
    assert SLASHED_QUEUE in body_text(index)
    listing = staff.get(f"{DASHBOARD}jobs/", {"queue": SLASHED_QUEUE})
    assert listing.status_code == 200, describe("GET", "jobs/?queue=reports/eu", listing)


@pytest.mark.parametrize("label", [*NAMES, "%00"])
def test_an_unknown_cron_name_is_not_found_everywhere(env, staff, label):
    written = NAMES.get(label, label)
    for url in (f"{MOUNT}cron/{written}/trigger", f"{DASHBOARD}cron/{written}/trigger"):
        response = staff.post(url)
        assert problems_with(response, down=False) == [], describe("POST", url, response)
        assert response.status_code in (400, 404), describe("POST", url, response)


def test_a_nul_in_a_queue_name_is_refused_not_a_crash(env, staff):
    for url in (f"{MOUNT}queues/%00/pause", f"{DASHBOARD}queues/%00/pause"):
        response = staff.post(url)
        assert problems_with(response, down=False) == [], describe("POST", url, response)
        assert 400 <= response.status_code < 500, describe("POST", url, response)


# -- names and numbers no store holds --------------------------------------------------------

#: A name longer than any store holds in an index row; the second does not compress (PostgreSQL
#: compresses a long repetitive value below its index row limit, not this one).
LONG_NAME = "q" * 10_000
RANDOM_NAME = "".join(random.Random(28).choices(string.ascii_letters + string.digits, k=10_000))
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
#: Each value where it enters: (method, url, content type, body). PostgreSQL answered 500 or
#: 503 to these (a NUL in text, an integer over 32 bits, an index row too big), SQLite 500
#: (an integer over 64 bits).
HOSTILE_VALUES = (
    ("GET", f"{MOUNT}stats?queue=%00", None, ""),
    ("GET", f"{DASHBOARD}stats/?queue=%00", None, ""),
    ("GET", f"{MOUNT}stats?queue={RANDOM_NAME}", None, ""),
    ("POST", f"{MOUNT}queues/default/limits", JSON, '{"global_concurrency": 2147483648}'),
    ("POST", f"{MOUNT}queues/default/limits", JSON, '{"global_concurrency": 9223372036854775808}'),
    ("POST", f"{MOUNT}queues/default/limits", JSON, '{"rate_limit": "2147483648/s"}'),
    ("POST", f"{MOUNT}queues/default/limits", JSON, '{"rate_limit": "' + "9" * 5000 + '/m"}'),
    ("POST", f"{MOUNT}queues/default/limits", JSON, '{"rate_limit": [3, 1e300]}'),
    ("POST", f"{MOUNT}queues/{LONG_NAME}/pause", JSON, '{"create": true}'),
    ("POST", f"{MOUNT}queues/{LONG_NAME}/resume", JSON, '{"create": true}'),
    ("POST", f"{MOUNT}queues/{RANDOM_NAME}/pause", JSON, '{"create": true}'),
    ("POST", f"{MOUNT}queues/{RANDOM_NAME}/limits", JSON, '{"create": true, "clear": true}'),
    ("POST", f"{DASHBOARD}queues/{LONG_NAME}/pause", FORM, "create=on"),
    ("POST", f"{DASHBOARD}queues/{RANDOM_NAME}/resume", FORM, "create=on"),
    ("GET", f'{MOUNT}jobs?args={{"tag":99999999999999999999}}', None, ""),
    ("GET", f'{MOUNT}jobs?args={{"tag":[-99999999999999999999]}}', None, ""),
    ("GET", f'{DASHBOARD}jobs/?args={{"tag":99999999999999999999}}', None, ""),
    ("GET", f"{MOUNT}jobs?queue={RANDOM_NAME}", None, ""),
    ("GET", f"{MOUNT}jobs?kind={LONG_NAME}", None, ""),
    ("GET", f"{DASHBOARD}jobs/?queue={RANDOM_NAME}", None, ""),
    ("GET", f"{MOUNT}bulk?queue={RANDOM_NAME}", None, ""),
    ("POST", f"{MOUNT}bulk/cancel", JSON, '{"queue": "' + LONG_NAME + '"}'),
    ("GET", f"{ADMIN_JOBS}?queue__exact={RANDOM_NAME}", None, ""),
)


@pytest.mark.parametrize(
    ("method", "url", "content_type", "body"),
    HOSTILE_VALUES,
    ids=[f"{m} {u[:60]} {b[:30]}" for m, u, _, b in HOSTILE_VALUES],
)
def test_a_name_or_number_no_store_holds_is_a_400_not_a_server_error(
    env, staff, method, url, content_type, body
):
    env.jobs.enqueue(Work())
    before = {q.name: (q.paused, q.limits) for q in env.jobs.queues()}
    if content_type is None:
        response = staff.generic(method, url)
    else:
        response = staff.generic(method, url, body, content_type=content_type)
    if url.startswith(ADMIN_JOBS) and env.alias is None:
        return  # no jobs table to show: the Django admin says so (403), checked elsewhere
    assert problems_with(response, down=False) == [], describe(method, url[:200], response)
    assert response.status_code == 400, describe(method, url[:200], response)
    assert {q.name: (q.paused, q.limits) for q in env.jobs.queues()} == before  # nothing made


@pytest.mark.parametrize(
    "selected", ["abc", "\x00", "9" * 10_000, str(2**66), "0", "-1"], ids=lambda v: v[:12]
)
@pytest.mark.parametrize("action", ["retry_jobs", "cancel_jobs", "delete_jobs"])
def test_a_tampered_selection_in_the_django_admin_does_nothing_and_says_so(
    env, staff, action, selected
):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    job = env.jobs.enqueue(Work()).id
    response = staff.post(
        ADMIN_JOBS, {"action": action, "_selected_action": [str(job), selected]}, follow=True
    )
    assert problems_with(response, down=False) == [], describe("POST", ADMIN_JOBS, response)
    assert response.status_code == 200, describe("POST", ADMIN_JOBS, response)
    assert "is not a job id" in body_text(response).replace("&#x27;", "'")
    record = env.jobs.get(job)
    assert record is not None and record.state == "available"  # nothing done, not even to it


# -- bodies ----------------------------------------------------------------------------------

BODIES = (
    ("application/json", b"{"),
    ("application/json", b'{"ids": "not a list", "queue": 12}'),
    ("application/json", b"[" * 5000),
    ("application/json", b"\xff\xfe\x00"),
    ("application/x-www-form-urlencoded", b"action=%00&_selected_action=%C2%B2"),
    ("application/x-www-form-urlencoded", b"a=" + b"x" * 300_000),
    ("multipart/form-data; boundary=zz", b"--zz\r\nbroken"),
    ("text/plain", b"\x00" * 1000),
)


@pytest.mark.parametrize(("content_type", "body"), BODIES, ids=lambda v: str(v)[:20])
def test_bodies_that_make_no_sense_get_no_server_error(env, staff, content_type, body):
    job = env.jobs.enqueue(Work()).id
    failures = []
    for url in (
        f"{MOUNT}jobs/{job}/cancel",
        f"{MOUNT}queues/default/pause",
        f"{DASHBOARD}jobs/{job}/retry",
        f"{DASHBOARD}queues/default/resume",
        ADMIN_JOBS,
    ):
        response = staff.generic("POST", url, body, content_type=content_type)
        problems = problems_with(response, down=False)
        if problems:
            failures.append(f"{describe('POST', url, response)}: {problems}")
    assert failures == [], "\n".join(failures)


# -- the fuzz --------------------------------------------------------------------------------

FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
IDS = st.one_of(
    st.sampled_from(HOSTILE_IDS),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.text(min_size=1, max_size=12),
)
NAME_TEXT = st.one_of(
    st.sampled_from([*NAMES.values(), "%00", "%2F", "default", "nightly", "q" * 201, RANDOM_NAME]),
    st.text(min_size=1, max_size=16),
)
FILTER_VALUES = st.one_of(
    st.sampled_from(
        ["²", "99999999999999999999", "-1", "0", "", "%00", "dead", "default", "q" * 201]
        + ['{"n": 99999999999999999999}', '{"n": [-9223372036854775809]}', '{"n": 1e400}']
    ),
    st.text(max_size=12),
    st.integers().map(str),
)
TEMPLATES = (
    ("GET", MOUNT + "jobs/{id}"),
    ("DELETE", MOUNT + "jobs/{id}"),
    ("POST", MOUNT + "jobs/{id}/retry"),
    ("POST", MOUNT + "jobs/{id}/cancel"),
    ("POST", MOUNT + "queues/{name}/pause"),
    ("POST", MOUNT + "queues/{name}/resume"),
    ("POST", MOUNT + "cron/{name}/trigger"),
    ("GET", MOUNT + "jobs"),
    ("GET", MOUNT + "queues"),
    ("POST", MOUNT + "queues/{name}/limits"),
    ("GET", MOUNT + "stats"),
    ("GET", DASHBOARD + "stats/"),
    ("GET", DASHBOARD),
    ("GET", DASHBOARD + "jobs/"),
    ("GET", DASHBOARD + "jobs/{id}/"),
    ("POST", DASHBOARD + "jobs/{id}/retry"),
    ("POST", DASHBOARD + "jobs/{id}/cancel"),
    ("POST", DASHBOARD + "jobs/{id}/delete"),
    ("POST", DASHBOARD + "queues/{name}/pause"),
    ("POST", DASHBOARD + "queues/{name}/resume"),
    ("GET", DASHBOARD + "cron/"),
    ("POST", DASHBOARD + "cron/{name}/trigger"),
    ("GET", ADMIN_JOBS),
    ("GET", ADMIN_JOBS + "{id}/change/"),
    ("GET", ADMIN_JOBS + "{id}/history/"),
    ("POST", ADMIN_JOBS),
)
METHODS = st.sampled_from(["GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS", "PATCH"])


@st.composite
def requests(draw: Any) -> tuple[str, str, str, bytes]:
    method, template = draw(st.sampled_from(TEMPLATES))
    if draw(st.integers(0, 9)) == 0:
        method = draw(METHODS)
    path = template.replace("{id}", quoted(draw(IDS))).replace("{name}", quoted(draw(NAME_TEXT)))
    pairs = draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    ["state", "queue", "kind", "limit", "after", "args", "q", "p", "o", "x"]
                ),
                FILTER_VALUES,
            ),
            max_size=3,
        )
    )
    query = "&".join(f"{key}={quoted(value)}" for key, value in pairs)
    body = draw(
        st.one_of(
            st.just(b""),
            st.binary(max_size=64),
            st.sampled_from([body for _, body in BODIES[:5]]),
            st.sampled_from(
                [
                    b'{"global_concurrency": 2147483648}',
                    b'{"rate_limit": "99999999999/s", "create": true}',
                    b'{"create": true}',
                    b"action=retry_jobs&_selected_action=73786976294838206464",
                ]
            ),
        )
    )
    return method, path + (f"?{query}" if query else ""), draw(st.sampled_from(BODIES))[0], body


@pytest.mark.fuzz
@OUTAGES
def test_fuzz_every_surface_with_hostile_input(env, people, down):
    configure(env)
    client = client_for(STAFF, people)
    env.jobs.enqueue_many([Work(tag=str(n)) for n in range(3)])
    failures: list[str] = []

    @FUZZ
    @given(request=requests())
    def fuzz(request: tuple[str, str, str, bytes]) -> None:
        method, url, content_type, body = request
        response = client.generic(method, url, body, content_type=content_type)
        problems = problems_with(response, down=down)
        if problems:
            failures.append(f"{describe(method, url, response)}: {problems}")

    if down:
        with take_store_down(env):
            fuzz()
    else:
        fuzz()
    assert failures == [], "\n".join(sorted(set(failures))[:40])


# -- the command line ------------------------------------------------------------------------

CLI_CASES = (
    ("show", "²"),
    ("show", "99999999999999999999"),
    ("show", "-1"),
    ("show", "0"),
    ("show", "١٢"),
    ("show", "9223372036854775807"),
    ("retry", "9223372036854775807", "9223372036854775806"),
    ("cancel", "abc"),
    ("delete", "%00"),
    ("list", "--after", "²"),
    ("list", "--after", "99999999999999999999"),
    ("list", "--limit", "0"),
    ("list", "--limit", "99999999999999999999999"),
    ("list", "--queue", ""),
    ("list", "--queue", "\x00"),
    ("list", "--kind", "é"),
    ("list", "--state", "finished"),
    ("pause", ""),
    ("pause", "\x00"),
    ("pause", SLASHED_QUEUE),
    ("resume", "with space"),
    ("pause", "x" * 5000),
    ("pause", "--create", RANDOM_NAME),
    ("limits", "default", "--concurrency", "2147483648"),
    ("limits", "default", "--concurrency", str(2**64)),
    ("limits", "default", "--rate", "99999999999/s"),
    ("limits", "mial", "--concurrency", "2"),
    ("stats", "--queue", "\x00"),
    ("list", "--queue", LONG_NAME),
    ("list", "--args", '{"tag": 99999999999999999999}'),
    ("cron-trigger", ""),
    ("cron-trigger", "\x00"),
    ("cron-trigger", "nope/nope"),
    ("signal", "1", ""),
    ("signal", "1", "\x00"),
    ("signal", "1", "x" * 5000),
    ("signal", "abc", "paid"),
    ("signal", "99999999999999999999", "paid"),
    ("signal", "1", "paid", "--payload", "{"),
    ("signal", "1", "paid", "--payload", "NaN"),
    ("frobnicate",),
    ("list", "--json", "--limit", "²"),
    (),
)


@pytest.mark.parametrize("args", CLI_CASES, ids=lambda args: " ".join(args)[:40] or "nothing")
def test_any_command_line_ends_without_a_traceback(env, args):
    configure(env)
    env.jobs.enqueue(Work())
    ran = run_jobs_command(*args)
    assert cli_problems(ran) == [], str(ran)


CLI_DOWN = (
    ("list",),
    ("list", "--json"),
    ("show", "1"),
    ("counts",),
    ("queues",),
    ("retry", "1"),
    ("cancel", "1"),
    ("delete", "1"),
    ("pause", "default"),
    ("resume", "default"),
    ("cron",),
    ("cron-trigger", "nightly"),
    ("signal", "1", "paid"),
    ("workers",),
    ("workers", "--json"),
    ("check-deploy",),
)


@pytest.mark.parametrize("args", CLI_DOWN, ids=" ".join)
def test_with_the_store_down_every_subcommand_exits_1_with_one_line(env, args):
    configure(env)
    with take_store_down(env):
        ran = run_jobs_command(*args)
    assert cli_problems(ran, store_down=True) == [], str(ran)
    assert ran.code == 1, str(ran)


@pytest.mark.fuzz
@given(
    args=st.lists(
        st.one_of(
            st.sampled_from(
                ["list", "show", "retry", "cancel", "pause", "cron-trigger", "--json", "--after"]
            ),
            st.sampled_from(["--limit", "--state", "--queue", "1", "²", "-1", SLASHED_QUEUE]),
            st.text(
                st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
                max_size=10,
            ),
        ),
        min_size=1,
        max_size=5,
    )
)
@settings(
    max_examples=80,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_fuzz_the_command_line(env, args):
    configure(env)
    ran = run_jobs_command(*args)
    assert cli_problems(ran) == [], str(ran)


def real_process(
    settings_text: str, tmp_path: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "down_settings.py").write_text(settings_text)
    environment = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "DJANGO_SETTINGS_MODULE": "down_settings",
    }
    return subprocess.run(
        [sys.executable, "-m", "django", "jobs", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


@pytest.mark.parametrize("store", ["redis", "postgres", "sqlite"])
def test_a_real_process_with_its_store_down_exits_1_with_one_line(tmp_path, store):
    port = closed_port()
    settings_text = {
        "redis": (
            "CACHES = {**CACHES, 'jobs': {**CACHES['jobs'], "
            f"'LOCATION': 'redis://127.0.0.1:{port}/0'}}}}\n"
            "ANOLE_JOBS = {'STORE': {'redis': 'jobs'}, 'RUN': 'manual'}\n"
        ),
        "postgres": (
            f"DATABASES = {{**DATABASES, 'pg': {{**DATABASES['pg'], 'PORT': '{port}'}}}}\n"
            "ANOLE_JOBS = {'STORE': {'database': 'pg'}, 'RUN': 'manual'}\n"
        ),
        "sqlite": (
            "DATABASES = {**DATABASES, 'default': {**DATABASES['default'], "
            "'NAME': '/nonexistent-anole-test-dir/jobs.sqlite3'}}\n"
            "ANOLE_JOBS = {'STORE': {'database': 'default'}, 'RUN': 'manual'}\n"
        ),
    }[store]
    done = real_process(
        "from tests.settings import *  # noqa: F403\n" + settings_text, tmp_path, "counts"
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
