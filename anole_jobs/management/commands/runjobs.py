"""`manage.py runjobs`: run the workers of every configured queue (or those named) until
SIGTERM/SIGINT, then drain (see docs/runtime.md, "Drain"). This module parses arguments, sets
up logging, checks that the store answers, starts the runtime and handles the signals.

Logging: `-v 0/1/2/3` sets the `anole_jobs` logger to WARNING / INFO / DEBUG / DEBUG with
every logger at DEBUG (as Django's own commands grow chattier with `-v`); `--log-level` names
a level outright. A level set in `LOGGING` is kept unless `-v` or `--log-level` is given.

Processes: `--processes N` (N > 1) makes this process a supervisor of N worker processes
(`anole_jobs.worker.supervisor`, which says why each is a fresh `python -m django runjobs`);
otherwise this process is the worker (`anole_jobs.worker.process`: its signals, its
supervisor's pipe, recycling). `--max-jobs-per-process` / `--max-memory-per-process` recycle
a worker (`anole_jobs.worker.recycle`). A single runjobs past a limit drains and exits with
status 3, for its service manager to start it again.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from anole_jobs import metrics, tracing
from anole_jobs.api import jobs
from anole_jobs.bounds import name_problem
from anole_jobs.errors import ConfigurationError, StoreUnavailable
from anole_jobs.worker import gctune, recycle
from anole_jobs.worker.logline import LineFormatter
from anole_jobs.worker.process import WorkerProcess
from anole_jobs.worker.runner import wait_for_store
from anole_jobs.worker.supervisor import supervise

logger = logging.getLogger("anole_jobs")

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
VERBOSITY_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}
MEMORY_REFUSED = (
    'ANOLE_JOBS["STORE"] is "memory": its jobs live inside one process, so no other process '
    "can give runjobs any work. Use a database or Redis store for runjobs (see docs/stores.md); "
    "to run jobs inside the process that enqueues them, call jobs.start() there"
)


def _at_least_one(what: str) -> Any:
    """An argparse type: an int of at least 1 (a bad value exits 2 with this message)."""
    return _whole_number(what, 1)


def _not_negative(what: str) -> Any:
    """An argparse type: an int of 0 or more (a bad value exits 2 with this message)."""
    return _whole_number(what, 0)


def _whole_number(what: str, least: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text!r}")
        if value < least:
            raise argparse.ArgumentTypeError(f"{what} must be at least {least}, not {value}")
        return value

    return parse


def queue_name(text: str) -> str:
    """``--queue``: a name by the rule every store holds (`anole_jobs.bounds`)."""
    problem = name_problem(text, what="--queue")
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


class Command(BaseCommand):
    help = "Run anole_jobs workers until SIGTERM or SIGINT, then drain."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
            type=queue_name,
            metavar="QUEUE",
            help="run only this queue (repeatable); default: every queue in ANOLE_JOBS['QUEUES']",
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            help="handler slots per queue, overriding each queue's configured concurrency",
        )
        parser.add_argument(
            "--metrics-port",
            type=int,
            metavar="N",
            help="serve Prometheus metrics at http://ADDR:N/metrics from this process "
            "(0: a free port, logged)",
        )
        parser.add_argument(
            "--metrics-addr",
            default="0.0.0.0",
            metavar="A",
            help="address for --metrics-port to listen on (default: 0.0.0.0)",
        )
        parser.add_argument(
            "--log-level",
            choices=LEVELS,
            type=str.upper,
            help="level of the anole_jobs logger (default: INFO unless LOGGING sets one)",
        )
        parser.add_argument(
            "--processes",
            type=_at_least_one("--processes"),
            default=1,
            metavar="N",
            help="worker processes to run under one supervisor, each with its own connections "
            "(default: 1, this process runs the workers itself)",
        )
        parser.add_argument(
            "--max-jobs-per-process",
            type=_at_least_one("--max-jobs-per-process"),
            metavar="M",
            help="after M jobs, a worker process claims nothing more, finishes its jobs and is "
            "replaced (a single runjobs exits with status 3)",
        )
        parser.add_argument(
            "--max-memory-per-process",
            type=_at_least_one("--max-memory-per-process"),
            metavar="MIB",
            help="past MIB mebibytes of resident memory, a worker process claims nothing more, "
            "finishes its jobs and is replaced (a single runjobs exits with status 3)",
        )
        parser.add_argument(
            "--gc-threshold",
            type=_not_negative("--gc-threshold"),
            default=gctune.DEFAULT_THRESHOLD,
            metavar="N",
            help="once the workers are up, freeze the start-up's objects out of Python's "
            "garbage collector and collect the young generation every N allocations "
            f"(default: {gctune.DEFAULT_THRESHOLD:,}; 0: leave the collector as it is)",
        )
        # Set by the supervisor on the workers it starts: their number, for their log lines.
        parser.add_argument("--supervised", type=int, help=argparse.SUPPRESS)
        # No default for -v: left out, a level set in LOGGING is kept.
        parser.set_defaults(verbosity=None)

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = options.get("verbosity")
        supervised = options.get("supervised")
        self._configure_logging(
            options.get("log_level"), None if verbosity is None else int(verbosity), supervised
        )
        limits = recycle.RecycleLimits(
            options.get("max_jobs_per_process"), options.get("max_memory_per_process")
        )
        processes = options.get("processes") or 1
        concurrency = options.get("concurrency")
        if concurrency is not None and concurrency < 1:
            raise CommandError("--concurrency must be at least 1")
        try:
            service = jobs.service
            settings = service.settings
            if settings.deployment == "lambda":
                raise CommandError(
                    'ANOLE_JOBS["DEPLOYMENT"] is "lambda": this deployment only enqueues; '
                    'run workers from a deployment with DEPLOYMENT="server"'
                )
            if settings.run == "manual":
                raise CommandError(
                    'ANOLE_JOBS["RUN"] is "manual" (tests): runjobs starts no workers'
                )
            if not service.store.supports_other_processes:
                raise CommandError(MEMORY_REFUSED)  # no job enqueued elsewhere would reach it
            self._check_cron(service)
            problem = recycle.memory_limit_problem(limits)
            if problem is not None:
                # Refused as any bad option is (status 2).
                raise CommandError(problem, returncode=2)
            # Before claiming anything: a store that does not answer is a start-up failure a
            # service manager must see (exit 1, one line); once running, outages are ridden out.
            wait_for_store(service, settings.startup_timeout.total_seconds())
            if processes > 1 and supervised is None:
                status = supervise(
                    service.settings,
                    options,
                    processes,
                    observe=lambda: self._start_observability(service.settings, options),
                )
                if status:
                    sys.exit(status)
                return
            self._start_observability(service.settings, options)
            process = WorkerProcess(
                limits, supervised=supervised, gc_threshold=options["gc_threshold"]
            )
            process.start(lambda: jobs.start(queues=options.get("queues"), concurrency=concurrency))
        except (ConfigurationError, StoreUnavailable) as exc:
            raise CommandError(str(exc)) from None
        status = process.run(service.bus, forget=lambda: jobs.stop(drain=True))
        if status:
            sys.exit(status)

    def _start_observability(self, settings: Any, options: dict[str, Any]) -> None:
        """Say once what is off, and serve metrics when asked (h11-obs; keep at merge)."""
        off = {"metrics": metrics.status(settings), "tracing": tracing.status(settings)}
        for what, reason in off.items():
            if reason is not None:
                logger.info("runjobs: %s off: %s", what, reason)
        port = options.get("metrics_port")
        if port is None:
            return
        if port < 0 or port > 65535:
            raise CommandError("--metrics-port must be between 0 and 65535")
        if off["metrics"] is not None:
            raise CommandError(f"--metrics-port needs metrics on, but {off['metrics']}")
        try:
            addr, bound = metrics.serve(port, options.get("metrics_addr") or "0.0.0.0")
        except OSError as exc:
            raise CommandError(f"cannot serve metrics on port {port}: {exc}") from None
        logger.info("runjobs: serving metrics at http://%s:%d/metrics", addr, bound)

    def _check_cron(self, service: Any) -> None:
        try:
            from anole_jobs.maintenance.cron import load_cron
        except ImportError:
            return
        load_cron(service.settings)  # raises ConfigurationError on an invalid entry

    def _configure_logging(
        self, level: str | None, verbosity: int | None, worker: int | None = None
    ) -> None:
        package_logger = logging.getLogger("anole_jobs")
        if level is not None:
            package_logger.setLevel(level)
        elif verbosity is not None:
            package_logger.setLevel(VERBOSITY_LEVELS.get(verbosity, logging.DEBUG))
            if verbosity >= 3:
                logging.getLogger().setLevel(logging.DEBUG)
        elif package_logger.level == logging.NOTSET:
            package_logger.setLevel(logging.INFO)
        if not logging.getLogger().handlers and not package_logger.handlers:
            handler = logging.StreamHandler()
            tag = "" if worker is None else f" [worker {worker}]"
            handler.setFormatter(  # logging.Formatter's text, for less per line
                LineFormatter(f"%(asctime)s %(levelname)s %(name)s{tag}: %(message)s")
            )
            package_logger.addHandler(handler)
