"""Offloaded args and results (docs/offload.md) show on every surface as if stored inline: the
JSON routes, the CLI, the dashboard and the Django admin."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from anole_jobs import offload
from tests.admin.support import MOUNT
from tests.sampleapp.result_jobs import Returns

pytestmark = pytest.mark.django_db(databases=["default"])
BIG = "y" * 3000
VALUE = json.dumps({"big": BIG})


@pytest.fixture
def completed(env, settings):
    settings.STORAGES = {
        **settings.STORAGES,
        "jobs_payloads": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }
    env.configure(OFFLOAD={"storage": "jobs_payloads", "over": 1000})
    job_id = env.jobs.enqueue(Returns(value=VALUE)).id
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    stored = env.jobs.service.store.get(job_id)
    assert offload.is_ref(stored.args) and offload.is_ref(stored.result)
    return job_id


def test_the_routes_and_the_cli_show_offloaded_values_inline(env, staff, completed):
    body = staff.get(f"{MOUNT}jobs/{completed}").json()
    assert body["args"]["value"] == VALUE and body["result"] == {"big": BIG}
    out = StringIO()
    call_command("jobs", "show", str(completed), "--json", stdout=out)
    shown = json.loads(out.getvalue())
    assert shown["args"]["value"] == VALUE and shown["result"] == {"big": BIG}


def test_the_dashboard_and_the_admin_show_offloaded_values_inline(env, staff, completed):
    html = staff.get(f"{MOUNT}dashboard/jobs/{completed}/").content.decode()
    assert BIG in html and offload.REF not in html
    if env.alias is not None:
        html = staff.get(f"/admin/anole_jobs/job/{completed}/change/").content.decode()
        assert BIG in html and offload.REF not in html
