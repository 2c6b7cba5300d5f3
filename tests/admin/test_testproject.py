"""The test project mounts the jobs admin routes at /ops/jobs/ and the Django admin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2] / "testproject"


def test_the_testproject_mounts_the_routes_and_the_django_admin():
    script = (
        "import django; django.setup()\n"
        "from django.urls import resolve, reverse\n"
        "assert resolve('/ops/jobs/jobs').url_name == 'jobs'\n"
        "assert resolve('/ops/jobs/queues/mail/pause').kwargs == {'name': 'mail'}\n"
        "assert reverse('anole_jobs:openapi') == '/ops/jobs/openapi.json'\n"
        "assert reverse('admin:anole_jobs_job_changelist') == '/admin/anole_jobs/job/'\n"
        "print('ok')\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env["DJANGO_SETTINGS_MODULE"] = "testproject.settings"
    env["PYTHONPATH"] = str(PROJECT)
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def run_in_testproject(script: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(DJANGO_SETTINGS_MODULE="testproject.settings", PYTHONPATH=str(PROJECT))
    env.pop("DATABASE_URL", None)
    env.pop("TRACES", None)  # tracing on: the project's default
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_with_tracing_on_a_path_outside_latin_1_is_no_server_error_and_the_admin_is_styled():
    script = (
        "import django; django.setup()\n"
        "from django.conf import settings\n"
        "from django.test import Client\n"
        "client = Client(raise_request_exception=False)\n"
        "traced = any('telemetry' in m or 'opentelemetry' in m for m in settings.MIDDLEWARE)\n"
        "answers = [client.get(p).status_code for p in ("
        "'/ops/jobs/dashboard/\\u20ac', '/ops/jobs/queues/\\u20ac/pause', '/\\u4e2d\\u6587')]\n"
        "css = client.get('/static/admin/css/base.css').status_code\n"
        "print(traced, answers, css)\n"
    )
    traced, *rest = run_in_testproject(script).split(" ", 1)
    answers, css = rest[0].rsplit(" ", 1)
    assert traced == "True"  # the instrumentation is installed in the dev environment
    assert "500" not in answers, answers
    assert css == "200"  # the admin login page's and the jobs table's stylesheet
