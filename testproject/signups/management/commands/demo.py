"""`manage.py demo`: migrate, enqueue a mix of jobs, work them with real workers, print a table.

The jobs: one welcome email per new sign-up (enqueued in the sign-up's own transaction), CRM
webhooks whose endpoint fails a few times before answering (one never answers and ends
``dead``), and a daily report scheduled two seconds ahead. The jobs are worked by a real
``manage.py runjobs`` process, stopped with SIGTERM at the end as a service manager would
(``--in-process`` runs the same workers inside this process through ``jobs.start()``).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core import mail
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections
from django.utils import timezone

from anole_jobs import jobs
from signups.jobs import DailyReport, NotifyCrm
from signups.services import register

FINAL_STATES = frozenset({"completed", "dead", "cancelled"})
PEOPLE = ("ada", "grace", "alan", "edsger")
CRM_URL = "https://crm.example.com/hooks"


class Command(BaseCommand):
    help = "Run the anole_jobs demo: enqueue sign-up jobs, work them, print their outcomes."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--timeout",
            type=float,
            default=60.0,
            help="seconds to wait for every job to finish (default 60)",
        )
        parser.add_argument(
            "--in-process",
            action="store_true",
            help="run the workers in this process (jobs.start()) instead of a runjobs process",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        database = connections["default"]
        try:
            database.ensure_connection()
        except DatabaseError as exc:
            raise CommandError(unreachable_database(database.settings_dict, exc)) from None
        call_command("migrate", verbosity=0, interactive=False)
        self.stdout.write(
            f"store: {settings.ANOLE_JOBS['STORE']} "
            f"(default database: {database.vendor}, {database.settings_dict['NAME']}); "
            f"queues: {', '.join(settings.ANOLE_JOBS['QUEUES'])}"
        )

        job_ids = self.enqueue_jobs()
        self.stdout.write(f"enqueued {len(job_ids)} jobs; starting workers")

        if options["in_process"]:
            jobs.start()
            try:
                pending = self.wait_for(job_ids, timeout=options["timeout"])
            finally:
                jobs.stop()
        else:
            pending = self.run_worker_process(job_ids, timeout=options["timeout"])

        self.print_table(job_ids)
        outbox = getattr(mail, "outbox", None)
        if options["in_process"] and outbox is not None:
            self.stdout.write(f"emails sent: {len(outbox)} (in-memory outbox)")
        if pending:
            ids = ", ".join(str(job_id) for job_id in sorted(pending))
            raise CommandError(
                f"{len(pending)} job(s) did not finish within {options['timeout']:g} s: {ids}"
            )
        self.stdout.write(
            self.style.SUCCESS("every job finished")
            + " (the webhook to the endpoint that never answers is dead by design: "
            "it shows a job giving up after its attempts)"
        )

    def enqueue_jobs(self) -> list[int]:
        tag = secrets.token_hex(3)  # the demo can run again on the same database
        job_ids: list[int] = []
        signups = []
        for person in PEOPLE:
            signup, welcome_id = register(f"{person}.{tag}@example.com")
            signups.append(signup)
            job_ids.append(welcome_id)

        # Fails once, fails twice, and never succeeds (attempts=5 on the kind: ends dead).
        for signup, fail_first in zip(signups, (1, 2, 99), strict=False):
            enqueued = jobs.enqueue(
                NotifyCrm(signup_id=signup.pk, url=CRM_URL, fail_first=fail_first)
            )
            assert enqueued.id is not None
            job_ids.append(enqueued.id)

        report = jobs.enqueue(DailyReport(day=timezone.localdate()), delay=timedelta(seconds=2))
        assert report.id is not None
        job_ids.append(report.id)
        return job_ids

    def run_worker_process(self, job_ids: Sequence[int], *, timeout: float) -> set[int]:
        """Start `manage.py runjobs`, wait for the jobs, then SIGTERM it and show its log."""
        manage = os.path.join(settings.BASE_DIR, "manage.py")
        with tempfile.TemporaryFile(mode="w+") as log:
            worker = subprocess.Popen(
                [sys.executable, manage, "runjobs", "--log-level", "INFO"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            self.stdout.write(f"started `manage.py runjobs` (pid {worker.pid})")
            try:
                pending = self.wait_for(job_ids, timeout=timeout, worker=worker)
            finally:
                worker.send_signal(signal.SIGTERM)
                began = time.monotonic()
                try:
                    code = worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    code = worker.wait()
                self.stdout.write(
                    f"runjobs stopped on SIGTERM in {time.monotonic() - began:.1f} s "
                    f"(exit status {code}); its log:"
                )
                log.seek(0)
                for text in log.read().splitlines():
                    self.stdout.write(f"  | {text}")
        return pending

    def wait_for(
        self,
        job_ids: Sequence[int],
        *,
        timeout: float,
        worker: subprocess.Popen[bytes] | None = None,
    ) -> set[int]:
        """Poll until every job is in a final state or `timeout` passes; return the others."""
        pause = threading.Event()
        deadline = time.monotonic() + timeout
        pending = set(job_ids)
        while pending:
            for job_id in list(pending):
                record = jobs.get(job_id)
                if record is not None and record.state in FINAL_STATES:
                    pending.discard(job_id)
            if not pending or time.monotonic() >= deadline:
                break
            if worker is not None and worker.poll() is not None:
                raise CommandError(f"runjobs exited early with status {worker.returncode}")
            pause.wait(0.2)
        return pending

    def print_table(self, job_ids: Sequence[int]) -> None:
        header = ("id", "kind", "queue", "state", "attempts", "errors", "last error")
        rows: list[tuple[str, ...]] = []
        for job_id in job_ids:
            record = jobs.get(job_id)
            if record is None:
                rows.append((str(job_id), "?", "?", "(gone)", "", "", ""))
                continue
            last = record.errors[-1] if record.errors else None
            last_error = f"{last['type']}: {last['message']}" if last else ""
            rows.append(
                (
                    str(record.id),
                    record.kind,
                    record.queue,
                    record.state,
                    f"{record.attempt}/{record.max_attempts}",
                    str(len(record.errors)),
                    last_error[:80],
                )
            )
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

        self.stdout.write("")
        self.stdout.write(line(header).rstrip())
        self.stdout.write(line(["-" * width for width in widths]).rstrip())
        for row in rows:
            self.stdout.write(line(row).rstrip())
        self.stdout.write("")


def unreachable_database(database: dict[str, Any], error: Exception) -> str:
    """One line that says which database did not answer and what to do about it."""
    if database["ENGINE"].endswith("sqlite3"):
        return f"cannot open the SQLite database {database['NAME']}: {error}"
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    host = database.get("HOST") or "localhost"
    where = f"{host}:{database.get('PORT') or 5432}"
    if "does not exist" in reason:
        user = database.get("USER") or "postgres"
        advice = f"create it first (createdb -h {host} -U {user} {database['NAME']})"
    else:
        advice = "check that PostgreSQL runs there and that the database exists"
    return (
        f"cannot connect to PostgreSQL database {database['NAME']!r} on {where} "
        f"(DATABASE_URL): {reason}. {advice[0].upper()}{advice[1:]}, "
        "or unset DATABASE_URL to run the demo on SQLite."
    )
