"""`manage.py runjobs`: run the workers of every configured queue (or those named) until
SIGTERM/SIGINT, then drain (see docs/runtime.md, "Drain"). This module parses arguments, sets
up logging, checks that the store answers, starts the runtime and handles the signals.

Logging: `-v 0/1/2/3` sets the `anole_jobs` logger to WARNING / INFO / DEBUG / DEBUG with
every logger at DEBUG (as Django's own commands grow chattier with `-v`); `--log-level` names
a level outright. A level set in `LOGGING` is kept unless `-v` or `--log-level` is given.

Processes: `--processes N` (N > 1) makes this process a supervisor of N worker processes
(`anole_jobs.worker.supervisor`, which says why each is a fresh `python -m django runjobs`);
`--max-jobs-per-process` / `--max-memory-per-process` recycle a worker
(`anole_jobs.worker.recycle`). A single runjobs past a limit drains and exits with status 3,
for its service manager to start it again.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from anole_jobs import metrics, tracing
from anole_jobs.api import jobs
from anole_jobs.bounds import name_problem
from anole_jobs.errors import ConfigurationError, StoreUnavailable
from anole_jobs.worker import recycle
from anole_jobs.worker.logline import LineFormatter
from anole_jobs.worker.runner import wait_for_store
from anole_jobs.worker.supervisor import DRAIN, GIVE_BACK, RECYCLE_EXIT, Supervisor

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
#: Seconds between checks for a signal while a recycling worker waits for its running jobs.
RECYCLE_RECHECK = 0.5


def _at_least_one(what: str) -> Any:
    """An argparse type: an int of at least 1 (a bad value exits 2 with this message)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text!r}")
        if value < 1:
            raise argparse.ArgumentTypeError(f"{what} must be at least 1, not {value}")
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
        limits = recycle.Limits(
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
            if settings.store.kind == "memory":
                raise CommandError(MEMORY_REFUSED)
            self._check_cron(service)
            _check_memory_limit(limits)
            # Before claiming anything: a store that does not answer is a start-up failure a
            # service manager must see (exit 1, one line); once running, outages are ridden out.
            wait_for_store(service, settings.startup_timeout.total_seconds())
            if processes > 1 and supervised is None:
                status = self._supervise(service.settings, options, processes)
                if status:
                    sys.exit(status)
                return
            self._start_observability(service.settings, options)
            signals = _Signals()
            signals.install()
            if supervised is not None:
                _listen_to_supervisor(signals)
            runtime = jobs.start(queues=options.get("queues"), concurrency=concurrency)
            signals.runtime = runtime
        except (ConfigurationError, StoreUnavailable) as exc:
            raise CommandError(str(exc)) from None
        unsubscribe = None
        if limits.any:
            unsubscribe = recycle.RecycleWatch(limits, signals.recycle).subscribe(service.bus)
        logger.info(
            "runjobs running %d queue(s); send SIGTERM or SIGINT to drain", len(runtime.workers)
        )
        signals.wait()
        recycled = signals.recycling is not None and not signals.received
        if recycled:
            given_back = recycle.stop_claiming(runtime)
            logger.info(
                "runjobs: recycling after %s: claiming nothing more (%d job(s) claimed but not "
                "started given back); waiting for %d running job(s) to finish",
                signals.recycling,
                given_back,
                runtime.runs.count(),
            )
            recycle.wait_idle(runtime, lambda: signals.received, RECYCLE_RECHECK)
            recycled = not signals.received
        runtime.stop(
            drain=True,
            reason="runjobs: recycling" if recycled else f"runjobs: {signals.first} received",
            hint="a second SIGTERM or SIGINT gives them back now and exits",
        )
        signals.drained()  # a second signal's give-back, if one began, ends the process
        if unsubscribe is not None:
            unsubscribe()
        jobs.stop(drain=True)  # the runtime has stopped: this only forgets it
        metrics.process_exited()
        if recycled:
            logger.info(
                "runjobs: stopped; exiting with status %d so that it is replaced", RECYCLE_EXIT
            )
            sys.exit(RECYCLE_EXIT)
        logger.info("runjobs: stopped")

    def _supervise(self, settings: Any, options: dict[str, Any], processes: int) -> int:
        """Run `processes` workers under a supervisor until SIGTERM/SIGINT; the exit status."""
        port = options.get("metrics_port")
        env = dict(os.environ)
        # `python -m django` puts the working directory first on sys.path; a project started
        # as `python path/to/manage.py` has the script's directory there instead.
        env["PYTHONPATH"] = os.pathsep.join(
            [sys.path[0] or os.getcwd(), *filter(None, [env.get("PYTHONPATH")])]
        )
        made_dir = None
        if port is not None:
            off = metrics.status(settings)
            if off is not None:
                raise CommandError(f"--metrics-port needs metrics on, but {off}")
            if metrics.multiprocess_dir() is None:
                made_dir = tempfile.mkdtemp(prefix="anole-jobs-metrics-")
                os.environ[metrics.MULTIPROC_ENV] = env[metrics.MULTIPROC_ENV] = made_dir
            logger.info(
                "runjobs supervisor: serving the sum of its workers' metrics (multiprocess "
                "directory %s)",
                metrics.multiprocess_dir(),
            )
        try:
            if port is not None:
                self._start_observability(settings, options)
            supervisor = Supervisor(
                lambda slot: _worker_argv(options, slot),
                processes,
                env=env,
                on_exit=metrics.process_exited,
            )
            return supervisor.run()
        finally:
            metrics.process_exited()  # its own files, if a directory was set before it started
            if made_dir is not None:
                shutil.rmtree(made_dir, ignore_errors=True)

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


def _check_memory_limit(limits: recycle.Limits) -> None:
    """A memory limit below what a worker holds at its start would recycle it after every
    job: refuse it (status 2, as for any bad option)."""
    if limits.max_memory_mib is None:
        return
    used = recycle.rss_bytes()
    if used is not None and used >= limits.max_memory_mib * recycle.MIB:
        raise CommandError(
            f"--max-memory-per-process {limits.max_memory_mib} is below the memory a worker "
            f"holds before it runs any job ({used / recycle.MIB:.0f} MiB here): every worker "
            "would be recycled after each job. Give a limit well above it",
            returncode=2,
        )


def _worker_argv(options: dict[str, Any], slot: int) -> list[str]:
    """The command line of worker `slot` (0-based): this runjobs's own options, less those
    only the supervisor uses."""
    # The supervisor ran the system checks: its workers do not print them again.
    argv = [sys.executable, "-m", "django", "runjobs", "--supervised", str(slot + 1)]
    argv.append("--skip-checks")
    for queue in options.get("queues") or ():
        argv += ["--queue", queue]
    for option, flag in (
        ("concurrency", "--concurrency"),
        ("log_level", "--log-level"),
        ("verbosity", "--verbosity"),
        ("max_jobs_per_process", "--max-jobs-per-process"),
        ("max_memory_per_process", "--max-memory-per-process"),
        ("settings", "--settings"),
        ("pythonpath", "--pythonpath"),
    ):
        value = options.get(option)
        if value is not None:
            argv += [flag, str(value)]
    if options.get("traceback"):
        argv.append("--traceback")
    return argv


def _listen_to_supervisor(signals: _Signals) -> None:
    """A supervised worker reads its supervisor's requests from stdin (see
    `anole_jobs.worker.supervisor`): ``drain NAME``, ``give-back``; end-of-file means the
    supervisor is gone, and the worker drains."""

    def lines() -> Any:
        # os.read, not sys.stdin: a daemon thread blocked inside a buffered reader's lock
        # makes the interpreter abort at exit.
        pending = b""
        while True:
            try:
                chunk = os.read(0, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                return
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                yield raw.decode(errors="replace").strip()

    def listen() -> None:
        for line in lines():
            if line.startswith(DRAIN):
                name = line[len(DRAIN) :].strip() or "SIGTERM"
                signals.request_drain(f"{name} (from the supervisor)")
            elif line == GIVE_BACK:
                signals.request_drain("a give-back request from the supervisor")
                signals.escalate(from_signal=False)
        signals.request_drain("end of input (the supervisor is gone)")

    threading.Thread(target=listen, name="runjobs-supervisor-pipe", daemon=True).start()


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
        #: Signals received (a supervisor's requests by pipe are not counted: they repeat
        #: what a signal to the worker itself may already have asked).
        self.count = 0
        #: Why this worker recycles (set once, by `recycle`), or None.
        self.recycling: str | None = None
        # Taken without blocking by whoever starts the give-back (a signal handler must never
        # block): a second request, from the supervisor's pipe, sees it taken and stops there.
        self._abort_gate = threading.Lock()
        self._abort_assigned = threading.Event()
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
        while not self.received and self.recycling is None:
            os.read(self._wake_read, 1)  # retried after each signal handler (PEP 475)

    def recycle(self, reason: str) -> None:
        """Past a recycling limit (called from a worker thread): wake the main thread."""
        self.recycling = reason
        os.write(self._wake_write, b"!")

    def request_drain(self, why: str) -> None:
        """Drain (idempotent): a first signal, or the supervisor's request."""
        if self.received:
            return
        self.first = why
        self.received = True
        os.write(self._wake_write, b"!")

    def _on_signal(self, signum: int, frame: object) -> None:
        self.count += 1
        if self.count == 1:
            self.request_drain(signal.Signals(signum).name)
            return
        self.escalate(from_signal=True)

    def escalate(self, *, from_signal: bool) -> None:
        """Give the running jobs back now and exit 1 (a second signal); a third signal exits
        at once."""
        if self._drained:
            return  # the drain is over: the process is about to exit anyway
        if self.runtime is None or not self._abort_gate.acquire(blocking=False):
            if not from_signal and self.runtime is not None:
                return  # the give-back already runs
            sys.stderr.flush()
            os._exit(1)
        self._aborting = threading.Thread(
            target=self._give_back_and_exit, name="runjobs-abort", daemon=True
        )
        self._aborting.start()
        if not from_signal:
            self._abort_assigned.set()  # never from a signal handler (see `drained`)

    def drained(self) -> None:
        """The drain returned. If a second signal's give-back runs, wait for it to end the
        process (with status 1): the drain may have ended only because the give-back cancelled
        the handlers, and exiting now would cut its write short."""
        # Signal handlers run in this (the main) thread, between its statements: once this
        # flag is set, no new give-back can start.
        self._drained = True
        if self._abort_gate.acquire(blocking=False):
            return  # no give-back began, and none can now
        if self._aborting is None:
            # The supervisor's give-back request took the gate a moment ago, in its own
            # thread; a signal handler would have assigned `_aborting` before returning.
            self._abort_assigned.wait()
        assert self._aborting is not None
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
