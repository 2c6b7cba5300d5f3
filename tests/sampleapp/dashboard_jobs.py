"""A kind for the dashboard's browser test: its first attempt fails (and, with one attempt,
the job is dead); a retry from the dashboard then completes it."""

from __future__ import annotations

from dataclasses import dataclass

from anole_jobs import Job, jobs, kind


@kind("test.dashboard.charge", attempts=1)
@dataclass
class Charge:
    order_id: int
    amount_cents: int = 1999


@jobs.handler(Charge)
def charge(job: Job, args: Charge) -> None:
    if job.attempt == 1:
        raise ConnectionError(f"payment service answered 503 for order {args.order_id}")
