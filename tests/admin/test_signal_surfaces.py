"""Signals from outside (docs/durable.md): ``POST /jobs/<id>/signals/<name>`` and
``manage.py jobs signal ID NAME [--payload JSON]``, on every store."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.admin.support import MOUNT, configure_admin
from tests.sampleapp.jobs import HOOKS, Work
from tests.support.clients import staff_client

pytestmark = pytest.mark.django_db(databases=["default"])
JSON = "application/json"


def waiting_job(env):
    got = []
    HOOKS["wait"] = lambda job, args: got.append(job.wait_for_signal("paid", timeout=3600))
    job = env.jobs.enqueue(Work(action="wait"))
    env.jobs.step()
    assert env.jobs.get(job.id).state == "scheduled"
    return job, got


def test_the_route_stores_a_signal_and_wakes_the_waiting_job(env, staff):
    job, got = waiting_job(env)
    url = f"{MOUNT}jobs/{job.id}/signals/paid"
    answer = staff.post(url, data={"charge": "ch_1"}, content_type=JSON)
    assert (answer.status_code, answer.json()) == (200, {"stored": True})
    assert env.jobs.get(job.id).state == "available"
    again = staff.post(url, data={"charge": "ch_2"}, content_type=JSON)
    assert (again.status_code, again.json()) == (200, {"stored": False})
    env.jobs.step()
    assert got == [{"charge": "ch_1"}]
    assert staff.post(f"{MOUNT}jobs/{job.id}/signals/late").json() == {"stored": False}


def test_the_route_answers_404_400_and_refuses_without_csrf(env, staff, users):
    job = env.jobs.enqueue(Work())
    assert staff.post(f"{MOUNT}jobs/999999/signals/paid").status_code == 404
    assert staff.post(f"{MOUNT}jobs/abc/signals/paid").status_code == 404
    too_long = "x" * 201
    assert staff.post(f"{MOUNT}jobs/{job.id}/signals/{too_long}").status_code == 400
    bad = staff.post(f"{MOUNT}jobs/{job.id}/signals/s", data="{", content_type=JSON)
    assert bad.status_code == 400
    assert staff.get(f"{MOUNT}jobs/{job.id}/signals/s").status_code == 405
    strict = staff_client(users["staff"], enforce_csrf_checks=True)
    assert strict.post(f"{MOUNT}jobs/{job.id}/signals/s").status_code == 403
    assert staff.post(f"{MOUNT}jobs/{job.id}/signals/s").json() == {"stored": True}


def test_the_route_needs_permission(env, users):
    from django.test import Client

    configure_admin(env)
    job = env.jobs.enqueue(Work())
    assert Client().post(f"{MOUNT}jobs/{job.id}/signals/s").status_code in (401, 403)
    assert env.store.durable_state(job.id).signals == {}


def test_the_cli_sends_a_signal(env):
    job, got = waiting_job(env)
    out = StringIO()
    call_command("jobs", "signal", str(job.id), "paid", "--payload", '{"a": 1}', stdout=out)
    assert "stored" in out.getvalue()
    assert env.jobs.get(job.id).state == "available"
    out = StringIO()
    call_command("jobs", "signal", str(job.id), "paid", "--json", stdout=out)
    assert json.loads(out.getvalue()) == {"stored": False}
    env.jobs.step()
    assert got == [{"a": 1}]
    with pytest.raises(CommandError):
        call_command("jobs", "signal", "999999", "paid", stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError):
        call_command("jobs", "signal", str(job.id), "x", "--payload", "{", stdout=StringIO())
