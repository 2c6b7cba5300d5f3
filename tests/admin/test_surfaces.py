"""What each surface answers through the operations layer: bad input, unknown ids and names,
a store that does not answer, actions that change nothing, mistyped queue names ("did you
mean", and create for a new one), a trailing slash under the JSON routes, the OpenAPI security
and the dashboard's login page. On every store where the store takes part."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.test import Client

from anole_jobs.admin_api.openapi import document
from anole_jobs.errors import StoreUnavailable
from tests.admin.support import MOUNT
from tests.sampleapp.jobs import Work

pytestmark = pytest.mark.django_db(databases=["default"])
BOARD = MOUNT + "dashboard/"
ROOT = Path(__file__).resolve().parents[2]
JSON = {"content_type": "application/json"}


def store_down(env, monkeypatch, error=None):
    def broken(*args, **kwargs):
        raise error or StoreUnavailable("connection refused")

    for method in ("counts", "list", "get", "retry", "cancel", "delete", "paused_queues", "pause"):
        monkeypatch.setattr(env.store, method, broken)


def cli(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("jobs", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    return subprocess.run(
        [sys.executable, "-m", "django", "jobs", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


# -- the CLI -----------------------------------------------------------------------------------


def test_cli_says_when_an_action_changed_nothing(env, staff):
    job = env.jobs.enqueue(Work()).id
    assert cli("cancel", str(job))[0].strip() == f"job {job} cancelled: cancelled"
    out, err = cli("cancel", str(job))  # no SystemExit: exit status 0
    assert out.strip() == f"job {job} not cancelled: nothing changed (it is cancelled)"
    assert err == ""
    assert "nothing changed (it was paused)" in (cli("pause", "mail"), cli("pause", "mail"))[1][0]


def test_cli_refuses_a_mistyped_queue_with_did_you_mean(env, staff):
    with pytest.raises(CommandError) as raised:
        cli("pause", "mial")
    assert raised.value.returncode == 1
    assert "did you mean 'mail'?" in str(raised.value) and "--create" in str(raised.value)
    assert [q.name for q in env.jobs.queues()] == ["default", "mail"]
    with pytest.raises(CommandError, match="did you mean 'default'"):
        cli("resume", "defualt")
    assert cli("pause", "bulk", "--create")[0].startswith("queue bulk: paused")


def test_cli_answers_an_outage_with_exit_1_and_one_line(env, staff, monkeypatch):
    job = env.jobs.enqueue(Work()).id
    store_down(env, monkeypatch)
    for args in (
        ("list",),
        ("show", str(job)),
        ("cancel", str(job)),
        ("counts",),
        ("pause", "mail"),
    ):
        with pytest.raises(CommandError) as raised:
            cli(*args)
        assert raised.value.returncode == 1, args
        assert str(raised.value).startswith("the jobs store did not answer"), args
        assert "\n" not in str(raised.value)


def test_cli_in_a_real_process_refuses_a_mistyped_queue_and_a_hostile_after():
    done = run_cli("pause", "defualt")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "no queue named 'defualt'" in line and "did you mean 'default'?" in line
    bad = run_cli("list", "--after", "²")
    assert bad.returncode == 2 and "after must be a job id" in bad.stderr
    assert "Traceback" not in bad.stderr


# -- the JSON routes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "hint"),
    [("jobs/", "jobs"), ("counts/", "counts"), ("queues/mail/pause/", "queues/mail/pause")],
)
def test_a_trailing_slash_answers_404_with_the_path_without_it(env, staff, path, hint):
    response = staff.get(MOUNT + path)
    assert response.status_code == 404
    body = response.json()
    assert body["error"] == "not_found" and body["hint"] == MOUNT + hint
    assert repr(MOUNT + hint) in body["message"]


def test_an_unknown_path_gets_no_hint(env, staff):
    body = staff.get(MOUNT + "nope/").json()
    assert body["error"] == "not_found" and "hint" not in body


def test_json_refuses_a_mistyped_queue_and_creates_on_request(env, staff):
    refused = staff.post(f"{MOUNT}queues/mial/pause")
    assert refused.status_code == 404
    body = refused.json()
    assert body["error"] == "unknown_queue" and "did you mean 'mail'?" in body["message"]
    assert '{"create": true}' in body["message"]
    created = staff.post(f"{MOUNT}queues/mial/pause", {"create": True}, **JSON)
    assert created.status_code == 200 and created.json()["paused"] is True
    nested_too_deep = "[" * 5000  # the JSON parser's recursion limit
    for bad in ('{"create": "yes"}', "[]", "not json", '{"create": true, "x": 1}', nested_too_deep):
        response = staff.post(f"{MOUNT}queues/mail/pause", bad, **JSON)
        assert response.status_code == 400, bad[:20]
    assert staff.post(f"{MOUNT}queues/mail/pause", {"create": "maybe"}).status_code == 400


def test_json_answers_an_outage_on_every_write_with_503(env, staff, monkeypatch):
    job = env.jobs.enqueue(Work()).id
    store_down(env, monkeypatch, OperationalError("gone"))
    for method, url in (
        ("POST", f"jobs/{job}/cancel"),
        ("DELETE", f"jobs/{job}"),
        ("POST", "queues/mail/pause"),
        ("GET", "jobs?after=5"),
    ):
        response = staff.generic(method, MOUNT + url)
        assert response.status_code == 503, (url, response.content)
        assert response["Retry-After"] == "5"


def test_openapi_declares_the_session_cookie_and_the_csrf_header():
    doc = document()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["sessionCookie"] == {
        **schemes["sessionCookie"],
        "type": "apiKey",
        "in": "cookie",
        "name": "sessionid",
    }
    assert schemes["csrfToken"]["in"] == "header" and schemes["csrfToken"]["name"] == "X-CSRFToken"
    assert doc["security"] == [{"sessionCookie": [], "csrfToken": []}]
    assert doc["paths"]["/jobs"]["get"]["security"] == [{"sessionCookie": []}]
    assert "security" not in doc["paths"]["/jobs/{job_id}/cancel"]["post"]  # the global one
    body = doc["paths"]["/queues/{name}/pause"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"]["$ref"].endswith("/QueueAction")


# -- the dashboard -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "status", "text"),
    [
        ("jobs/?after=²", 400, "after must be a job id"),
        ("jobs/?after=99999999999999999999", 400, "after must be a job id"),
        ("jobs/?after=-1", 400, "after must be a job id"),
        ("jobs/?limit=1e3", 400, "limit must be a whole number"),
        ("jobs/?state=lost", 400, "unknown state"),
        ("jobs/?workflow=" + "x" * 101, 400, "workflow must be a workflow id"),
        ("jobs/?surprise=1", 400, "unknown parameter"),
        ("jobs/99999999999999999999/", 404, "no job with id"),
        ("jobs/²/", 404, "no job with id"),
        ("jobs/0/", 404, "no job with id"),
        ("jobs/-1/", 404, "no job with id"),
        ("jobs/1e3/", 404, "no job with id"),
    ],
)
def test_the_dashboard_answers_bad_input_with_a_page_and_its_status(env, staff, url, status, text):
    response = staff.get(BOARD + url)
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("text/html")
    assert text in response.content.decode()


def test_the_dashboard_posts_answer_404_for_hostile_ids_and_names(env, staff):
    for path in ("jobs/99999999999999999999/retry", "jobs/²/cancel", "jobs/0/delete"):
        assert staff.post(BOARD + path).status_code == 404, path
    assert staff.post(BOARD + "cron/nope/trigger").status_code == 404
    refused = staff.post(BOARD + "queues/mial/pause")
    assert refused.status_code == 404 and "did you mean &#x27;mail&#x27;?" in refused.text


def test_the_dashboard_shows_and_pauses_a_queue_with_a_slash(env, staff):
    env.configure(QUEUES={"default": {}, "reports/eu": {}})
    page = staff.get(BOARD)
    assert page.status_code == 200
    action = f"{BOARD}queues/reports/eu/pause"
    assert f'action="{action}"' in page.text
    assert staff.post(action).status_code == 302
    assert [q.paused for q in env.jobs.queues() if q.name == "reports/eu"] == [True]


def test_the_dashboard_says_when_an_action_changed_nothing(env, staff):
    job = env.jobs.enqueue(Work()).id
    staff.post(f"{BOARD}jobs/{job}/cancel")
    again = staff.post(f"{BOARD}jobs/{job}/cancel")
    assert again["Location"] == f"{BOARD}jobs/{job}/"  # the notice is a message, not the URL
    assert "Nothing changed" in staff.get(again["Location"]).text
    assert "Nothing changed" not in staff.get(again["Location"]).text  # shown once


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", ""),
        ("GET", "jobs/"),
        ("GET", "jobs/1/"),
        ("POST", "jobs/1/retry"),
        ("POST", "jobs/1/cancel"),
        ("POST", "jobs/1/delete"),
        ("POST", "queues/mail/pause"),
    ],
)
def test_the_dashboard_answers_an_outage_with_a_503_page(env, staff, monkeypatch, method, path):
    env.jobs.enqueue(Work())
    store_down(env, monkeypatch)
    response = staff.generic(method, BOARD + path)
    assert response.status_code == 503, response.content[:300]
    assert response["Retry-After"] == "5"
    assert "The jobs store did not answer" in response.text


def raising_permission(request):
    raise RuntimeError("the permission service is down")


def test_a_raising_permission_refuses_on_the_dashboard_and_the_routes(env, users):
    env.configure(ADMIN_PERMISSION="tests.admin.test_surfaces.raising_permission")
    anonymous = Client()
    assert anonymous.get(BOARD).status_code == 302
    assert anonymous.get(MOUNT + "jobs").status_code == 401
    client = Client()
    client.force_login(users["staff"])
    assert client.get(BOARD).status_code == 403
    assert client.get(MOUNT + "jobs").status_code == 403


def test_anonymous_visitors_go_to_the_admin_login_when_login_url_is_the_default(env, settings):
    assert not settings.is_overridden("LOGIN_URL")  # tests/settings.py leaves it, as startproject
    response = Client().get(BOARD + "jobs/")
    assert response.status_code == 302
    assert response["Location"] == f"/admin/login/?next={BOARD}jobs/"


def test_anonymous_visitors_go_to_the_login_url_a_project_sets(env, settings):
    settings.LOGIN_URL = "/sign-in/"
    assert Client().get(BOARD)["Location"] == f"/sign-in/?next={BOARD}"


# -- the Django admin (the database stores) ----------------------------------------------------

CHANGELIST = "/admin/anole_jobs/job/"


@pytest.mark.parametrize(
    "path",
    ["99999999999999999999/change/", "²/change/", "-1/change/", "0/change/", "1e3/change/"],
)
def test_the_django_admin_answers_hostile_ids_without_a_server_error(env, staff, path):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    response = staff.get(CHANGELIST + path, follow=True)
    assert response.status_code == 200  # Django's "does not exist" redirect to the list
    for term in ("²", "99999999999999999999", "-1"):
        assert staff.get(CHANGELIST, {"q": term}).status_code == 200


def test_the_django_admin_answers_an_outage_with_a_503_page(env, staff, monkeypatch):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    from django.contrib import admin

    from anole_jobs.stores.database.models import Job

    job = env.jobs.enqueue(Work()).id
    model_admin = admin.site._registry[Job]

    def broken(request):
        raise OperationalError("the database is gone")

    monkeypatch.setattr(model_admin, "get_queryset", broken)
    for url in (CHANGELIST, f"{CHANGELIST}{job}/change/"):
        response = staff.get(url)
        assert response.status_code == 503, url
        assert response["Retry-After"] == "5" and "did not answer" in response.text
    monkeypatch.undo()
    store_down(env, monkeypatch)
    response = staff.post(CHANGELIST, {"action": "cancel_jobs", "_selected_action": [str(job)]})
    assert response.status_code == 503 and response["Retry-After"] == "5"


def test_the_django_admin_counts_a_job_left_alone(env, staff):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    from django.contrib.messages import get_messages

    job = env.jobs.enqueue(Work()).id
    env.jobs.cancel(job)
    response = staff.post(
        CHANGELIST, {"action": "cancel_jobs", "_selected_action": [str(job)]}, follow=True
    )
    notes = [str(m) for m in get_messages(response.wsgi_request)]
    assert notes == ["Cancelled 0 jobs; 1 left as it was (already finished)."]
