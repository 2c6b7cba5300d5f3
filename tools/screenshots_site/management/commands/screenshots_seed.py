"""`manage.py screenshots_seed`: a staff session and jobs in every state the pages show,
worked by the `runjobs` process already running; prints the ids and the session key as JSON
once the jobs are where the screenshots want them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.management.base import BaseCommand, CommandError

from anole_jobs import Workflow, jobs
from tools.screenshots_site.jobs import (
    ChargeCard,
    DailyReport,
    FetchFeed,
    MakeThumbs,
    ParseFeed,
    Publish,
    SendWelcome,
    SyncLedger,
    Transcode,
)

TIMEOUT = 60.0


def wait(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        if time.monotonic() > deadline:
            raise CommandError(f"timed out after {TIMEOUT:g} s waiting for {what}")
        time.sleep(0.2)


def state_of(job_id: int) -> str | None:
    record = jobs.get(job_id)
    return None if record is None else record.state


class Command(BaseCommand):
    help = "Seed the screenshot site (a runjobs process must be running)."

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.create_user(
            "operator", password="screenshots", is_staff=True
        )
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()

        welcomes = [jobs.enqueue(SendWelcome(user_id=n)).id for n in range(1, 6)]
        failed = jobs.enqueue(ChargeCard(invoice_id=1042, amount_cents=4999)).id
        retried = jobs.enqueue(SyncLedger(account="acme")).id
        running = [jobs.enqueue(Transcode(video_id=n)).id for n in (7, 8)]
        for n in range(3):
            jobs.enqueue(SendWelcome(user_id=100 + n), delay=3600)
        jobs.enqueue(DailyReport(day="2026-12-03"))  # a queue no worker runs here
        # A diamond: fetch, then parse and thumbnails side by side, then publish.
        flow = Workflow("import feed 42")
        fetch = flow.add(FetchFeed(feed_id=42), name="fetch")
        parse = flow.add(ParseFeed(feed_id=42), after=[fetch], name="parse")
        thumbs = flow.add(MakeThumbs(feed_id=42), after=[fetch], name="thumbs")
        flow.add(Publish(feed_id=42), after=[parse, thumbs], name="publish")
        steps = jobs.enqueue_workflow(flow)

        wait(lambda: all(state_of(i) == "completed" for i in welcomes), "the welcome emails")
        wait(lambda: state_of(failed) == "dead", f"job {failed} dead")
        wait(lambda: state_of(retried) == "completed", f"job {retried} completed")
        wait(lambda: all(state_of(i) == "running" for i in running), "the transcodes running")
        wait(lambda: state_of(steps.jobs["parse"]) == "running", "the workflow's parse running")
        wait(lambda: state_of(steps.jobs["thumbs"]) == "retrying", "the thumbnails retrying")
        running.append(steps.jobs["parse"])
        # The workers page shows the running jobs once a heartbeat has reported them.
        wait(
            lambda: any(w.held >= len(running) for w in jobs.workers()),
            "a worker reporting its running jobs",
        )
        # The Audit page: what operators did, from each surface.
        from anole_jobs.operations import actions, audit

        with audit.acting("ops", "dashboard"):
            actions.retry(failed)
            actions.pause("reports", create=True)
            actions.resume("reports")  # its jobs wait for a worker, as the workers page says
        with audit.acting("cli", "cli"):
            actions.set_limits("mail", global_concurrency=2, create=True)
        with audit.acting("alice", "route"):
            actions.cancel(welcomes[0])
        self.stdout.write(
            json.dumps(
                {
                    "session": session.session_key,
                    "failed": failed,
                    "completed": retried,
                    "running": running[0],
                    "workflow": steps.id,
                }
            )
        )
