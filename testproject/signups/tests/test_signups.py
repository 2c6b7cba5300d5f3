"""The sign-up flow, tested with the anole_jobs pytest fixtures and helpers."""

from __future__ import annotations

from datetime import date

import pytest
from django.core import mail
from django.db import transaction

from anole_jobs.testing import assert_enqueued, drain, refute_enqueued
from signups.jobs import DailyReport, NotifyCrm, SendWelcome
from signups.models import Signup
from signups.services import register

# Real commits and rollbacks: the jobs live in the same database as the sign-ups.
pytestmark = pytest.mark.django_db(transaction=True)


def test_a_signup_enqueues_its_welcome_email(anole_jobs):
    signup, job_id = register("ada@example.com")

    job = assert_enqueued(SendWelcome, args={"signup_id": signup.pk}, queue="mail")
    assert job.id == job_id
    assert drain() == {"completed": 1}
    assert [message.to for message in mail.outbox] == [["ada@example.com"]]
    assert Signup.objects.get(pk=signup.pk).welcomed_at is not None


def test_no_welcome_email_when_the_signup_rolls_back(anole_jobs):
    with pytest.raises(RuntimeError), transaction.atomic():
        register("bob@example.com")
        raise RuntimeError("payment failed")
    refute_enqueued(SendWelcome)
    assert not Signup.objects.exists()


def test_the_webhook_is_retried_until_it_answers(anole_jobs, anole_clock):
    signup = Signup.objects.create(email="cy@example.com")
    start = anole_clock()
    anole_jobs.enqueue(NotifyCrm(signup_id=signup.pk, url="https://crm.example.com", fail_first=2))

    assert drain() == {"retried": 2, "completed": 1}
    assert anole_clock() > start  # drain moved the fake clock to each retry


def test_one_waiting_report_per_day(anole_jobs):
    day = date(2030, 1, 1)
    first = anole_jobs.enqueue(DailyReport(day=day))
    again = anole_jobs.enqueue(DailyReport(day=day))
    assert (first.inserted, again.inserted, again.id) == (True, False, first.id)
    assert assert_enqueued(DailyReport).args == {"day": "2030-01-01"}


def test_the_signup_view(anole_jobs, client):
    response = client.post("/signup", {"email": "dee@example.com"})
    assert response.status_code == 201
    assert assert_enqueued(SendWelcome).id == response.json()["welcome_job"]
