"""What the views and the demo command call: a sign-up and its welcome email, atomically."""

from __future__ import annotations

from django.db import transaction

from anole_jobs import jobs

from .jobs import SendWelcome
from .models import Signup


def register(email: str, *, request: object | None = None) -> tuple[Signup, int]:
    """Create a sign-up and enqueue its welcome email in one transaction.

    The jobs store lives in the same database, so the enqueue is a write of this transaction:
    if anything below raises, neither the sign-up nor the job exists.
    """
    with transaction.atomic():
        signup = Signup.objects.create(email=email)
        enqueued = jobs.enqueue(SendWelcome(signup_id=signup.pk), request=request)
    assert enqueued.id is not None  # the database store writes at once
    return signup, enqueued.id
