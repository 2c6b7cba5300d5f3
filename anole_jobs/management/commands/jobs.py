"""`manage.py jobs SUBCOMMAND`: the admin calls from a shell (docs/admin.md).

Tables for people by default (aligned columns, times relative to now, errors shortened);
``--json`` prints exactly what the matching admin route answers (the same `payloads`
functions build both), one JSON document per line. An unknown id or name exits 1 with one
line on stderr per miss; bad arguments exit 2 (argparse); a store that does not answer exits 1
with one line. An action that changes nothing (cancelling a finished job) says so and exits 0.
This module only reads arguments and prints: parsing, paging, acting and the error messages
are `anole_jobs.operations`'.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from anole_jobs.api import jobs
from anole_jobs.core import STATES, JobRecord
from anole_jobs.management import bulk_cli, workers_cli
from anole_jobs.management.text import relative, shorten, table
from anole_jobs.operations import actions, audit, payloads
from anole_jobs.operations import stats as run_stats
from anole_jobs.operations.clock import now as clock_now
from anole_jobs.operations.display import display_kind
from anole_jobs.operations.ids import parse_job_id
from anole_jobs.operations.listing import Listing, fetch_page, parse_after, parse_limit
from anole_jobs.operations.problems import (
    EXPECTED,
    NotFound,
    OperationError,
    one_line,
    problem_of,
)

HOW_TO_CREATE = "pass --create"


def argument(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type from one of the operations' parsers: what they refuse exits 2."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except OperationError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = parse.__name__
    return convert


def last_error(record: JobRecord) -> str:
    if not record.errors:
        return ""
    error = record.errors[-1]
    return shorten(f"{error.get('type', '')}: {error.get('message', '')}")


def add_stats_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--queue",
        type=argument(lambda text: run_stats.parse_stats({"queue": [text]}).queue),
        help="only this queue (default: every queue)",
    )
    command.add_argument(
        "--period",
        choices=tuple(run_stats.PERIODS),
        default=run_stats.DEFAULT_PERIOD,
        help="hour: per minute over the last hour (default); day, week, month: per hour over "
        "the last day, 7 days or 30 days",
    )


def stats_text(report: run_stats.StatsReport) -> str:
    """The totals per queue, then every minute or hour of all of them."""
    span = run_stats.PERIODS[report.period].words

    def counters(point: Any) -> tuple[object, ...]:
        p = run_stats.percentiles(point)
        return (
            point.started,
            point.completed,
            point.failed,
            point.retried,
            point.dead,
            run_stats.milliseconds(p["p50"]),
            run_stats.milliseconds(p["p95"]),
            run_stats.milliseconds(p["p99"]),
        )

    names = ("STARTED", "COMPLETED", "FAILED", "RETRIED", "DEAD", "P50", "P95", "P99")
    totals = [(s.queue, *counters(s.total)) for s in report.queues]
    if len(report.queues) != 1:
        totals.append(("(all)", *counters(report.overall.total)))
    fmt = "%H:%M" if report.resolution == "minute" else "%m-%d %H:00"
    rows = [(p.at.strftime(fmt), *counters(p)) for p in report.overall.points]
    return (
        f"{span} (UTC), until {report.until.isoformat(timespec='seconds')}\n"
        + table(("QUEUE", *names), totals)
        + "\n\n"
        + table(("TIME", *names), rows)
    )


def _constant(text: str) -> Callable[[], str]:
    return lambda: text


def add_common_options(command: argparse.ArgumentParser) -> None:
    """Django's options of every command, accepted after the subcommand too (``manage.py jobs
    list --settings X``), as any other command takes them after its own arguments. Left out,
    they are not set here (`SUPPRESS`), so one given before the subcommand stands."""
    unset = argparse.SUPPRESS
    command.add_argument(
        "-v", "--verbosity", type=int, choices=[0, 1, 2, 3], default=unset, help=unset
    )
    command.add_argument("--settings", default=unset, help=unset)
    command.add_argument("--pythonpath", default=unset, help=unset)
    for flag in ("--traceback", "--no-color", "--force-color"):
        command.add_argument(flag, action="store_true", default=unset, help=unset)


class Command(BaseCommand):
    help = "Look at and operate anole_jobs jobs, queues and cron entries."
    requires_system_checks: list[str] = []
    #: Tests pass `stdin` (the bulk actions' confirmation reads it).
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        commands = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

        def sub(name: str, help: str) -> argparse.ArgumentParser:
            command = commands.add_parser(name, help=help, description=help)
            add_common_options(command)
            command.add_argument(
                "--json", action="store_true", help="print what the matching HTTP route answers"
            )
            return command

        listing = sub("list", "jobs, newest first")
        listing.add_argument("--state", choices=STATES)
        listing.add_argument("--queue", type=bulk_cli.name_option("--queue"))
        listing.add_argument("--kind", type=bulk_cli.name_option("--kind"))
        listing.add_argument("--workflow", help="only the steps of this workflow (its id)")
        listing.add_argument(
            "--limit", type=argument(parse_limit), default=100, help="default 100, max 1000"
        )
        listing.add_argument(
            "--after", type=argument(parse_after), help="ids below this one (the next page)"
        )
        bulk_cli.add_search_options(listing)
        sub("show", "one job in full").add_argument("id", type=argument(parse_job_id))
        sub("why", "why a job is not running yet (and when it will be, if known)").add_argument(
            "id", type=argument(parse_job_id)
        )
        sub("counts", "jobs per queue and state")
        sub("queues", "every queue: paused or not, and its jobs per state")
        for name, what in (
            ("retry", "make jobs available now"),
            ("cancel", "cancel waiting or running jobs"),
            ("delete", "delete jobs"),
        ):
            command = sub(name, what)
            command.add_argument("ids", type=argument(parse_job_id), nargs="*", metavar="ID")
            bulk_cli.add_bulk_options(command)
        for name, what in (
            ("pause", "stop every worker claiming a queue's jobs"),
            ("resume", "let workers claim a paused queue's jobs again"),
        ):
            command = sub(name, what)
            command.add_argument("queue")
            command.add_argument(
                "--create",
                action="store_true",
                help="act on a queue that is neither in QUEUES nor holds jobs (a new name)",
            )
        flow = sub("workflow", "one workflow: its steps, their states and what each waits for")
        flow.add_argument("id")
        flow.add_argument(
            "--cancel", action="store_true", help="cancel every step not ended yet first"
        )
        limits = sub("limits", "change a queue's limits while workers run (docs/limits.md)")
        limits.add_argument("queue")
        limits.add_argument("--concurrency", type=int, help="global_concurrency: N at once")
        limits.add_argument("--rate", help='rate_limit: "N/s", "N/m" or "N/h"')
        limits.add_argument(
            "--clear", action="store_true", help="return both limits to the settings"
        )
        limits.add_argument(
            "--create",
            action="store_true",
            help="act on a queue that is neither in QUEUES nor holds jobs (a new name)",
        )
        signal = sub("signal", "send a signal to a job (one waiting for it wakes at once)")
        signal.add_argument("id", type=argument(parse_job_id))
        signal.add_argument("name")
        signal.add_argument("--payload", help="the signal's payload as JSON (default null)")
        sub("cron", "the CRON entries with their next and last ticks")
        sub("cron-trigger", "enqueue a CRON entry's job now").add_argument("name")
        add_stats_arguments(sub("stats", "jobs started, completed and failed; run times"))
        sub("workers", workers_cli.HELP)
        sub("worker-quiet", workers_cli.QUIET_HELP).add_argument("id", metavar="WORKER_ID")
        sub("worker-stop", workers_cli.STOP_HELP).add_argument("id", metavar="WORKER_ID")
        audit_log = sub("audit", workers_cli.AUDIT_HELP)
        audit_log.add_argument("--action", help="only this action (retry, delete, pause ...)")
        audit_log.add_argument(
            "--limit", type=argument(parse_limit), default=100, help="default 100, max 500"
        )
        sub("reencrypt", "seal every encrypted job again with the newest ENCRYPTION_KEYS key")
        sub(
            "check-deploy",
            "jobs waiting in the store that this code cannot run; exit 1 when any (a CI step "
            "before a deploy)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self.as_json = bool(options.get("json"))
        self.stdin = options.get("stdin")
        action = getattr(self, "do_" + options["subcommand"].replace("-", "_"))
        try:
            with audit.acting("cli", "cli"):  # the audit log names the CLI as its actor
                action(options)
        except EXPECTED as exc:
            problem = problem_of(exc, log=False)
            if problem is None:
                raise
            raise CommandError(one_line(problem.message), returncode=1) from None

    # -- output ----------------------------------------------------------------------------
    def emit(self, payload: Any, human: Callable[[], str]) -> None:
        if self.as_json:
            self.stdout.write(json.dumps(payload))
        else:
            self.stdout.write(human())

    def now(self) -> datetime:
        return clock_now()

    def job_rows(self, records: Sequence[JobRecord]) -> str:
        now = self.now()
        return table(
            ("ID", "KIND", "QUEUE", "STATE", "ATTEMPT", "SCHEDULED", "FINISHED", "LAST ERROR"),
            [
                (
                    r.id,
                    display_kind(r.kind, r.args),
                    r.queue,
                    r.state,
                    f"{r.attempt}/{r.max_attempts}",
                    relative(r.scheduled_at, now),
                    relative(r.finished_at, now),
                    last_error(r),
                )
                for r in records
            ],
        )

    # -- subcommands -----------------------------------------------------------------------
    def do_reencrypt(self, options: dict[str, Any]) -> None:
        n = jobs.reencrypt()
        audit.record("reencrypt", "every encrypted job", f"{n} sealed again")
        self.emit(
            {"reencrypted": n},
            lambda: f"sealed {n} job{'' if n == 1 else 's'} again with the newest key",
        )

    def do_check_deploy(self, options: dict[str, Any]) -> None:
        problems = jobs.check_deploy()
        if self.as_json:
            self.stdout.write(
                json.dumps(
                    [
                        {"kind": p.kind, "version": p.version, "jobs": p.jobs, "reason": p.reason}
                        for p in problems
                    ]
                )
            )
        else:
            for problem in problems:
                self.stdout.write(problem.line())
            if not problems:
                self.stdout.write("this code can run every job waiting in the store")
        if problems:
            n = sum(p.jobs for p in problems)
            raise CommandError(
                f"{n} waiting job{'' if n == 1 else 's'} that this code cannot run", returncode=1
            )

    def do_list(self, options: dict[str, Any]) -> None:
        bulk_cli.check_names(options)
        page = fetch_page(
            Listing(
                state=options["state"],
                queue=options["queue"],
                kind=options["kind"],
                workflow=options["workflow"],
                limit=options["limit"],
                after=options["after"],
                kind_prefix=options["kind_prefix"],
                error=options["error"],
                args=options["args_json"],
            )
        )

        def human() -> str:
            if not page.records and page.searched is None:
                return "no jobs"
            text = self.job_rows(page.records) if page.records else "no matching jobs"
            if page.searched is not None:  # a search: it looked at a window of ids
                text += f"\nsearched ids {page.searched[0]} to {page.searched[1]}"
            if page.next_after is not None:
                text += f"\nmore: --after {page.next_after}"
            return text

        self.emit(payloads.job_page(page), human)

    def do_show(self, options: dict[str, Any]) -> None:
        record = actions.get(options["id"])
        waiting = actions.why(record.id)

        def human() -> str:
            text = self.describe(record, timeline=True)
            if waiting is not None:
                text += f"\nwaiting       {waiting.reason}: {waiting.detail}"
            return text

        self.emit(payloads.job_detail(record, waiting), human)

    def do_why(self, options: dict[str, Any]) -> None:
        job_id = options["id"]
        waiting = actions.why(job_id)

        def human() -> str:
            if waiting is None:
                return f"job {job_id} is not waiting (it is running or has finished)"
            line = f"job {job_id} waits: {waiting.reason}: {waiting.detail}"
            if waiting.until is not None:
                line += f" (until {waiting.until.isoformat()})"
            return line

        self.emit({"id": job_id, "waiting": payloads.waiting(waiting)}, human)

    def do_workflow(self, options: dict[str, Any]) -> None:
        from anole_jobs.management import workflow_cli
        from anole_jobs.operations import workflows

        if options["cancel"]:
            record = workflows.cancel(options["id"]).record
        else:
            record = workflows.get(options["id"])
        self.emit(payloads.workflow(record), lambda: workflow_cli.describe(record, self.now()))

    def describe(self, record: JobRecord, *, timeline: bool = False) -> str:
        now = self.now()
        lines = [
            f"job {record.id}  {display_kind(record.kind, record.args)}  ({record.state})",
            f"queue         {record.queue}",
            f"priority      {record.priority}",
            f"attempt       {record.attempt} of {record.max_attempts}",
            f"created       {relative(record.created_at, now)}  ({record.created_at.isoformat()})",
            f"scheduled     {relative(record.scheduled_at, now)}",
            f"attempted     {relative(record.attempted_at, now)}",
            f"finished      {relative(record.finished_at, now)}",
        ]
        if record.unique_key:
            lines.append(f"unique key    {record.unique_key}")
        if record.workflow_id is not None:
            lines.append(f"workflow      {record.workflow_id}  step {record.step_name}")
        lines.append("args          " + json.dumps(record.args, indent=2).replace("\n", "\n  "))
        lines.append("meta          " + json.dumps(record.meta, indent=2).replace("\n", "\n  "))
        if record.state == "completed":
            lines.append(
                "result        "
                + (
                    "none (the handler returned None)"
                    if record.result is None
                    else json.dumps(record.result, indent=2).replace("\n", "\n  ")
                )
            )
        for error in record.errors:
            lines.append(
                f"error (attempt {error.get('attempt')}, {error.get('at')}): "
                f"{error.get('type')}: {error.get('message')}"
            )
            traceback = str(error.get("traceback") or "").rstrip()
            if traceback:
                lines.extend("    " + line for line in traceback.splitlines())
        if timeline:
            from anole_jobs.management import timeline_cli

            lines.extend(timeline_cli.describe(record, now))
        return "\n".join(lines)

    def each_job(
        self, ids: Sequence[int], call: Callable[[int], actions.Outcome[Any]], verb: str
    ) -> None:
        missing = []
        for job in ids:
            try:
                outcome = call(job)
            except NotFound as exc:
                missing.append(exc.message)
                continue
            record = outcome.record
            if not isinstance(record, JobRecord):  # delete: the route answers 204, no body
                if not self.as_json:
                    self.stdout.write(f"job {job} deleted")
                continue
            if outcome.changed:
                line = f"job {record.id} {verb}: {record.state}"
            else:
                line = f"job {record.id} not {verb}: nothing changed (it is {record.state})"
            self.emit(payloads.job(record), _constant(line))
        for message in missing:
            self.stderr.write(message)
        if missing:
            raise SystemExit(1)

    def do_retry(self, options: dict[str, Any]) -> None:
        if self.bulk("retry", options):
            return
        self.each_job(options["ids"], actions.retry, "retried")

    def do_cancel(self, options: dict[str, Any]) -> None:
        if self.bulk("cancel", options):
            return
        self.each_job(options["ids"], actions.cancel, "cancelled")

    def do_delete(self, options: dict[str, Any]) -> None:
        if self.bulk("delete", options):
            return
        self.each_job(options["ids"], actions.delete, "deleted")

    def bulk(self, action: Any, options: dict[str, Any]) -> bool:
        """Act on every job the filters match (bulk_cli); False when ids were given."""
        if bulk_cli.wants_bulk(options):
            bulk_cli.run_bulk(self, action, options, self.stdin)
            return True
        if not options["ids"]:
            raise CommandError(  # a usage error, worded as argparse words its own
                f"jobs {action}: error: give job ids, or filters (--state, --queue, --kind, "
                "--kind-prefix, --error, --args) to act on every matching job",
                returncode=2,
            )
        return False

    def do_counts(self, options: dict[str, Any]) -> None:
        counts = payloads.counts(jobs.counts())
        states = [s for s in STATES if any(s in per for per in counts.values())]
        self.emit(
            counts,
            lambda: (
                table(
                    ("QUEUE", *(s.upper() for s in states)),
                    [(q, *(per.get(s, 0) for s in states)) for q, per in counts.items()],
                )
                if counts
                else "no jobs"
            ),
        )

    def queue_line(
        self, name: str, paused: bool, counts: dict[str, int], served: set[str] | None = None
    ) -> tuple[str, ...]:
        """A queue's row: "paused" or "active" (not paused), and, when `served` (the queues
        live workers run) is given, "no worker" for one that none runs."""
        summary = ", ".join(f"{n} {state}" for state, n in counts.items()) or "no jobs"
        status = "paused" if paused else "active"
        if served is not None and name not in served:
            status += ", no worker"
        return (name, status, summary)

    def do_queues(self, options: dict[str, Any]) -> None:
        records = jobs.queues()
        served = {queue.name for worker in jobs.workers() for queue in worker.queues}
        self.emit(
            payloads.queues(records),
            lambda: table(
                ("QUEUE", "STATUS", "JOBS"),
                [self.queue_line(q.name, q.paused, dict(q.counts), served) for q in records],
            ),
        )

    def _queue(self, outcome: actions.Outcome[Any]) -> None:
        record = outcome.record
        line = "queue {}: {} ({})".format(
            *self.queue_line(record.name, record.paused, dict(record.counts))
        )
        if not outcome.changed:
            line += f"; nothing changed (it was {'paused' if record.paused else 'active'})"
        self.emit(payloads.queue(record), _constant(line))

    def do_pause(self, options: dict[str, Any]) -> None:
        self._queue(
            actions.pause(options["queue"], create=options["create"], how_to_create=HOW_TO_CREATE)
        )

    def do_resume(self, options: dict[str, Any]) -> None:
        self._queue(
            actions.resume(options["queue"], create=options["create"], how_to_create=HOW_TO_CREATE)
        )

    def do_limits(self, options: dict[str, Any]) -> None:
        """Without --concurrency, --rate or --clear: show the queue's limits in force."""
        clear = options["clear"]
        if clear and (options["concurrency"] is not None or options["rate"] is not None):
            raise CommandError("--clear returns both limits to the settings: give it alone")
        changes: dict[str, Any] = {}
        if clear:
            changes = {"global_concurrency": None, "rate_limit": None}
        if options["concurrency"] is not None:
            changes["global_concurrency"] = options["concurrency"]
        if options["rate"] is not None:
            changes["rate_limit"] = options["rate"]
        outcome = actions.set_limits(
            options["queue"], create=options["create"], how_to_create=HOW_TO_CREATE, **changes
        )
        record = outcome.record
        limits = record.limits
        line = (
            f"queue {record.name}: global_concurrency {limits.global_concurrency or 'none'},"
            f" rate_limit {limits.rate_limit or 'none'}"
            + (f", partition {', '.join(limits.partition)}" if limits.partition else "")
            + f" (from the {limits.source}); {record.held} job(s) held"
        )
        if changes and not outcome.changed:
            line += "; nothing changed"
        self.emit(payloads.queue(record), _constant(line))

    def do_cron(self, options: dict[str, Any]) -> None:
        records = jobs.cron_list()
        now = self.now()
        self.emit(
            payloads.cron(records),
            lambda: (
                table(
                    ("NAME", "SCHEDULE", "TIMEZONE", "NEXT", "LAST TICK", "LAST JOB"),
                    [
                        (
                            r.name,
                            r.schedule,
                            r.timezone,
                            relative(r.next_run_at, now),
                            relative(r.last_tick_at, now),
                            r.last_job_id or "-",
                        )
                        for r in records
                    ],
                )
                if records
                else "no cron entries (ANOLE_JOBS['CRON'])"
            ),
        )

    def do_signal(self, options: dict[str, Any]) -> None:
        payload = None
        if options.get("payload") is not None:
            try:
                payload = json.loads(options["payload"])
            except ValueError:
                raise CommandError("--payload must be JSON, e.g. '{\"paid\": true}'") from None
        stored = actions.signal(options["id"], options["name"], payload)
        self.emit(
            {"stored": stored},
            _constant(
                f"signal {options['name']!r} stored on job {options['id']}"
                if stored
                else f"job {options['id']} already has signal {options['name']!r}, or finished:"
                " nothing changed"
            ),
        )

    def do_cron_trigger(self, options: dict[str, Any]) -> None:
        result = actions.trigger(options["name"]).record
        self.emit(
            payloads.enqueued(result),
            lambda: (
                f"enqueued job {result.id} for cron entry {options['name']}"
                + ("" if result.inserted else " (a unique duplicate: the job already waiting)")
            ),
        )

    def do_stats(self, options: dict[str, Any]) -> None:
        query = run_stats.StatsQuery(queue=options["queue"], period=options["period"])
        report = run_stats.read_stats(query)
        self.emit(run_stats.as_json(report), lambda: stats_text(report))

    do_workers = workers_cli.do_workers
    do_audit = workers_cli.do_audit

    def do_worker_quiet(self, options: dict[str, Any]) -> None:
        workers_cli.do_worker_control(self, options, "quiet")

    def do_worker_stop(self, options: dict[str, Any]) -> None:
        workers_cli.do_worker_control(self, options, "stop")
