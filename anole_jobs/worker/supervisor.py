"""`runjobs --processes N`: a supervisor that runs N worker processes and keeps them running.

Each worker is a fresh ``python -m django runjobs`` child, not a fork and not a
`multiprocessing` child: a forked Django process would share the parent's database sockets,
its threads' locks and prometheus-client's state, and a `multiprocessing` "spawn" child
re-imports the launching script as its main module (``manage.py`` is not written for that).
A new interpreter per worker sets Django up from scratch, opens its own connections, runs its
own heartbeats and stands for leadership on its own: exactly what a separate `runjobs` does.

How the supervisor talks to a worker: the child's stdin is a pipe from the supervisor. A line
``drain SIGTERM`` asks it to drain (as a first SIGTERM would), ``give-back`` to give its
running jobs back now (as a second signal would), and end-of-file (the supervisor is gone,
even killed with SIGKILL) asks it to drain. Requests by pipe are idempotent, unlike signals:
a worker that already got SIGTERM from a service manager that signals every process of the
unit is not pushed into a give-back by the supervisor's forward. Workers run in sessions of
their own, so a terminal's Ctrl-C reaches only the supervisor, which forwards it once.

A worker exits with `RECYCLE_EXIT` when it passed `--max-jobs-per-process` or
`--max-memory-per-process` and finished the jobs it held: the supervisor starts a new one at
once. Any other exit it did not ask for is restarted after a delay that doubles with each
failure in a row, up to `Backoff.cap` (a worker that ran `Backoff.stable_after` seconds
starts over from `Backoff.first`). `Supervision` decides all that and is pure (time is passed
in); `Supervisor` runs the processes; `supervise` is what `runjobs --processes N` calls (the
workers' command lines, the shared metrics directory). A worker's own side (signals, the pipe,
recycling) is `anole_jobs.worker.process`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal

from anole_jobs import metrics
from anole_jobs.background import THREAD_DIED_EXIT
from anole_jobs.clock import monotonic
from anole_jobs.conf import Settings
from anole_jobs.errors import ConfigurationError

logger = logging.getLogger("anole_jobs.supervisor")

#: The exit status of a worker that reached its recycling limit and drained: "replace me".
RECYCLE_EXIT = 3
#: Lines the supervisor writes to a worker's stdin.
DRAIN = "drain"
GIVE_BACK = "give-back"


@dataclass(frozen=True)
class Backoff:
    """How long the supervisor waits before restarting a worker that exited by itself."""

    first: float = 1.0
    cap: float = 30.0
    #: A worker that ran at least this long before exiting starts its failures over.
    stable_after: float = 60.0

    def delay(self, failures: int) -> float:
        """The wait before restart number `failures` in a row (1, 2, …)."""
        if failures < 1:
            return 0.0
        return float(min(self.cap, self.first * 2 ** min(failures - 1, 62)))


@dataclass(frozen=True)
class Decision:
    """What to do about a worker that exited."""

    action: Literal["restart", "done"]
    delay: float
    message: str
    #: For "done": whether the worker drained cleanly (exit status 0, or a recycle).
    clean: bool = True


def describe_status(code: int) -> str:
    """How a process ended, for a log line: "exited with code 1", "was killed by SIGKILL"."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    if code == THREAD_DIED_EXIT:
        return f"exited with code {code} (one of its background threads died)"
    return f"exited with code {code}"


class Supervision:
    """The supervisor's decisions, with the clock passed in (unit-tested with a fake one)."""

    def __init__(self, count: int, backoff: Backoff | None = None) -> None:
        self.backoff = backoff or Backoff()
        self.failures = [0] * count
        self.started_at: list[float | None] = [None] * count
        self.stopping = False

    def started(self, slot: int, now: float) -> None:
        self.started_at[slot] = now

    def stop(self) -> None:
        """The supervisor was asked to stop: nothing is restarted from now on."""
        self.stopping = True

    def could_not_start(self, slot: int) -> float:
        """Starting the worker failed: the wait before the next try (a failure in a row)."""
        self.failures[slot] += 1
        return self.backoff.delay(self.failures[slot])

    def exited(self, slot: int, pid: int, code: int, now: float) -> Decision:
        name = f"worker {slot + 1} (pid {pid})"
        began = self.started_at[slot]
        ran = 0.0 if began is None else max(0.0, now - began)
        self.started_at[slot] = None
        if self.stopping:
            if code in (0, RECYCLE_EXIT):
                return Decision("done", 0.0, f"{name} drained and exited")
            return Decision(
                "done",
                0.0,
                f"{name} {describe_status(code)}: its drain did not end cleanly "
                "(jobs it still ran were given back, or run again after their lease)",
                clean=False,
            )
        if code == RECYCLE_EXIT:
            self.failures[slot] = 0
            return Decision("restart", 0.0, f"{name} recycled; starting its replacement")
        if ran >= self.backoff.stable_after:
            self.failures[slot] = 0
        self.failures[slot] += 1
        delay = self.backoff.delay(self.failures[slot])
        in_a_row = f", {self.failures[slot]} times in a row" if self.failures[slot] > 1 else ""
        return Decision(
            "restart",
            delay,
            f"{name} {describe_status(code)} unexpectedly after {ran:.1f} s"
            f"{in_a_row}; restarting it in {delay:g} s",
        )


@dataclass
class _Child:
    slot: int
    proc: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tell(self, line: str) -> None:
        stdin: IO[bytes] | None = self.proc.stdin
        if stdin is None:
            return
        try:
            stdin.write(line.encode() + b"\n")
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # it is exiting: its waiter reports it


class Supervisor:
    """Runs `count` workers (`command(slot)` is a worker's argv) until SIGTERM/SIGINT and the
    drain of every worker; `run()` returns the exit status: 0 after a clean drain, 1 if a
    worker's drain did not end cleanly (a second signal, or a worker that failed)."""

    def __init__(
        self,
        command: Callable[[int], Sequence[str]],
        count: int,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        backoff: Backoff | None = None,
        on_exit: Callable[[int], None] = lambda pid: None,
    ) -> None:
        self.command = command
        self.count = count
        self.env = env
        self.cwd = cwd
        self.supervision = Supervision(count, backoff)
        self.on_exit = on_exit
        self.children: dict[int, _Child] = {}
        self._restarts: dict[int, float] = {}  # slot -> when (monotonic)
        self._exits: list[tuple[_Child, int]] = []
        self._signals: list[str] = []
        self._handled = 0
        self._clean = True
        self._previous_wakeup_fd = -1
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)

    # -- signals (the handler only notes the signal and wakes the loop) ----------------------
    def install(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        # The C-level handler writes to the pipe as well: a signal that lands just before
        # poll() blocks (after the last point where Python runs its handlers) still wakes it.
        self._previous_wakeup_fd = signal.set_wakeup_fd(self._wake_write, warn_on_full_buffer=False)

    def _on_signal(self, signum: int, frame: object) -> None:
        self._signals.append(signal.Signals(signum).name)
        if len(self._signals) >= 3:
            # A third: stop at once, as a single runjobs does (the jobs wait for their lease).
            for child in list(self.children.values()):
                with contextlib.suppress(OSError):
                    child.proc.kill()
            os._exit(1)
        self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # full: the loop wakes anyway
            os.write(self._wake_write, b"!")

    # -- processes ------------------------------------------------------------------------------
    def _start(self, slot: int) -> None:
        try:
            proc = subprocess.Popen(
                list(self.command(slot)),
                env=self.env,
                cwd=self.cwd,
                stdin=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:  # no memory or processes left to start one: try again later
            delay = self.supervision.could_not_start(slot)
            logger.error(
                "could not start worker %d (%s); trying again in %g s", slot + 1, exc, delay
            )
            self._restarts[slot] = monotonic() + delay
            return
        child = _Child(slot, proc)
        self.children[slot] = child
        self.supervision.started(slot, monotonic())
        logger.info("worker %d started (pid %d)", slot + 1, proc.pid)
        threading.Thread(
            target=self._await, args=(child,), name=f"anole-supervise-{slot + 1}", daemon=True
        ).start()

    def _await(self, child: _Child) -> None:
        code = child.proc.wait()
        self._exits.append((child, code))
        self._wake()

    def _forward(self, name: str, first: bool) -> None:
        live = list(self.children.values())
        if first:
            self.supervision.stop()
            self._restarts.clear()
            logger.info(
                "runjobs supervisor: %s received; asking %d worker(s) to drain; a second "
                "SIGTERM or SIGINT gives their running jobs back now",
                name,
                len(live),
            )
            for child in live:
                child.tell(f"{DRAIN} {name}")
        else:
            logger.warning(
                "runjobs supervisor: second signal: asking %d worker(s) to give their running "
                "jobs back now",
                len(live),
            )
            for child in live:
                child.tell(GIVE_BACK)

    def _handle_exit(self, child: _Child, code: int) -> None:
        if self.children.get(child.slot) is child:
            del self.children[child.slot]
        if child.proc.stdin is not None:
            with contextlib.suppress(OSError):
                child.proc.stdin.close()
        self.on_exit(child.pid)
        decision = self.supervision.exited(child.slot, child.pid, code, monotonic())
        if decision.action == "restart":
            level = logging.INFO if code == RECYCLE_EXIT else logging.WARNING
            logger.log(level, decision.message)
            self._restarts[child.slot] = monotonic() + decision.delay
        else:
            logger.log(logging.INFO if decision.clean else logging.ERROR, decision.message)
            self._clean = self._clean and decision.clean

    def _wait(self, timeout: float | None) -> None:
        # A signal handler writes to the pipe. poll(), not select(): select() refuses a
        # descriptor numbered 1024 or more, which a process with many open files hands out.
        poller = select.poll()
        poller.register(self._wake_read, select.POLLIN)
        poller.poll(None if timeout is None else max(0, math.ceil(timeout * 1000)))
        try:
            while os.read(self._wake_read, 512):
                pass
        except BlockingIOError:
            pass

    def run(self) -> int:
        self.install()
        try:
            return self._run()
        finally:
            # Whoever runs the supervisor in a longer-lived process (a test) gets its own back.
            signal.set_wakeup_fd(self._previous_wakeup_fd)

    def _run(self) -> int:
        for slot in range(self.count):
            self._start(slot)
        logger.info(
            "runjobs supervisor (pid %d) running %d worker processes; send SIGTERM or SIGINT "
            "to drain",
            os.getpid(),
            self.count,
        )
        while self.children or self._restarts:
            while self._handled < len(self._signals):
                self._forward(self._signals[self._handled], first=self._handled == 0)
                self._handled += 1
            while self._exits:
                self._handle_exit(*self._exits.pop(0))
            now = monotonic()
            for slot, when in sorted(self._restarts.items(), key=lambda item: item[1]):
                if when <= now and not self.supervision.stopping:
                    del self._restarts[slot]
                    self._start(slot)
            if not self.children and not self._restarts:
                break
            due = min(self._restarts.values(), default=None)
            self._wait(None if due is None else max(0.0, due - monotonic()))
        if self._handled > 1:
            self._clean = False  # a second signal cut the drain short, as for one runjobs
        logger.info(
            "runjobs supervisor: every worker stopped; %s",
            "exiting 0" if self._clean else "a drain did not end cleanly; exiting 1",
        )
        return 0 if self._clean else 1


def worker_argv(options: Mapping[str, Any], slot: int) -> list[str]:
    """The command line of worker `slot` (0-based): the supervisor's own `runjobs` options,
    less those only the supervisor uses."""
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
        ("gc_threshold", "--gc-threshold"),
        ("settings", "--settings"),
        ("pythonpath", "--pythonpath"),
    ):
        value = options.get(option)
        if value is not None:
            argv += [flag, str(value)]
    if options.get("traceback"):
        argv.append("--traceback")
    return argv


def supervise(
    settings: Settings,
    options: Mapping[str, Any],
    processes: int,
    *,
    observe: Callable[[], None],
) -> int:
    """Run `processes` workers (with the `runjobs` `options` they were given) under a
    supervisor until SIGTERM/SIGINT; the exit status. With `--metrics-port`, the supervisor
    serves the sum of its workers (`observe` starts that, once the multiprocess directory is
    set: one made here when none is configured, removed at the end)."""
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
            raise ConfigurationError(f"--metrics-port needs metrics on, but {off}")
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
            observe()
        supervisor = Supervisor(
            lambda slot: worker_argv(options, slot),
            processes,
            env=env,
            on_exit=metrics.process_exited,
        )
        return supervisor.run()
    finally:
        metrics.process_exited()  # its own files, if a directory was set before it started
        if made_dir is not None:
            shutil.rmtree(made_dir, ignore_errors=True)
