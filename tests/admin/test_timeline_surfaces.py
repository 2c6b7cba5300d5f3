"""The job's timeline on every surface (docs/timeline.md): ``GET /jobs/<id>`` (and its OpenAPI
schema), the CLI's ``jobs show`` and the dashboard's job page — progress bar, attempts with
worker, duration and outcome, the log, live while the job is not finished, everything escaped
and long words breaking rather than widening the page."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from anole_jobs.admin_api.openapi import document
from tests.admin.support import MOUNT
from tests.sampleapp.jobs import HOOKS, Work

pytestmark = [
    pytest.mark.django_db(databases=["default"]),
    pytest.mark.parametrize("env", ["memory", "sqlite"], indirect=True),
]
HOSTILE = "<script>alert(1)</script>"
LONG_WORD = "w" * 1500


def ran_twice(env) -> int:
    """A job whose first attempt failed and second completed, each logging and reporting."""

    def handler(job, args):
        job.progress(job.attempt, 2, f"step {HOSTILE} {LONG_WORD}")
        logging.getLogger("tests.surfaces").info("attempt %d %s", job.attempt, HOSTILE)
        if job.attempt == 1:
            raise ValueError("first")

    HOOKS["twice"] = handler
    job_id = env.jobs.enqueue(Work(action="twice")).id
    env.jobs.step()
    env.clock.advance(timedelta(hours=1))
    env.jobs.step()
    return job_id


def test_the_job_route_shows_progress_logs_attempts_and_steps(env, staff):
    job_id = ran_twice(env)
    body = staff.get(f"{MOUNT}jobs/{job_id}").json()
    assert body["progress"]["done"] == 2 and body["progress"]["total"] == 2
    assert body["progress"]["message"] == f"step {HOSTILE} {LONG_WORD}"
    assert [(a["attempt"], a["outcome"]) for a in body["attempts"]] == [
        (1, "failed"),
        (2, "completed"),
    ]
    assert all(a["worker"] and a["started_at"].endswith("+00:00") for a in body["attempts"])
    assert [line["attempt"] for line in body["logs"]] == [1, 2]
    assert body["logs"][0]["level"] == "INFO" and body["logs"][0]["logger"] == "tests.surfaces"
    assert body["steps"] == {}
    listed = staff.get(f"{MOUNT}jobs").json()["jobs"]
    assert "logs" not in listed[0]  # a page of jobs does not carry every job's log
    schema = document()["components"]["schemas"]
    detail = schema["JobDetail"]["allOf"][1]["properties"]
    assert {"progress", "logs", "attempts", "steps"} <= set(detail)


def test_jobs_show_prints_the_timeline(env, staff):
    job_id = ran_twice(env)
    out = StringIO()
    call_command("jobs", "show", str(job_id), stdout=out)
    text = out.getvalue()
    assert "progress      2 of 2 (100%): step" in text
    assert "attempts\n" in text and "  failed" in text and "  completed" in text
    assert "INFO tests.surfaces: attempt 1" in text
    out = StringIO()
    call_command("jobs", "show", str(job_id), "--json", stdout=out)
    shown = json.loads(out.getvalue())
    assert [a["outcome"] for a in shown["attempts"]] == ["failed", "completed"]


def test_the_dashboard_job_page_shows_the_timeline_escaped(env, staff):
    job_id = ran_twice(env)
    html = staff.get(f"{MOUNT}dashboard/jobs/{job_id}/").content.decode()
    assert 'aria-labelledby="timeline-title"' in html
    assert '<progress max="100" value="100"' in html
    assert "Attempt 1" in html and "Attempt 2" in html
    assert 'class="outcome outcome-failed">failed<' in html
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "overflow-wrap: anywhere" in html and LONG_WORD in html
    # A finished job's page does not refresh itself.
    assert "data-live" not in html and 'http-equiv="refresh"' not in html


def test_the_job_page_of_a_running_job_is_live_with_and_without_scripts(env, staff):
    seen = {}

    def look(job, args):
        job.progress(1, 4, "a quarter")
        page = staff.get(f"{MOUNT}dashboard/jobs/{job.id}/")
        seen["page"] = page.content.decode()
        seen["partial"] = staff.get(f"{MOUNT}dashboard/jobs/{job.id}/?partial=1")

    HOOKS["look"] = look
    env.jobs.enqueue(Work(action="look"))
    env.jobs.step()
    html = seen["page"]
    assert 'data-live="5"' in html
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in html
    assert '<progress max="100" value="25"' in html
    assert "so far" in html and "outcome-running" in html
    partial = seen["partial"]
    assert partial["X-Anole-Partial"] == "1"
    body = partial.content.decode()
    assert "<html" not in body and "a quarter" in body
