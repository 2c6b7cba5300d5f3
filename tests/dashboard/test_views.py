"""The dashboard's pages and actions through Django's test client (docs/dashboard.md):
permission, filters, keyset pages, a job's errors, and every POST action with its CSRF
protection."""

from __future__ import annotations

import pytest

from anole_jobs.testing import drain
from tests.sampleapp.jobs import Prioritized, Work
from tests.support.clients import logged_in, make_staff, staff_client

BASE = "/ops/jobs/dashboard/"
pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db):
    return staff_client()


@pytest.fixture
def dashboard_jobs(settings, anole_jobs):
    settings.LOGIN_URL = "/login/"
    return anole_jobs


def test_anonymous_visitors_go_to_the_login_page(dashboard_jobs, client):
    for path in ("", "jobs/", "jobs/1/", "cron/"):
        response = client.get(BASE + path)
        assert response.status_code == 302
        assert response["Location"] == f"/login/?next={BASE}{path}"
    assert client.post(BASE + "jobs/1/retry").status_code == 302


def test_a_user_without_permission_gets_403(dashboard_jobs, django_user_model):
    client = logged_in(django_user_model.objects.create_user("plain"))
    assert client.get(BASE).status_code == 403
    assert client.post(BASE + "queues/default/pause").status_code == 403
    assert not any(queue.paused for queue in dashboard_jobs.queues())


def test_admin_permission_decides_like_the_json_routes(dashboard_jobs, client, settings):
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "ADMIN_PERMISSION": "tests.dashboard.test_views.everyone",
    }
    assert client.get(BASE).status_code == 200


def everyone(request):
    return True


def test_the_queue_page_shows_depth_pause_and_the_last_hour(dashboard_jobs, staff):
    dashboard_jobs.enqueue_many([Work(), Work(action="discard")])
    dashboard_jobs.enqueue(Work(), delay=60)
    dashboard_jobs.step()
    dashboard_jobs.enqueue(Prioritized(name="x"))
    dashboard_jobs.pause("mail")
    page = staff.get(BASE)
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    html = page.content.decode()
    default_row = html[html.index(">default</a>") : html.index(">mail</a>")]
    assert '<td data-label="Waiting" class="num">1</td>' in default_row  # the delayed job
    assert "Paused" in html and 'aria-label="Resume queue mail"' in html
    assert 'aria-label="Pause queue default"' in html
    assert 'aria-label="1 completed jobs in default"' in html
    assert 'aria-label="1 dead jobs in default"' in html


def test_the_job_list_filters_and_pages_by_keyset(dashboard_jobs, staff):
    ids = [e.id for e in dashboard_jobs.enqueue_many([Work(tag=str(n)) for n in range(55)])]
    other = dashboard_jobs.enqueue(Prioritized(name="p"))
    first = staff.get(BASE + "jobs/", {"kind": "test.work"}).content.decode()
    assert f"Job {ids[-1]}," in first and f"Job {ids[5]}," in first
    assert f"Job {ids[4]}," not in first and f"Job {other.id}," not in first
    assert f'href="?kind=test.work&amp;after={ids[5]}"' in first
    second = staff.get(BASE + "jobs/", {"kind": "test.work", "after": ids[5]}).content.decode()
    assert f"Job {ids[4]}," in second and f"Job {ids[0]}," in second and "Older jobs" not in second
    by_queue = staff.get(BASE + "jobs/", {"queue": "mail"}).content.decode()
    assert f"Job {other.id}," in by_queue and f"Job {ids[0]}," not in by_queue
    bad = staff.get(BASE + "jobs/", {"state": "lost", "kind": "test.work"})
    assert bad.status_code == 400
    html = bad.content.decode()
    assert "unknown state &#x27;lost&#x27;" in html and 'value="test.work"' in html  # form kept
    marker = staff.get(BASE + "jobs/", {"after": "x"})
    assert marker.status_code == 400 and "after must be a job id" in marker.content.decode()


def test_a_job_page_shows_args_meta_errors_and_trace(dashboard_jobs, staff):
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    job = dashboard_jobs.enqueue(Work(action="fail", tag="<b>"), meta={"traceparent": traceparent})
    drain()
    html = staff.get(f"{BASE}jobs/{job.id}/").content.decode()
    assert "dead" in html and "3 of 3" in html
    assert "0af7651916cd43dd8448eb211c80319c" in html
    assert html.count("ValueError") >= 3 and "failed on attempt 3" in html
    assert "Traceback" in html and "tests/sampleapp/jobs.py" in html
    assert "&lt;b&gt;" in html and "<b>" not in html.split("<h2>Arguments</h2>")[1]
    assert staff.get(f"{BASE}jobs/999999/").status_code == 404


def test_actions_are_post_forms_that_act_and_redirect(dashboard_jobs, staff):
    job = dashboard_jobs.enqueue(Work(action="discard"))
    drain()
    asked = staff.get(f"{BASE}jobs/{job.id}/retry")  # a GET asks, and changes nothing
    assert asked.status_code == 200 and f"Retry job {job.id} now?" in asked.text
    assert dashboard_jobs.get(job.id).state == "dead"
    response = staff.post(f"{BASE}jobs/{job.id}/retry")
    assert response.status_code == 302 and response["Location"] == f"{BASE}jobs/{job.id}/"
    assert dashboard_jobs.get(job.id).state == "available"
    assert "made available again" in staff.get(response["Location"]).content.decode()
    assert "made available again" not in staff.get(response["Location"]).content.decode()
    staff.post(f"{BASE}jobs/{job.id}/cancel")
    assert dashboard_jobs.get(job.id).state == "cancelled"
    response = staff.post(f"{BASE}jobs/{job.id}/delete")
    assert response["Location"] == f"{BASE}jobs/"
    assert "The job was deleted." in staff.get(response["Location"]).content.decode()
    assert dashboard_jobs.get(job.id) is None
    gone = staff.post(f"{BASE}jobs/{job.id}/retry")
    assert gone.status_code == 404 and f"no job with id {job.id}" in gone.content.decode()

    refused = staff.post(BASE + "queues/mail/pause")  # not in QUEUES, no jobs: a new name
    assert refused.status_code == 404 and "no queue named &#x27;mail&#x27;" in refused.text
    assert dashboard_jobs.queues() == [q for q in dashboard_jobs.queues() if q.name != "mail"]
    staff.post(BASE + "queues/mail/pause", {"create": "on"})
    assert [q.paused for q in dashboard_jobs.queues() if q.name == "mail"] == [True]
    staff.post(BASE + "queues/mail/resume")
    assert not any(q.paused for q in dashboard_jobs.queues())


def test_posts_need_the_csrf_token(dashboard_jobs, django_user_model):
    client = staff_client(make_staff("ops2"), enforce_csrf_checks=True)
    assert client.post(BASE + "queues/default/pause").status_code == 403
    page = client.get(BASE).content.decode()
    token = page.split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    response = client.post(BASE + "queues/default/pause", {"csrfmiddlewaretoken": token})
    assert response.status_code == 302


def test_cron_entries_with_next_run_and_trigger(dashboard_jobs, staff, settings):
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "CRON": [{"name": "nightly", "schedule": "0 3 * * *", "job": "tests.sampleapp.jobs.Work"}],
    }
    html = staff.get(BASE + "cron/").content.decode()
    assert "nightly" in html and "0 3 * * *" in html and "2030-01-01 03:00:00 UTC" in html
    response = staff.post(BASE + "cron/nightly/trigger")
    assert response.status_code == 302 and response["Location"].startswith(BASE + "jobs/")
    assert "The cron entry&#x27;s job was enqueued." in staff.get(response["Location"]).text
    # The run by hand is the entry's last job on the cron page.
    job_id = response["Location"].rstrip("/").rsplit("/", 1)[1]
    assert f'href="{BASE}jobs/{job_id}/">{job_id}</a>' in staff.get(BASE + "cron/").text
    assert staff.post(BASE + "cron/unknown/trigger").status_code == 404
