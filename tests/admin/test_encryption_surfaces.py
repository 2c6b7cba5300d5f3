"""A job stored encrypted (docs/encryption.md) shows as ``{"encrypted": true}`` on every
operator surface — the JSON routes, the CLI, the dashboard and the Django admin — even in a
process that has the keys, and no surface shows its plaintext."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from tests.admin.support import MOUNT
from tests.sampleapp import secret_jobs

pytest.importorskip("cryptography")
from cryptography.fernet import Fernet  # noqa: E402

pytestmark = pytest.mark.django_db(databases=["default"])
KEY = Fernet.generate_key().decode()
PLAIN = "078-05-1120"
SHOWN = {"encrypted": True}


@pytest.fixture
def completed(env):
    Secret = secret_jobs.declare()
    env.configure(ENCRYPTION_KEYS=[KEY])
    job_id = env.jobs.enqueue(Secret(ssn=PLAIN)).id
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    assert env.jobs.result(job_id) == {"echo": PLAIN}
    yield job_id
    secret_jobs.forget()


def test_the_json_routes_show_encrypted(env, staff, completed):
    body = staff.get(f"{MOUNT}jobs/{completed}").json()
    assert (body["args"], body["result"]) == (SHOWN, SHOWN)
    listing = staff.get(f"{MOUNT}jobs").content.decode()
    assert PLAIN not in listing
    (listed,) = [job for job in json.loads(listing)["jobs"] if job["id"] == completed]
    assert (listed["args"], listed["result"]) == (SHOWN, SHOWN)
    searched = staff.get(f"{MOUNT}jobs", {"args": json.dumps({"ssn": PLAIN})}).json()
    assert searched["jobs"] == []


def test_the_cli_shows_encrypted(env, staff, completed):
    for args in (("show", str(completed)), ("show", str(completed), "--json"), ("list",)):
        out = StringIO()
        call_command("jobs", *args, stdout=out)
        assert PLAIN not in out.getvalue()
    out = StringIO()
    call_command("jobs", "show", str(completed), "--json", stdout=out)
    shown = json.loads(out.getvalue())
    assert (shown["args"], shown["result"]) == (SHOWN, SHOWN)


def test_the_dashboard_shows_encrypted(env, staff, completed):
    html = staff.get(f"{MOUNT}dashboard/jobs/{completed}/").content.decode()
    assert PLAIN not in html and "&quot;encrypted&quot;: true" in html
    assert PLAIN not in staff.get(f"{MOUNT}dashboard/jobs/").content.decode()


def test_the_django_admin_shows_encrypted(env, staff, completed):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")
    html = staff.get(f"/admin/anole_jobs/job/{completed}/change/").content.decode()
    assert PLAIN not in html and "&quot;encrypted&quot;: true" in html
    assert "&quot;token&quot;" not in html
