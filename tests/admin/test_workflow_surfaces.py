"""Every surface shows workflows (docs/workflows.md): the JSON routes ``GET /workflows/<id>``
and ``POST /workflows/<id>/cancel`` (and their OpenAPI), ``GET /jobs?workflow=``, the CLI's
``jobs workflow ID`` and ``jobs list --workflow``, the dashboard's workflow page (its steps as
an SVG graph, linked from each step's job page), and the step fields of every job payload."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from anole_jobs import Workflow
from anole_jobs.admin_api.openapi import document
from tests.admin.support import MOUNT
from tests.sampleapp.workflow_jobs import Step

pytestmark = pytest.mark.django_db(databases=["default"])
BOARD = MOUNT + "dashboard/"


def diamond(env, first="ok"):
    wf = Workflow("<b>feed</b> import")
    a = wf.add(Step("a", first), name="fetch <1>")
    b = wf.add(Step("b"), name="parse", after=[a])
    c = wf.add(Step("c"), name="thumbs", after=[a])
    wf.add(Step("d"), name="publish", after=[b, c])
    return env.jobs.enqueue_workflow(wf)


def test_the_json_routes_show_and_cancel_a_workflow(env, staff):
    created = diamond(env)
    env.jobs.step()
    body = staff.get(f"{MOUNT}workflows/{created.id}").json()
    assert body["id"] == created.id and body["name"] == "<b>feed</b> import"
    assert body["state"] == "running"
    assert body["counts"] == {"pending": 1, "available": 2, "completed": 1}
    assert body["dependencies"]["publish"] == ["parse", "thumbs"]
    step = body["steps"]["parse"]
    assert step["id"] == created.jobs["parse"] and step["state"] == "available"
    assert (step["workflow_id"], step["step_name"]) == (created.id, "parse")
    cancelled = staff.post(f"{MOUNT}workflows/{created.id}/cancel").json()
    assert cancelled["state"] == "cancelled"
    assert cancelled["counts"] == {"completed": 1, "cancelled": 3}
    for path in ("workflows/nope", "workflows/nope/cancel", "workflows/" + "x" * 101):
        method = staff.post if path.endswith("cancel") else staff.get
        response = method(MOUNT + path)
        assert response.status_code == 404 and response.json()["error"] == "not_found", path
    plain = env.jobs.enqueue(Step()).id
    job = staff.get(f"{MOUNT}jobs/{plain}").json()
    assert job["workflow_id"] is None and job["step_name"] is None


def test_the_jobs_route_filters_by_workflow(env, staff):
    created = diamond(env)
    diamond(env)
    listed = staff.get(f"{MOUNT}jobs", {"workflow": created.id}).json()["jobs"]
    assert sorted(job["id"] for job in listed) == sorted(created.jobs.values())
    assert staff.get(f"{MOUNT}jobs", {"workflow": created.id, "state": "pending"}).json()[
        "jobs"
    ] == [job for job in listed if job["state"] == "pending"]
    assert staff.get(f"{MOUNT}jobs", {"workflow": ""}).status_code == 400


def test_openapi_documents_the_workflow_routes_and_the_pending_state():
    doc = document()
    assert set(doc["paths"]["/workflows/{workflow_id}"]["x-allow"]) == {"GET", "HEAD"}
    assert "post" in doc["paths"]["/workflows/{workflow_id}/cancel"]
    schemas = doc["components"]["schemas"]
    assert "pending" in schemas["Job"]["properties"]["state"]["enum"]
    assert {"workflow_id", "step_name"} <= set(schemas["Job"]["properties"])
    assert schemas["Workflow"]["properties"]["state"]["enum"] == [
        "running",
        "completed",
        "failed",
        "cancelled",
    ]
    filters = {p["name"] for p in doc["paths"]["/jobs"]["get"]["parameters"]}
    assert "workflow" in filters


def test_the_cli_shows_lists_and_cancels_a_workflow(env, staff):
    created = diamond(env)
    out = StringIO()
    call_command("jobs", "workflow", created.id, stdout=out)
    text = out.getvalue()
    assert f"workflow {created.id}  <b>feed</b> import  (running)" in text
    assert "steps         3 pending, 1 available" in text
    lines = {line.split()[0]: line for line in text.splitlines()[4:]}
    assert lines["publish"].split()[2:] == ["pending", "parse,", "thumbs"]
    out = StringIO()
    call_command("jobs", "workflow", created.id, "--json", stdout=out)
    assert json.loads(out.getvalue())["steps"]["parse"]["state"] == "pending"
    out = StringIO()
    call_command("jobs", "list", "--workflow", created.id, "--json", stdout=out)
    assert len(json.loads(out.getvalue())["jobs"]) == 4
    out = StringIO()
    call_command("jobs", "show", str(created.jobs["parse"]), stdout=out)
    assert f"workflow      {created.id}  step parse" in out.getvalue()
    out = StringIO()
    call_command("jobs", "workflow", created.id, "--cancel", stdout=out)
    assert "(cancelled)" in out.getvalue()
    with pytest.raises(CommandError, match="no workflow with id 'nope'"):
        call_command("jobs", "workflow", "nope")


def test_the_dashboard_draws_a_workflow_and_links_it_from_its_steps(env, staff):
    created = diamond(env, first="fail")
    env.jobs.step()
    html = staff.get(f"{BOARD}workflows/{created.id}/").content.decode()
    assert "<svg" in html and html.count("<rect") == 4 and html.count("<line") == 4
    assert "&lt;b&gt;feed&lt;/b&gt; import" in html and "<b>feed" not in html  # escaped
    assert 'aria-label="Step fetch &lt;1&gt;: dead"' in html
    assert 'aria-label="Step publish: cancelled"' in html
    assert f'href="{BOARD}jobs/{created.jobs["parse"]}/"' in html
    assert "state-failed" in html
    job_page = staff.get(f"{BOARD}jobs/{created.jobs['parse']}/").content.decode()
    assert f'href="{BOARD}workflows/{created.id}/"' in job_page and "step <strong>parse" in job_page
    assert staff.get(f"{BOARD}workflows/nope/").status_code == 404
    assert staff.get(f"{BOARD}jobs/?workflow={created.id}").status_code == 200


def test_the_dashboard_cancels_a_workflow(env, staff):
    created = diamond(env)
    page = staff.get(f"{BOARD}workflows/{created.id}/").content.decode()
    assert "Cancel workflow" in page
    response = staff.post(f"{BOARD}workflows/{created.id}/cancel", follow=True)
    assert response.status_code == 200
    assert env.jobs.workflow(created.id).state == "cancelled"
    assert "Cancel workflow" not in response.content.decode()
    assert staff.post(f"{BOARD}workflows/nope/cancel").status_code == 404
