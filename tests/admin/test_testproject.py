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
