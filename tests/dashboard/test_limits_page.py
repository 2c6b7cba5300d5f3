"""The queues page shows each limited queue's limits and the jobs they hold back."""

from __future__ import annotations

import pytest

from tests.sampleapp.jobs import Work
from tests.support.clients import staff_client

BASE = "/ops/jobs/dashboard/"
pytestmark = pytest.mark.django_db


def test_the_queues_page_shows_limits_and_held_jobs(settings, anole_jobs, db):
    staff = staff_client()
    assert "<h2>Limits</h2>" not in staff.get(BASE).content.decode()  # none anywhere
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "QUEUES": {"default": {"global_concurrency": 1, "partition": "tag"}, "mail": {}},
    }
    anole_jobs.enqueue_many([Work(tag="a"), Work(tag="a"), Work(tag="b")])
    anole_jobs.set_limits("mail", rate_limit="30/m")
    page = staff.get(BASE).content.decode()
    assert "<h2>Limits</h2>" in page
    assert "1 at once per tag" in page and "30/m (set at runtime)" in page
    assert '<td data-label="Held" class="num">1</td>' in page
