"""The JSON admin routes (docs/admin.md) on every store: a generated table of every route ×
every method × every kind of asker, checked against the rules; then filters, paging, ids,
errors, outages, CSRF and ASGI.

The table: for each route (and a path no route has), each HTTP method and each principal of
`support.PRINCIPALS`, the expected status follows from the rules alone — refused askers get
401/403, a method the route does not list 405 with `Allow`, otherwise the operation's success
status — and every status must be one the OpenAPI document lists for that path and method.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import OperationalError
from django.test import AsyncClient, Client

from anole_jobs import NewQueue, Workflow
from anole_jobs.admin_api.openapi import document
from anole_jobs.admin_api.routes import COMMON_STATUSES, ROUTES, WRONG_METHOD, Route
from anole_jobs.errors import StoreUnavailable
from tests.admin.support import (
    METHODS,
    MOUNT,
    PRINCIPALS,
    Principal,
    client_for,
    configure_admin,
)
from tests.sampleapp.jobs import Work
from tests.support.clients import staff_client

pytestmark = pytest.mark.django_db(databases=["default"])

FALLBACK_PATHS = ("jobs/", "nope", "jobs/1/explode", "queues/default")


def url_of(route: Route, env: Any) -> str:
    """A URL for `route` that names things that exist (a fresh job, the cron entry)."""
    path = route.path
    if "<str:job_id>" in path:
        path = path.replace("<str:job_id>", str(env.jobs.enqueue(Work()).id))
    if "<str:workflow_id>" in path:
        workflow = Workflow("routes")
        workflow.add(Work())
        path = path.replace("<str:workflow_id>", env.jobs.enqueue_workflow(workflow).id)
    path = path.replace("<anole_name:name>", "nightly" if path.startswith("cron") else "default")
    if "<path:worker_id>" in path:  # a worker alive now
        from tests.contract.test_workers import worker

        record = worker(env)
        env.store.record_worker(record)
        path = path.replace("<path:worker_id>", record.id)
    if path.startswith("bulk"):  # a bulk action needs a filter: one that matches nothing
        path = path.replace("<str:action>", "retry") + "?kind=no.such.kind"
    return MOUNT + path


def documented(doc: dict[str, Any], route: Route, method: str, status: int) -> bool:
    item = doc["paths"][route.openapi_path]
    if method not in item["x-allow"]:
        # Methods a path does not list: 405, or the refusals that come before the method.
        components = doc["components"]["responses"]
        if status == WRONG_METHOD:
            return "MethodNotAllowed" in components
        return status in COMMON_STATUSES and f"Status{status}" in components
    operation = item.get(("get" if method == "HEAD" else method).lower())
    return operation is not None and str(status) in operation["responses"]


def expected(route: Route | None, method: str, principal: Principal) -> int:
    if not principal.allowed:
        return principal.refusal  # type: ignore[return-value]
    if route is None:
        return 404
    operation = route.operation(method)
    return WRONG_METHOD if operation is None else operation.ok


def ask(client: Client, method: str, url: str) -> Any:
    return client.generic(method, url)


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: p.name)
def test_every_route_method_and_asker(env, users, principal):
    configure_admin(env, principal)
    client = client_for(principal, users)
    doc = document()
    cases = [(route, method) for route in ROUTES for method in METHODS]
    cases += [(None, method) for method in METHODS]
    failures = []
    for route, method in cases:
        if route is None:
            url = MOUNT + FALLBACK_PATHS[len(failures) % len(FALLBACK_PATHS)]
        else:
            url = url_of(route, env)
        response = ask(client, method, url)
        want = expected(route, method, principal)
        problems = []
        if response.status_code != want:
            problems.append(f"status {response.status_code}, expected {want}")
        allow = ", ".join(route.methods) if route is not None else None
        if response.status_code == WRONG_METHOD and response.get("Allow") != allow:
            problems.append(f"Allow {response.get('Allow')!r}")
        if response.status_code != 204 and method != "HEAD":
            if response["Content-Type"] != "application/json":
                problems.append(f"Content-Type {response['Content-Type']}")
            else:
                json.loads(response.content)
        if route is not None and not documented(doc, route, method, response.status_code):
            problems.append(f"status {response.status_code} is not in the OpenAPI document")
        if problems:
            failures.append(f"{method} {url}: {'; '.join(problems)}: {response.content[:200]!r}")
    assert failures == [], "\n".join(failures)
    assert len(cases) == (len(ROUTES) + 1) * len(METHODS)


# -- answers of the allowed ------------------------------------------------------------------


@pytest.fixture
def staff(env, users) -> Client:
    configure_admin(env)
    return staff_client(users["staff"])


def test_a_job_answers_every_record_field_with_utc_iso_times(env, staff):
    job = env.jobs.enqueue(Work(tag="x"), meta={"k": [1, 2]})
    body = staff.get(f"{MOUNT}jobs/{job.id}").json()
    record = env.jobs.get(job.id)
    assert body == {
        "id": job.id,
        "kind": "test.work",
        "display_kind": "test.work",
        "queue": "default",
        "state": "available",
        "args": {"action": "ok", "seconds": 0, "tag": "x"},
        "meta": {"k": [1, 2]},
        "priority": 0,
        "attempt": 0,
        "max_attempts": 3,
        "errors": [],
        "created_at": record.created_at.isoformat(),
        "scheduled_at": record.scheduled_at.isoformat(),
        "attempted_at": None,
        "finished_at": None,
        "unique_key": None,
        "workflow_id": None,
        "step_name": None,
        "result": None,
        "steps": {},
        "progress": None,
        "logs": [],
        "attempts": [],
        "waiting": {
            "reason": "no_worker",
            "detail": "no live worker runs its queue 'default'; start one (manage.py runjobs)",
            "until": None,
        },
    }
    assert body["created_at"].endswith("+00:00")


def test_errors_are_shown_with_type_message_and_traceback(env, staff):
    job = env.jobs.enqueue(Work(action="fail"))
    env.jobs.step()
    (error,) = staff.get(f"{MOUNT}jobs/{job.id}").json()["errors"]
    assert error["type"] == "ValueError" and error["message"] == "failed on attempt 1"
    assert "Traceback" in error["traceback"] or error["traceback"]
    assert error["attempt"] == 1


def test_list_filters_and_pages_newest_first(env, staff):
    ids = [r.id for r in env.jobs.enqueue_many([Work(tag=str(i)) for i in range(5)])]
    mail = env.jobs.enqueue(Work(), queue="mail").id
    page = staff.get(f"{MOUNT}jobs", {"limit": 2, "queue": "default"}).json()
    assert [j["id"] for j in page["jobs"]] == [ids[4], ids[3]]
    assert page["next_after"] == ids[3]
    page = staff.get(f"{MOUNT}jobs", {"limit": 2, "queue": "default", "after": ids[3]}).json()
    assert [j["id"] for j in page["jobs"]] == [ids[2], ids[1]]
    last = staff.get(f"{MOUNT}jobs", {"queue": "default", "after": ids[1]}).json()
    assert [j["id"] for j in last["jobs"]] == [ids[0]] and last["next_after"] is None
    assert [j["id"] for j in staff.get(f"{MOUNT}jobs", {"queue": "mail"}).json()["jobs"]] == [mail]
    env.jobs.cancel(ids[0])
    cancelled = staff.get(f"{MOUNT}jobs", {"state": "cancelled", "kind": "test.work"}).json()
    assert [j["id"] for j in cancelled["jobs"]] == [ids[0]]
    assert staff.get(f"{MOUNT}jobs", {"limit": 5000}).status_code == 200  # capped at 1000


@pytest.mark.parametrize(
    "query",
    [
        {"state": "finished"},
        {"limit": "0"},
        {"limit": "-1"},
        {"limit": "ten"},
        {"limit": "1e3"},
        {"after": "0"},
        {"after": "abc"},
        {"after": "99999999999999999999"},
        {"queue": ""},
        {"stat": "dead"},
        {"state": ["dead", "completed"]},
    ],
)
def test_bad_filters_answer_400_naming_the_problem(env, staff, query):
    response = staff.get(f"{MOUNT}jobs", query)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "bad_filter" and body["message"]


@pytest.mark.parametrize(
    "value", ["' OR 1=1 --", "default'; DROP TABLE anole_jobs_job; --", "%", "*", "\\", "é"]
)
def test_sql_looking_filter_values_are_plain_values(env, staff, value):
    env.jobs.enqueue(Work())
    job = env.jobs.enqueue(Work(), queue=NewQueue(value))
    for name in ("queue", "kind"):
        response = staff.get(f"{MOUNT}jobs", {name: value})
        assert response.status_code == 200
    assert [j["id"] for j in staff.get(f"{MOUNT}jobs", {"queue": value}).json()["jobs"]] == [job.id]
    assert staff.get(f"{MOUNT}jobs", {"kind": value}).json()["jobs"] == []


def test_non_utf8_filter_values_match_nothing(env, staff):
    env.jobs.enqueue(Work())
    for raw in ("queue=%FF%FE", "kind=%C3%28", "queue=%ED%A0%80"):
        response = staff.get(f"{MOUNT}jobs?{raw}")
        assert response.status_code == 200, (raw, response.content)
        assert response.json()["jobs"] == []


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("queue=%00", "control character"),
        ("kind=a%09b", "control character"),
        ("queue=" + "q" * 201, "at most 200 characters"),
        ("kind=" + "k" * 10_000, "at most 200 characters"),
        ('args={"n":18446744073709551616}', "integers from -2**63 to 2**63 - 1"),
    ],
    ids=["nul-queue", "tab-kind", "long-queue", "very-long-kind", "args-beyond-64-bits"],
)
def test_a_filter_no_store_holds_is_a_400_naming_it(env, staff, raw, says):
    env.jobs.enqueue(Work())
    response = staff.get(f"{MOUNT}jobs?{raw}")
    assert response.status_code == 400, (raw, response.content)
    body = response.json()
    assert body["error"] == "bad_filter" and says in body["message"], body


@pytest.mark.parametrize(
    "job_id", ["0", "-1", "abc", "1.5", "99999999999999999999", "9223372036854775808", "%00"]
)
def test_malformed_ids_answer_404(env, staff, job_id):
    for method, suffix in (("GET", ""), ("DELETE", ""), ("POST", "/retry"), ("POST", "/cancel")):
        response = staff.generic(method, f"{MOUNT}jobs/{job_id}{suffix}")
        assert response.status_code == 404, (method, job_id, response.content)
        assert response.json()["error"] == "not_found"


def test_unknown_ids_answer_404(env, staff):
    for method, suffix in (("GET", ""), ("DELETE", ""), ("POST", "/retry"), ("POST", "/cancel")):
        response = staff.generic(method, f"{MOUNT}jobs/9223372036854775807{suffix}")
        assert response.status_code == 404, (method, response.content)


def test_retry_cancel_and_delete_change_the_job(env, staff):
    job = env.jobs.enqueue(Work())
    assert staff.post(f"{MOUNT}jobs/{job.id}/cancel").json()["state"] == "cancelled"
    assert staff.post(f"{MOUNT}jobs/{job.id}/retry").json()["state"] == "available"
    response = staff.delete(f"{MOUNT}jobs/{job.id}")
    assert response.status_code == 204 and response.content == b""
    assert env.jobs.get(job.id) is None
    assert staff.delete(f"{MOUNT}jobs/{job.id}").status_code == 404


def test_counts_cron_and_trigger(env, staff):
    env.jobs.enqueue_many([Work(), Work()])
    assert staff.get(f"{MOUNT}counts").json() == {"default": {"available": 2}}
    (entry,) = staff.get(f"{MOUNT}cron").json()["cron"]
    assert entry["name"] == "nightly" and entry["schedule"] == "0 3 * * *"
    assert entry["next_run_at"].endswith("+00:00")
    triggered = staff.post(f"{MOUNT}cron/nightly/trigger").json()
    assert triggered["inserted"] is True and env.jobs.get(triggered["id"]) is not None
    missing = staff.post(f"{MOUNT}cron/nope/trigger")
    assert missing.status_code == 404 and "nightly" in missing.json()["message"]


def test_queues_pause_and_resume(env, staff):
    env.jobs.enqueue(Work())
    paused = staff.post(f"{MOUNT}queues/default/pause").json()
    no_limits = {
        "limits": {
            "global_concurrency": None,
            "rate_limit": None,
            "partition": None,
            "source": "settings",
        },
        "held": 0,
    }
    oldest = {"oldest_available": env.clock().isoformat()}
    assert paused == {
        "name": "default",
        "paused": True,
        "counts": {"available": 1},
        **no_limits,
        **oldest,
    }
    assert env.jobs.step().runs == []
    assert staff.get(f"{MOUNT}queues").json() == {
        "queues": [
            {"name": "default", "paused": True, "counts": {"available": 1}, **no_limits, **oldest},
            {
                "name": "mail",
                "paused": False,
                "counts": {},
                **no_limits,
                "oldest_available": None,
            },
        ]
    }
    resumed = staff.post(f"{MOUNT}queues/default/resume").json()
    assert resumed["paused"] is False
    assert len(env.jobs.step().runs) == 1
    create = {"data": {"create": True}, "content_type": "application/json"}
    slash = staff.post(f"{MOUNT}queues/reports/eu/pause", **create).json()
    assert slash["name"] == "reports/eu" and slash["paused"] is True
    # A name no store can hold: refused as such, whether or not the request asks to create it.
    assert staff.post(f"{MOUNT}queues/%00/pause").status_code == 400
    assert staff.post(f"{MOUNT}queues/%00/pause", **create).status_code == 400


def test_openapi_names_where_the_routes_are(env, staff):
    doc = staff.get(f"{MOUNT}openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    assert doc["servers"] == [{"url": "/ops/jobs"}]


# -- outages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("error", [StoreUnavailable("down"), OperationalError("gone")])
def test_a_store_outage_answers_503_with_retry_after(env, staff, monkeypatch, error):
    def broken(*args, **kwargs):
        raise error

    for method in ("counts", "list", "get", "retry", "paused_queues"):
        monkeypatch.setattr(env.store, method, broken)
    env.jobs.enqueue(Work())
    for method, url in (
        ("GET", "counts"),
        ("GET", "jobs"),
        ("GET", "jobs/1"),
        ("POST", "jobs/1/retry"),
        ("GET", "queues"),
    ):
        response = staff.generic(method, MOUNT + url)
        assert response.status_code == 503, (url, response.content)
        assert response["Retry-After"] == "5"
        assert response.json()["error"] == "store_unavailable"


# -- CSRF and ASGI ---------------------------------------------------------------------------


def test_csrf_is_enforced_on_post_and_delete_for_session_users(env, users):
    configure_admin(env)
    client = staff_client(users["staff"], enforce_csrf_checks=True)
    job = env.jobs.enqueue(Work())
    assert client.get(f"{MOUNT}jobs/{job.id}").status_code == 200  # reads need no token
    for method, url in (
        ("POST", f"jobs/{job.id}/cancel"),
        ("POST", "queues/default/pause"),
        ("POST", "cron/nightly/trigger"),
        ("DELETE", f"jobs/{job.id}"),
    ):
        refused = client.generic(method, MOUNT + url)
        assert refused.status_code == 403, (method, url)
    assert env.jobs.get(job.id).state == "available"
    assert env.jobs.queues()[0].paused is False
    # With the token (cookie + header, as Django's docs show for scripts), they go through.
    token = "a" * 32
    client.cookies["csrftoken"] = token
    ok = client.post(f"{MOUNT}jobs/{job.id}/cancel", headers={"X-CSRFToken": token})
    assert ok.status_code == 200 and ok.json()["state"] == "cancelled"
    assert client.delete(f"{MOUNT}jobs/{job.id}", headers={"X-CSRFToken": token}).status_code == 204


def test_the_routes_work_under_asgi(env, users):
    configure_admin(env)
    job = env.jobs.enqueue(Work())

    async def scenario() -> list[Any]:
        anonymous = AsyncClient()
        staff = AsyncClient()
        await staff.aforce_login(users["staff"])
        return [
            await anonymous.get(f"{MOUNT}jobs"),
            await staff.get(f"{MOUNT}jobs/{job.id}"),
            await staff.post(f"{MOUNT}jobs/{job.id}/cancel"),
            await staff.put(f"{MOUNT}jobs"),
            await staff.get(f"{MOUNT}queues"),
        ]

    answers = async_to_sync(scenario)()
    assert [a.status_code for a in answers] == [401, 200, 200, 405, 200]
    assert answers[2].json()["state"] == "cancelled"
