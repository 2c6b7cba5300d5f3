"""Why a job waits, on every surface: ``GET /jobs/<id>`` carries `waiting`, ``manage.py jobs
why ID`` prints it (``--json``: the route's `waiting`), and the dashboard's job page shows a
Waiting block whose link leads to the fix; ``GET /queues`` carries `oldest_available`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from tests.admin.support import MOUNT, configure_admin
from tests.sampleapp.jobs import Work
from tests.support.clients import staff_client

pytestmark = pytest.mark.django_db(databases=["default"])


@pytest.fixture
def staff(env, users) -> Client:
    configure_admin(env)
    return staff_client(users["staff"])


def cli(*args: str) -> str:
    out = StringIO()
    call_command("jobs", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_route_cli_and_page_agree_on_a_paused_queue(env, staff):
    job = env.jobs.enqueue(Work())
    env.jobs.pause("default")
    body = staff.get(f"{MOUNT}jobs/{job.id}").json()
    assert body["waiting"]["reason"] == "queue_paused"
    assert body["waiting"]["until"] is None
    printed = json.loads(cli("why", str(job.id), "--json"))
    assert printed == {"id": job.id, "waiting": body["waiting"]}
    assert cli("why", str(job.id)).startswith(f"job {job.id} waits: queue_paused: ")
    page = staff.get(f"{MOUNT}dashboard/jobs/{job.id}/").content.decode()
    assert 'aria-label="Waiting"' in page and "queue_paused" in page
    assert f'href="{MOUNT}dashboard/"' in page  # the queues page, where it is resumed


def test_a_scheduled_job_has_until_and_a_finished_one_waits_for_nothing(env, staff):
    job = env.jobs.enqueue(Work(), delay=60)
    waiting = staff.get(f"{MOUNT}jobs/{job.id}").json()["waiting"]
    assert waiting["reason"] == "scheduled"
    assert waiting["until"] == env.jobs.get(job.id).scheduled_at.isoformat()
    env.jobs.cancel(job.id)
    assert staff.get(f"{MOUNT}jobs/{job.id}").json()["waiting"] is None
    assert "is not waiting" in cli("why", str(job.id))
    page = staff.get(f"{MOUNT}dashboard/jobs/{job.id}/").content.decode()
    assert 'aria-label="Waiting"' not in page


def test_an_unknown_id_is_not_found_everywhere(env, staff):
    assert staff.get(f"{MOUNT}jobs/999999").status_code == 404
    with pytest.raises(CommandError) as raised:
        cli("why", "999999")
    assert raised.value.returncode == 1


def test_queues_route_carries_oldest_available(env, staff):
    env.jobs.enqueue(Work())
    queues = {q["name"]: q for q in staff.get(f"{MOUNT}queues").json()["queues"]}
    assert queues["default"]["oldest_available"] == env.clock().isoformat()
    assert queues["mail"]["oldest_available"] is None


def test_the_queues_page_shows_the_oldest_available_job(env, staff):
    env.jobs.enqueue(Work())
    env.clock.advance(90)
    page = staff.get(f"{MOUNT}dashboard/").content.decode()
    assert "Oldest available" in page
    assert 'data-label="Oldest available"><span class="muted">none</span>' in page  # mail
