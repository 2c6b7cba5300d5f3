"""A ``django.tasks`` job is named by its task on every surface, on every store: the JSON
routes' and ``--json``'s ``display_kind``, the CLI's table and ``show``, the Django admin's
list (the dashboard's pages: tests/dashboard/test_live.py). Its `kind` stays ``django.tasks``,
so the kind filter still matches it; any other kind is shown as it is."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from anole_jobs.admin_api.openapi import document
from anole_jobs.operations.display import TASK_KIND, display_kind
from anole_jobs.tasks import TASK_KIND as TASKS_OWN_KIND
from tests.admin.support import MOUNT
from tests.sampleapp import tasks
from tests.sampleapp.jobs import Work

pytestmark = pytest.mark.django_db(databases=["default"])
SHOWN = "django.tasks: tests.sampleapp.tasks.add"


def cli(*args: str) -> str:
    out = StringIO()
    call_command("jobs", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_rule():
    assert TASK_KIND == TASKS_OWN_KIND
    assert (
        display_kind("django.tasks", {"task": "app.tasks.send"}) == "django.tasks: app.tasks.send"
    )
    assert display_kind("billing.refund", {"task": "app.tasks.send"}) == "billing.refund"
    # A task job whose arguments lack a usable path is shown by its kind.
    for args in ({}, {"task": ""}, {"task": 3}, ["app.tasks.send"], None):
        assert display_kind("django.tasks", args) == "django.tasks"


def test_the_json_routes_and_the_cli_name_the_task(env, staff):
    task_job = int(tasks.add.enqueue(1, 2).id)
    work = env.jobs.enqueue(Work()).id
    body = staff.get(f"{MOUNT}jobs/{task_job}").json()
    assert (body["kind"], body["display_kind"]) == ("django.tasks", SHOWN)
    listed = staff.get(f"{MOUNT}jobs", {"kind": "django.tasks"}).json()["jobs"]
    assert [(job["id"], job["display_kind"]) for job in listed] == [(task_job, SHOWN)]
    assert staff.get(f"{MOUNT}jobs/{work}").json()["display_kind"] == "test.work"

    (shown,) = [json.loads(line) for line in cli("show", str(task_job), "--json").splitlines()]
    assert shown == body
    table = cli("list", "--kind", "django.tasks")
    assert SHOWN in table and "test.work" not in table
    assert cli("show", str(task_job)).startswith(f"job {task_job}  {SHOWN}  (available)")


def test_the_openapi_document_describes_display_kind():
    job = document()["components"]["schemas"]["Job"]
    assert "display_kind" in job["required"]
    assert job["properties"]["display_kind"]["type"] == "string"


def test_the_django_admin_list_names_the_task(env, staff):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    tasks.add.enqueue(1, 2)
    html = staff.get("/admin/anole_jobs/job/").content.decode()
    assert f'<td class="field-kind_shown">{SHOWN}</td>' in html
    by_kind = staff.get("/admin/anole_jobs/job/", {"kind": "django.tasks"}).content.decode()
    assert SHOWN in by_kind
