"""`manage.py runjobs`: run the workers of every configured queue (or those named) until
SIGTERM/SIGINT, then drain (see docs/runtime.md, "Drain"). This module parses arguments, sets
up logging, checks that the store answers, starts the runtime and handles the signals.

Logging: `-v 0/1/2/3` sets the `anole_jobs` logger to WARNING / INFO / DEBUG / DEBUG with
every logger at DEBUG (as Django's own commands grow chattier with `-v`); `--log-level` names
a level outright. A level set in `LOGGING` is kept unless `-v` or `--log-level` is given.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from anole_jobs import metrics, tracing
from anole_jobs.api import jobs
from anole_jobs.errors import ConfigurationError, StoreUnavailable
from anole_jobs.worker.runner import wait_for_store

logger = logging.getLogger("anole_jobs")

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
VERBOSITY_LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG, 3: logging.DEBUG}
#: Seconds a second signal's give-back may take before runjobs exits anyway.
GIVE_BACK_TIMEOUT = 3.0
MEMORY_REFUSED = (
    'ANOLE_JOBS["STORE"] is "memory": its jobs live inside one process, so no other process '
    "can give runjobs any work. Use a database or Redis store for runjobs (see docs/stores.md); "
    "to run jobs inside the process that enqueues them, call jobs.start() there"
)


class Command(BaseCommand):
    help = "Run anole_jobs workers until SIGTERM or SIGINT, then drain."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
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
        # No default for -v: left out, a level set in LOGGING is kept.
        parser.set_defaults(verbosity=None)

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = options.get("verbosity")
        self._configure_logging(
            options.get("log_level"), None if verbosity is None else int(verbosity)
        )
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
            if settings.store.kind == "memory":
                raise CommandError(MEMORY_REFUSED)
            self._check_cron(service)
            # Before claiming anything: a store that does not answer is a start-up failure a
            # service manager must see (exit 1, one line); once running, outages are ridden out.
            wait_for_store(service, settings.startup_timeout.total_seconds())
            self._start_observability(service.settings, options)
            signals = _Signals()
            signals.install()
            runtime = jobs.start(queues=options.get("queues"), concurrency=concurrency)
            signals.runtime = runtime
        except (ConfigurationError, StoreUnavailable) as exc:
            raise CommandError(str(exc)) from None
        logger.info(
            "runjobs running %d queue(s); send SIGTERM or SIGINT to drain", len(runtime.workers)
        )
        signals.wait()
        runtime.stop(
            drain=True,
            reason=f"runjobs: {signals.first} received",
            hint="a second SIGTERM or SIGINT gives them back now and exits",
        )
        signals.drained()  # a second signal's give-back, if one began, ends the process
        jobs.stop(drain=True)  # the runtime has stopped: this only forgets it
        metrics.process_exited()
        logger.info("runjobs: stopped")

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

    def _configure_logging(self, level: str | None, verbosity: int | None) -> None:
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
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
            )
            package_logger.addHandler(handler)


class _Signals:
    """SIGTERM/SIGINT: the first drains; a second, during the drain, gives the running jobs
    back (fenced, their attempt not counted) and exits 1; a third exits at once.

    The handler itself only sets flags and starts a thread: the give-back makes store calls,
    which must not run inside a signal handler that may have interrupted one."""

    def __init__(self) -> None:
        self.received = False
        self.first = "signal"
        self.runtime: Any = None
        self._aborting: threading.Thread | None = None
        self._drained = False
        # The handler wakes the main thread through a pipe, not a threading.Event: an Event's
        # set() takes a lock that the main thread may hold at the very moment the handler
        # interrupts it (inside Event.wait), and then the process never drains. os.write and
        # os.read take no Python lock.
        self._wake_read, self._wake_write = os.pipe()

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def wait(self) -> None:
        """Block the main thread until the first SIGTERM or SIGINT."""
        while not self.received:
            os.read(self._wake_read, 1)  # retried after each signal handler (PEP 475)

    def _on_signal(self, signum: int, frame: object) -> None:
        if not self.received:
            self.first = signal.Signals(signum).name
            self.received = True
            os.write(self._wake_write, b"!")
            return
        if self._drained:
            return  # the drain is over: the process is about to exit anyway
        if self._aborting is not None or self.runtime is None:
            sys.stderr.flush()
            os._exit(1)
        self._aborting = threading.Thread(
            target=self._give_back_and_exit, name="runjobs-abort", daemon=True
        )
        self._aborting.start()

    def drained(self) -> None:
        """The drain returned. If a second signal's give-back runs, wait for it to end the
        process (with status 1): the drain may have ended only because the give-back cancelled
        the handlers, and exiting now would cut its write short."""
        # Signal handlers run in this (the main) thread, between its statements: once this
        # flag is set, no new give-back can start.
        self._drained = True
        if self._aborting is not None:
            self._aborting.join()

    def _give_back_and_exit(self) -> None:
        name = "runjobs-give-back"
        given: list[int] = []
        worker = threading.Thread(
            target=lambda: given.append(self.runtime.give_back_running(timeout=GIVE_BACK_TIMEOUT)),
            name=name,
            daemon=True,
        )
        worker.start()
        worker.join(GIVE_BACK_TIMEOUT + 1.0)
        if given:
            logger.warning(
                "runjobs: second signal: gave back %d running job(s) (they run again at once, "
                "the attempt not counted); exiting now",
                given[0],
            )
        else:
            logger.warning(
                "runjobs: second signal: could not give the running jobs back in time; they "
                "run again after their lease; exiting now"
            )
        sys.stderr.flush()
        os._exit(1)
