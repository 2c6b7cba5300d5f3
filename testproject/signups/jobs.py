"""The app's job kinds and their handlers; anole_jobs imports this module at start-up.

Every job runs at least once, so each handler is written to be safe to repeat: the welcome
email checks `welcomed_at` before sending, and the webhook sends the job id as an
idempotency key so the receiver can drop a repeat.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.core.validators import URLValidator
from django.db.models.functions import Now

from anole_jobs import Job, Unique, jobs, kind

from .models import Signup

logger = logging.getLogger(__name__)


@kind("signups.welcome_email", queue="mail", attempts=8)
@dataclass
class SendWelcome:
    signup_id: int


@jobs.handler(SendWelcome)
def send_welcome(job: Job, args: SendWelcome) -> None:
    signup = Signup.objects.filter(pk=args.signup_id).first()
    if signup is None:
        job.discard(f"signup {args.signup_id} no longer exists")
        return
    if signup.welcomed_at is not None:
        return  # an earlier attempt sent it and then lost its lease: don't send twice
    send_mail(
        subject="Welcome aboard",
        message=f"Hello {signup.email}, thanks for signing up.",
        from_email=None,  # DEFAULT_FROM_EMAIL
        recipient_list=[signup.email],
    )
    Signup.objects.filter(pk=signup.pk, welcomed_at__isnull=True).update(welcomed_at=Now())


@kind("signups.flaky_webhook", attempts=5, backoff=lambda attempt: timedelta(seconds=1))
@dataclass
class NotifyCrm:
    """Tell an external CRM about a sign-up. The endpoint here is simulated: it answers 503
    to the first `fail_first` attempts, then 200."""

    signup_id: int
    url: str = field(metadata={"validators": [URLValidator(schemes=["https"])]})
    fail_first: int = 2


@jobs.handler(NotifyCrm)
def notify_crm(job: Job, args: NotifyCrm) -> None:
    # A real handler would POST with the header below; the job id stays the same across
    # retries, so the receiver can recognise a repeat delivery.
    headers = {"Idempotency-Key": f"anole-job-{job.id}"}
    if job.attempt <= args.fail_first:
        job.explain("signup %s", args.signup_id)
        raise ConnectionError(f"{args.url} answered 503")
    logger.info("delivered signup %s to %s with %s", args.signup_id, args.url, headers)


@kind("reports.daily", unique=Unique())
@dataclass
class DailyReport:
    """The sign-ups of one day, mailed to REPORTS_TO; one waiting report per day at most."""

    day: date


@jobs.handler(DailyReport)
def daily_report(job: Job, args: DailyReport) -> None:
    signups = Signup.objects.filter(created_at__date=args.day)
    total = signups.count()
    welcomed = signups.filter(welcomed_at__isnull=False).count()
    send_mail(
        subject=f"Sign-ups on {args.day:%Y-%m-%d}",
        message=f"{total} sign-ups, {welcomed} welcomed.",
        from_email=None,
        recipient_list=settings.REPORTS_TO,
    )
