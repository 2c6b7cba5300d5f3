"""Every surface shows a completed job's result (docs/results.md): the JSON routes (and their
OpenAPI schema), the CLI's ``jobs show``, the dashboard's job page (indented JSON) and the
Django admin's change page (read-only), on every store where the store takes part."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from anole_jobs.admin_api.openapi import document
from tests.admin.support import MOUNT
from tests.sampleapp.result_jobs import Returns

pytestmark = pytest.mark.django_db(databases=["default"])
VALUE = {"rows": 3, "note": "<b>bold</b>", "list": [1, 2]}


def completed(env, value=VALUE) -> int:
    job_id = env.jobs.enqueue(Returns(value=json.dumps(value))).id
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    return job_id


def test_the_json_routes_show_the_result(env, staff):
    job_id = completed(env)
    waiting = env.jobs.enqueue(Returns(), delay=60).id
    assert staff.get(f"{MOUNT}jobs/{job_id}").json()["result"] == VALUE
    assert staff.get(f"{MOUNT}jobs/{waiting}").json()["result"] is None
    listed = {job["id"]: job for job in staff.get(f"{MOUNT}jobs").json()["jobs"]}
    assert listed[job_id]["result"] == VALUE
    schema = document()["components"]["schemas"]["Job"]["properties"]
    assert "result" in schema and "type" not in schema["result"]  # any JSON value


def test_the_cli_shows_the_result(env, staff):
    job_id = completed(env)
    out = StringIO()
    call_command("jobs", "show", str(job_id), stdout=out)
    text = out.getvalue()
    # Indented JSON (PostgreSQL's jsonb keeps keys in its own order, not the handler's).
    assert 'result        {\n    "' in text and '\n    "rows": 3' in text
    out = StringIO()
    call_command("jobs", "show", str(job_id), "--json", stdout=out)
    assert json.loads(out.getvalue())["result"] == VALUE
    none = completed(env, None)
    out = StringIO()
    call_command("jobs", "show", str(none), stdout=out)
    assert "result        none (the handler returned None)" in out.getvalue()


def test_the_dashboard_job_page_shows_the_result_as_indented_json(env, staff):
    job_id = completed(env)
    html = staff.get(f"{MOUNT}dashboard/jobs/{job_id}/").content.decode()
    assert "<h2>Result</h2>" in html
    assert "\n  &quot;rows&quot;: 3" in html  # indented JSON
    assert "&quot;note&quot;: &quot;&lt;b&gt;bold&lt;/b&gt;&quot;" in html
    assert "<b>bold</b>" not in html  # escaped
    none = completed(env, None)
    html = staff.get(f"{MOUNT}dashboard/jobs/{none}/").content.decode()
    assert "None: the handler returned nothing." in html
    waiting = env.jobs.enqueue(Returns(), delay=60).id
    assert "<h2>Result</h2>" not in staff.get(f"{MOUNT}dashboard/jobs/{waiting}/").content.decode()


def test_the_django_admin_change_page_shows_the_result_read_only(env, staff):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    job_id = completed(env)
    html = staff.get(f"/admin/anole_jobs/job/{job_id}/change/").content.decode()
    assert "&quot;rows&quot;: 3" in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert 'name="result"' not in html  # read-only, not a form field
