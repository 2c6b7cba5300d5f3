"""The workers surfaces on every store: ``GET /workers``, ``manage.py jobs workers`` (its
``--json`` is exactly the route's answer) and the dashboard's workers page (live region,
plain page, permission), fed by records a worker writes on its heartbeat. The fake clock
moves time: a late worker, an expired one, a queue nobody serves."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from anole_jobs import NewQueue
from anole_jobs.operations.workers import overview
from anole_jobs.stores.workers import HeldJob, QueueSlots, WorkerRecord
from tests.admin.support import MOUNT, configure_admin
from tests.sampleapp.jobs import Work
from tests.support.clients import staff_client

pytestmark = pytest.mark.django_db(databases=["default"])
DASHBOARD = MOUNT + "dashboard/workers/"
TTL = timedelta(seconds=30)


def record_worker(env, worker_id="box-1:4242:a1b2c3", *, pid=4242, jobs=(), queues=None):
    now = env.clock()
    record = WorkerRecord(
        id=worker_id,
        host="box-1",
        pid=pid,
        version="0.1.0",
        queues=queues or (QueueSlots(name="default", busy=len(jobs), total=10),),
        started_at=now - timedelta(minutes=3),
        last_seen=now,
        expires_at=now + TTL,
        held=len(jobs),
        jobs=tuple(jobs),
    )
    env.store.record_worker(record)
    return record


def held(env, job_id, kind="test.work"):
    return HeldJob(
        id=job_id,
        kind=kind,
        queue="default",
        attempt=1,
        started_at=env.clock() - timedelta(seconds=20),
        running=True,
    )


def cli(*args):
    out, err = StringIO(), StringIO()
    call_command("jobs", "workers", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def staff(env, users):
    configure_admin(env)
    return staff_client(users["staff"])


def test_the_route_lists_each_worker_with_its_slots_and_jobs(env, staff):
    job = env.jobs.enqueue(Work())
    record_worker(env, jobs=[held(env, job.id)])
    record_worker(
        env, "box-1:77:ffffff", pid=77, queues=(QueueSlots(name="mail", busy=0, total=4),)
    )
    body = staff.get(MOUNT + "workers").json()
    assert [w["pid"] for w in body["workers"]] == [77, 4242]
    first = body["workers"][1]
    assert first["id"] == "box-1:4242:a1b2c3" and first["host"] == "box-1"
    assert first["queues"] == [{"name": "default", "busy": 1, "total": 10}]
    assert (first["busy"], first["slots"], first["held"], first["late"]) == (1, 10, 1, False)
    assert first["jobs"] == [
        {
            "id": job.id,
            "kind": "test.work",
            "queue": "default",
            "attempt": 1,
            "started_at": (env.clock() - timedelta(seconds=20)).isoformat(),
            "running": True,
        }
    ]
    assert (body["busy"], body["slots"]) == (1, 14)
    assert body["queues_without_workers"] == []
    assert body["as_of"] == env.clock().isoformat()


def test_a_late_worker_is_flagged_and_an_expired_one_is_gone(env, staff):
    record_worker(env)
    env.clock.advance(TTL / 2 + timedelta(seconds=1))
    (worker,) = staff.get(MOUNT + "workers").json()["workers"]
    assert worker["late"] is True
    env.clock.advance(TTL / 2)
    assert staff.get(MOUNT + "workers").json()["workers"] == []


def test_queues_with_waiting_jobs_and_no_worker_are_named(env, staff):
    env.jobs.enqueue(Work(), queue="mail")
    env.jobs.enqueue(Work(), queue=NewQueue("reports"))
    env.jobs.pause("reports")  # a paused queue waits on purpose
    record_worker(env)  # runs "default" only
    assert staff.get(MOUNT + "workers").json()["queues_without_workers"] == ["mail"]


def test_the_cli_json_is_the_routes_answer_and_the_table_reads_well(env, staff):
    job = env.jobs.enqueue(Work())
    record_worker(env, jobs=[held(env, job.id)])
    env.jobs.enqueue(Work(), queue="mail")
    out, _ = cli("--json")
    assert json.loads(out) == staff.get(MOUNT + "workers").json()
    table, _ = cli()
    lines = table.splitlines()
    assert lines[0].split() == [
        "WORKER", "HOST", "PID", "VERSION", "BUSY", "HELD", "STARTED", "SEEN", "CONTROL", "QUEUES"
    ]  # fmt: skip
    assert lines[1].split()[:7] == [
        "box-1:4242:a1b2c3",
        "box-1",
        "4242",
        "0.1.0",
        "1/10",
        "1",
        "3m",
    ]
    assert f"job {job.id}  test.work  (default, attempt 1) running" in table
    assert table.rstrip().endswith("queues with waiting jobs and no worker: mail")


def test_the_cli_says_when_no_worker_is_alive(env, staff):
    out, _ = cli()
    assert out.strip() == "no workers alive (start one with manage.py runjobs)"


def test_the_dashboard_page_shows_workers_jobs_and_unserved_queues(env, staff):
    job = env.jobs.enqueue(Work())
    record_worker(env, jobs=[held(env, job.id)])
    env.jobs.enqueue(Work(), queue="mail")
    page = staff.get(DASHBOARD)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'aria-current="page">Workers</a>' in html
    assert "box-1 · pid 4242" in html
    assert "1 worker alive; 1 of 10 slots busy; 1 job held." in html
    assert f'href="{MOUNT}dashboard/jobs/{job.id}/"' in html
    assert "no worker runs" in html and "manage.py runjobs --queue mail" in html
    assert 'data-live="5"' in html  # live, like the queues and jobs pages

    partial = staff.get(DASHBOARD, {"partial": "1"})
    assert partial["X-Anole-Partial"] == "1"
    body = partial.content.decode()
    assert "box-1 · pid 4242" in body and "<html" not in body


def test_the_dashboard_page_says_when_no_worker_is_alive(env, staff):
    html = staff.get(DASHBOARD).content.decode()
    assert "No worker is alive." in html


def test_every_page_links_the_workers_page(env, staff):
    html = staff.get(MOUNT + "dashboard/").content.decode()
    assert f'href="{DASHBOARD}"' in html


def test_the_overview_counts_late_workers_from_the_records_lifetime(env):
    record = record_worker(env)
    env.clock.advance(TTL / 2)
    (status,) = overview().workers
    assert status.record == record and status.late is False and status.seen_ago == 15.0


def test_anonymous_visitors_go_to_the_login_page_and_others_get_403(
    env, client, settings, django_user_model
):
    configure_admin(env)
    settings.LOGIN_URL = "/login/"
    response = client.get(DASHBOARD)
    assert (response.status_code, response["Location"]) == (302, f"/login/?next={DASHBOARD}")
    plain = django_user_model.objects.create_user("plain-workers")
    client.force_login(plain)
    assert client.get(DASHBOARD).status_code == 403
    assert client.get(MOUNT + "workers").status_code == 403
