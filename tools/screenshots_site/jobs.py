"""The job kinds of the screenshot site: a welcome email (completes), a card charge that the
payment service declines (dies), a ledger sync that fails once then completes, a video
transcode that runs for minutes (what the workers page shows running), a daily report, and the
four steps of a feed import workflow."""

from __future__ import annotations

import types
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from anole_jobs import Job, jobs, kind


class PaymentDeclined(Exception):
    pass


@kind("email.welcome", queue="mail")
@dataclass
class SendWelcome:
    user_id: int


@jobs.handler(SendWelcome)
def send_welcome(job: Job, args: SendWelcome) -> dict[str, object]:
    return {"sent_to": f"user-{args.user_id}@example.com"}


@kind("billing.charge", attempts=2, backoff=lambda attempt: timedelta(seconds=1))
@dataclass
class ChargeCard:
    invoice_id: int
    amount_cents: int


@jobs.handler(ChargeCard)
def charge_card(job: Job, args: ChargeCard) -> None:
    raise PaymentDeclined(
        f"card declined for invoice {args.invoice_id}: insufficient funds (code 51)"
    )


@kind("billing.sync_ledger", attempts=3, backoff=lambda attempt: timedelta(seconds=1))
@dataclass
class SyncLedger:
    account: str
    fail_first: int = 1


@jobs.handler(SyncLedger)
def sync_ledger(job: Job, args: SyncLedger) -> dict[str, object]:
    if job.attempt <= args.fail_first:
        raise ConnectionError("ledger.example.com answered 503 Service Unavailable")
    return {"account": args.account, "entries_synced": 128}


@kind("media.transcode")
@dataclass
class Transcode:
    video_id: int
    seconds: float = 600.0


@jobs.handler(Transcode)
def transcode(job: Job, args: Transcode) -> None:
    job.sleep(args.seconds)


@kind("reports.daily", queue="reports")
@dataclass
class DailyReport:
    day: str


@jobs.handler(DailyReport)
def daily_report(job: Job, args: DailyReport) -> None:
    pass


# A feed import, the workflow the workflow page shows: fetch, then parse and make thumbnails
# side by side, then publish. Parsing runs long, the thumbnails fail once and wait an hour to
# retry, so the page shows a completed, a running, a retrying and a pending step.
@kind("feeds.fetch")
@dataclass
class FetchFeed:
    feed_id: int


@jobs.handler(FetchFeed)
def fetch_feed(job: Job, args: FetchFeed) -> dict[str, object]:
    return {"items": 12}


@kind("feeds.parse")
@dataclass
class ParseFeed:
    feed_id: int
    seconds: float = 600.0


@jobs.handler(ParseFeed)
def parse_feed(job: Job, args: ParseFeed) -> None:
    job.sleep(args.seconds)


@kind("feeds.thumbs", attempts=3, backoff=lambda attempt: timedelta(hours=1))
@dataclass
class MakeThumbs:
    feed_id: int


@jobs.handler(MakeThumbs)
def make_thumbs(job: Job, args: MakeThumbs) -> None:
    raise TimeoutError("image service timed out after 30 s")


@kind("feeds.publish")
@dataclass
class Publish:
    feed_id: int


@jobs.handler(Publish)
def publish(job: Job, args: Publish) -> None:
    pass


def _tracebacks_relative_to_the_repository() -> None:
    """A stored traceback names the file of each frame. The screenshots must show no folder
    of the machine that took them, so the handlers' code names this file relative to the
    repository (the worker runs from there, so the traceback still shows each line)."""
    here = Path(__file__).resolve()
    relative = str(here.relative_to(here.parents[2]))
    for value in list(globals().values()):
        if isinstance(value, types.FunctionType) and value.__module__ == __name__:
            value.__code__ = value.__code__.replace(co_filename=relative)


_tracebacks_relative_to_the_repository()
