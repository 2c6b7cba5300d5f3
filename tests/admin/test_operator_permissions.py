"""Permissions per action and the operators' audit log, through Django's test client on the
memory and SQLite stores: a user holding only ``anole_jobs.view_job`` sees every page and
route but every write answers 403; ``change_job`` without ``delete_job`` acts but cannot
delete nor act in bulk; a staff user holding no job permission keeps full access. Every
surface records its actions (who, what, which target, from where), shown by ``GET /audit``,
``jobs audit`` and the dashboard's Audit page; worker controls go through the same rules."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command

from anole_jobs.admin_api.routes import ROUTES
from tests.admin.support import MOUNT, configure_admin
from tests.admin.test_routes import url_of
from tests.contract.test_workers import worker
from tests.sampleapp.jobs import Work
from tests.support.clients import logged_in, make_staff

pytestmark = pytest.mark.django_db(databases=["default"])
STORES = pytest.mark.parametrize("env", ["memory", "sqlite"], indirect=True)
DASHBOARD = MOUNT + "dashboard/"


def user_with(name: str, *needs: str) -> Any:
    user = make_staff(name)
    for need in needs:
        user.user_permissions.add(Permission.objects.get(codename=f"{need}_job"))
    return user


def ask(client, method, url):
    return getattr(client, method.lower())(url, content_type="application/json")


@STORES
def test_a_view_only_user_reads_every_route_and_is_refused_every_write(env):
    configure_admin(env)
    client = logged_in(user_with("viewer", "view"))
    writes = 0
    for route in ROUTES:
        for operation in route.operations:
            response = ask(client, operation.method, url_of(route, env))
            if operation.method == "GET":
                assert response.status_code == operation.ok, (route.path, response.content)
            else:
                writes += 1
                assert response.status_code == 403, (route.path, response.content)
                assert response.json()["error"] == "permission_denied"
    assert writes >= 12
    assert env.jobs.audit() == []  # nothing was done, so nothing recorded


@STORES
def test_change_without_delete_acts_but_neither_deletes_nor_acts_in_bulk(env):
    configure_admin(env)
    client = logged_in(user_with("changer", "view", "change"))
    job = env.jobs.enqueue(Work())
    assert client.post(f"{MOUNT}jobs/{job.id}/cancel").status_code == 200
    refused = client.delete(f"{MOUNT}jobs/{job.id}")
    assert refused.status_code == 403 and "delete_job" in refused.json()["message"]
    assert client.post(f"{MOUNT}bulk/retry?kind=test.work").status_code == 403
    assert env.jobs.get(job.id) is not None
    # The dashboard: the same rule (its delete and bulk pages need delete_job).
    assert client.post(f"{DASHBOARD}jobs/{job.id}/delete").status_code == 403
    assert client.post(f"{DASHBOARD}bulk/cancel?kind=test.work").status_code == 403
    assert client.post(f"{DASHBOARD}jobs/{job.id}/retry").status_code == 302
    # With delete_job as well, it deletes.
    deleter = logged_in(user_with("deleter", "view", "change", "delete"))
    assert deleter.delete(f"{MOUNT}jobs/{job.id}").status_code == 204
    assert env.jobs.get(job.id) is None


@STORES
def test_the_dashboard_refuses_a_view_only_users_actions_but_shows_every_page(env):
    configure_admin(env)
    client = logged_in(user_with("viewer", "view"))
    job = env.jobs.enqueue(Work())
    record = worker(env)
    env.store.record_worker(record)
    for page in ("", "jobs/", f"jobs/{job.id}/", "workers/", "audit/", "errors/", "kinds/"):
        assert client.get(DASHBOARD + page).status_code == 200, page
    for action in (
        f"jobs/{job.id}/retry",
        f"jobs/{job.id}/cancel",
        f"jobs/{job.id}/delete",
        "queues/default/pause",
        f"workers/{record.id}/quiet",
        f"workers/{record.id}/stop",
        "bulk/cancel?kind=test.work",
    ):
        response = client.post(DASHBOARD + action)
        assert response.status_code == 403, action
        assert "anole_jobs." in response.content.decode()
    assert env.jobs.get(job.id).state == "available"
    assert env.store.worker_control(record.id) is None


@STORES
def test_a_staff_user_without_job_permissions_keeps_every_action(env):
    configure_admin(env)
    client = logged_in(make_staff("plain-staff"))
    job = env.jobs.enqueue(Work())
    assert client.delete(f"{MOUNT}jobs/{job.id}").status_code == 204


@STORES
def test_worker_controls_from_the_route_and_the_dashboard_are_recorded(env):
    configure_admin(env)
    client = logged_in(make_staff("ops2"))
    record = worker(env)
    env.store.record_worker(record)
    answer = client.post(f"{MOUNT}workers/{record.id}/quiet")
    assert answer.status_code == 200
    assert answer.json() == {
        "worker": record.id,
        "action": "quiet",
        "by": "ops2",
        "surface": "route",
    }
    listed = client.get(f"{MOUNT}workers").json()["workers"][0]
    assert listed["control"]["action"] == "quiet" and listed["control"]["by"] == "ops2"
    page = client.get(f"{DASHBOARD}workers/").content.decode()
    assert "quiet" in page and "asked by <bdi>ops2</bdi> (route)" in page
    # The dashboard's Stop asks first (a GET shows a confirmation), then POSTs.
    confirm = client.get(f"{DASHBOARD}workers/{record.id}/stop")
    assert confirm.status_code == 200 and "Stop the worker" in confirm.content.decode()
    done = client.post(f"{DASHBOARD}workers/{record.id}/stop")
    assert done.status_code == 302
    assert env.store.worker_control(record.id).action == "stop"
    assert client.post(f"{MOUNT}workers/nobody:1:x/stop").status_code == 404
    actions = [(e.action, e.actor, e.surface) for e in env.jobs.audit()]
    assert actions == [("worker_stop", "ops2", "dashboard"), ("worker_quiet", "ops2", "route")]


@STORES
def test_every_surface_records_its_actions_in_the_audit_log(env):
    configure_admin(env)
    client = logged_in(make_staff("ops3"))
    job = env.jobs.enqueue(Work())
    assert client.post(f"{MOUNT}jobs/{job.id}/cancel").status_code == 200
    assert client.post(f"{DASHBOARD}jobs/{job.id}/retry").status_code == 302
    assert client.post(f"{DASHBOARD}queues/default/pause").status_code == 302
    call_command("jobs", "resume", "default", stdout=StringIO())
    assert client.post(f"{MOUNT}bulk/cancel?kind=test.work").status_code == 200
    entries = client.get(f"{MOUNT}audit").json()["entries"]
    assert [(e["action"], e["actor"], e["surface"], e["target"]) for e in entries] == [
        ("bulk_cancel", "ops3", "route", "1 jobs matching a filter"),
        ("resume", "cli", "cli", "queue default"),
        ("pause", "ops3", "dashboard", "queue default"),
        ("retry", "ops3", "dashboard", f"job {job.id}"),
        ("cancel", "ops3", "route", f"job {job.id}"),
    ]
    only = client.get(f"{MOUNT}audit?action=pause&limit=1").json()
    assert [e["action"] for e in only["entries"]] == ["pause"]
    assert client.get(f"{MOUNT}audit?limit=x").status_code == 400
    out = StringIO()
    call_command("jobs", "audit", "--json", "--action", "retry", stdout=out)
    assert [e["target"] for e in json.loads(out.getvalue())["entries"]] == [f"job {job.id}"]
    page = client.get(f"{DASHBOARD}audit/?action=pause").content.decode()
    assert "queue default" in page and "ops3" in page and "bulk_cancel</td>" not in page


@pytest.mark.parametrize("env", ["sqlite"], indirect=True)
def test_the_django_admin_records_its_actions_and_needs_delete_for_deletes(env):
    configure_admin(env)
    job = env.jobs.enqueue(Work())
    changer = logged_in(user_with("admin-changer", "view", "change"))
    changelist = "/admin/anole_jobs/job/"
    form = {"action": "retry_jobs", "_selected_action": [str(job.id)]}
    assert changer.post(changelist, form).status_code == 302
    form = {"action": "delete_jobs", "_selected_action": [str(job.id)]}
    changer.post(changelist, form)
    assert env.jobs.get(job.id) is not None  # no delete_job: the action is not offered
    ((action, actor, surface),) = [(e.action, e.actor, e.surface) for e in env.jobs.audit()]
    assert (action, actor, surface) == ("retry", "admin-changer", "admin")
