"""`manage.py screenshots_history`: an hour of finished runs for the statistics page, written
through the store's own writes (insert, claim, finish, stage) with times in the past, before
any worker starts. The store counts them as it counts every run, in the same writes: nothing
is written to its counters directly.

Each minute of the last hour gets a few welcome emails (tens to hundreds of milliseconds), a
few ledger syncs (one to four seconds, some failing once before they complete) and now and
then a card charge that fails for good; twenty to thirty minutes ago the ledger was down, so
that stretch shows a burst of failures.

Before that hour, the 30 days before it get a few nightly reports an hour, more in working
hours, fewer at weekends, with a two-day stretch ten days ago when half of them failed once
before they completed (so no job is left dead to show elsewhere); the leader's
roll-up then sums those hours (the 30-day chart reads them) as it would once they ended.
Prints how many runs it wrote.
"""

from __future__ import annotations

import math
import random
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand

from anole_jobs import jobs
from anole_jobs.clock import system_clock
from anole_jobs.core import ErrorEntry
from anole_jobs.stores.base import Finish, NewJob, Store

MINUTES = 60
DAYS = 30


def _run(
    store: Store,
    job: NewJob,
    *,
    at: Any,
    seconds: list[float],
    error: tuple[str, str] | None,
    dead: bool,
) -> int:
    """Insert `job` at `at` and run it once per entry of `seconds` (run times): every run but
    the last fails with `error` and retries; the last completes, or dies when `dead`."""
    store.insert([job])
    runs = 0
    for number, took in enumerate(seconds, start=1):
        claimed = store.claim(
            job.queue,
            kinds=[job.kind],
            limit=1,
            now=at,
            lease_until=at + timedelta(minutes=5),
            worker="worker-1",
        )
        if not claimed:
            break
        run = claimed[0].run
        end = at + timedelta(seconds=took)
        last = number == len(seconds)
        failing = error is not None and (not last or dead)
        entry = (
            ErrorEntry(at=end, attempt=run.attempt, type=error[0], message=error[1])
            if failing and error is not None
            else None
        )
        state = ("dead" if last else "retrying") if failing else "completed"
        store.finish(
            [
                Finish(
                    run=run,
                    state=state,
                    at=end,
                    scheduled_at=None if last else end + timedelta(seconds=5),
                    error=entry,
                    started_at=at,
                    result=None if failing else "null",
                )
            ]
        )
        runs += 1
        at = end + timedelta(seconds=5)
        store.stage(now=at)
    return runs


class Command(BaseCommand):
    help = "Write an hour of finished runs for the statistics page (before a worker starts)."

    def handle(self, *args: Any, **options: Any) -> None:
        store = jobs.service.store
        rng = random.Random(42)  # the same picture every time
        now = system_clock()
        runs = 0
        for minute in range(MINUTES, 0, -1):
            start = now - timedelta(minutes=minute)
            outage = 20 <= minute <= 30
            wave = 1 + math.sin(minute / 9)
            for n in range(3 + round(3 * wave)):
                at = start + timedelta(seconds=rng.uniform(0, 50))
                job = _new("email.welcome", "mail", {"user_id": 1000 + minute * 10 + n}, at, 1)
                took = rng.lognormvariate(math.log(0.08), 0.6)
                runs += _run(store, job, at=at, seconds=[took], error=None, dead=False)
            for n in range(2 + round(wave)):
                at = start + timedelta(seconds=rng.uniform(0, 45))
                job = _new("billing.sync_ledger", "default", {"account": f"acct-{n}"}, at, 3)
                tries = 2 if outage or rng.random() < 0.1 else 1
                times = [rng.uniform(1.0, 4.0) for _ in range(tries)]
                error = ("ConnectionError", "ledger.example.com answered 503 Service Unavailable")
                runs += _run(
                    store, job, at=at, seconds=times, error=error if tries > 1 else None, dead=False
                )
            if outage or minute % 7 == 0:
                at = start + timedelta(seconds=rng.uniform(0, 50))
                job = _new(
                    "billing.charge",
                    "default",
                    {"invoice_id": 900 + minute, "amount_cents": 1999},
                    at,
                    1,
                )
                message = f"card declined for invoice {900 + minute}: do not honour (code 05)"
                runs += _run(
                    store,
                    job,
                    at=at,
                    seconds=[rng.uniform(0.2, 0.6)],
                    error=("PaymentDeclined", message),
                    dead=True,
                )
        runs += _month(store, rng, now)
        # What the leader does once each hour has ended, done here so the picture is there
        # before a worker's first round.
        store.roll_up_stats(now=now, keep=jobs.settings.stats.hours)
        self.stdout.write(f"{runs} runs written")


def _month(store: Store, rng: random.Random, now: Any) -> int:
    """The 30 days before the last hour: a few report runs an hour, a daily rhythm."""
    runs = 0
    for hours_ago in range(DAYS * 24, 1, -1):
        start = now - timedelta(hours=hours_ago)
        busy = 8 <= start.hour < 18 and start.weekday() < 5
        failing = 10 * 24 <= hours_ago < 12 * 24
        for n in range(rng.randint(4, 9) if busy else rng.randint(0, 3)):
            at = start + timedelta(minutes=rng.uniform(0, 55))
            job = _new("reports.daily", "reports", {"report": f"r-{hours_ago}-{n}"}, at, 2)
            tries = 2 if failing and rng.random() < 0.5 else 1
            times = [rng.lognormvariate(math.log(2.0), 0.5) for _ in range(tries)]
            error = ("TimeoutError", "warehouse query timed out") if tries > 1 else None
            runs += _run(store, job, at=at, seconds=times, error=error, dead=False)
    return runs


def _new(kind: str, queue: str, args: dict[str, Any], at: Any, attempts: int) -> NewJob:
    return NewJob(
        kind=kind,
        queue=queue,
        args=args,
        meta={},
        priority=0,
        max_attempts=attempts,
        state="available",
        scheduled_at=at,
        created_at=at,
    )
