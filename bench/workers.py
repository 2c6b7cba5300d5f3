"""The worker a scenario measures: ONE `manage.py runjobs` subprocess (started, watched,
always stopped: SIGTERM, then SIGKILL), or for the memory store, whose jobs live in one
process, `jobs.start()` inside the bench process. Optional: py-spy on the runjobs process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any, Protocol

from bench.common import BENCH_DIR, CONCURRENCY, QUEUE, ROOT, Deadline, Options, log


class Bench(Protocol):
    """What a worker uses of the bench that starts it (`bench.context.Bench`, which imports
    this module: the dependency goes that way only)."""

    store: str
    tmp: str
    env: dict[str, str]
    options: Options
    jobs: Any


class RunjobsWorker:
    """ONE `manage.py runjobs --queue default --concurrency 10` subprocess."""

    UP_MARKER = "runjobs running"

    def __init__(self, bench: Bench, *, args: tuple[str, ...] = (), ups: int = 1) -> None:
        self.bench = bench
        #: More options for runjobs, and how many "up" lines mean every worker is up (one
        #: per worker process under `--processes`).
        self.args = args
        self.ups = ups
        self._seen_up = 0
        self.proc: subprocess.Popen[str] | None = None
        self.up = threading.Event()
        self.lines: deque[str] = deque(maxlen=400)
        self.levels: Counter[str] = Counter()
        self.profiler: subprocess.Popen[bytes] | None = None
        self.diag_path = os.path.join(bench.tmp, "diag.json")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self, deadline: Deadline) -> None:
        env = dict(self.bench.env, ANOLE_BENCH_RUN="auto", PYTHONUNBUFFERED="1")
        if self.bench.options.diagnose:
            env["ANOLE_BENCH_DIAG"] = self.diag_path
        cmd = [
            sys.executable,
            str(BENCH_DIR / "manage.py"),
            "runjobs",
            "--queue",
            QUEUE,
            "--concurrency",
            str(CONCURRENCY),
            "--log-level",
            "INFO",
            *self.args,
            *os.environ.get("ANOLE_BENCH_RUNJOBS_ARGS", "").split(),
        ]
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            cwd=str(ROOT),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        threading.Thread(target=self._read, name="bench-runjobs-log", daemon=True).start()
        while not self.up.wait(0.05):
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"runjobs exited with {self.proc.returncode} before it was up:\n"
                    + "".join(list(self.lines)[-30:])
                )
            deadline.check("(no start-up line from runjobs)\n" + "".join(list(self.lines)[-30:]))
        log(f"{self.bench.store}: runjobs pid {self.proc.pid} up")

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            for level in ("WARNING", "ERROR", "CRITICAL", "Traceback"):
                if level in line:
                    self.levels[level] += 1
            if self.UP_MARKER in line:
                self._seen_up += 1
                if self._seen_up >= self.ups:
                    self.up.set()

    def profile_start(self) -> None:
        if not self.bench.options.profile_dir or self.proc is None:
            return
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        out = Path(self.bench.options.profile_dir) / f"{self.bench.store}-runjobs.txt"
        self.profiler = subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(self.proc.pid),
                "--format",
                "raw",
                "--threads",
                "--rate",
                "250",
                "--output",
                str(out),
                "--nonblocking",
                *os.environ.get("ANOLE_BENCH_PYSPY_ARGS", "").split(),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)  # attach

    def profile_stop(self) -> None:
        if self.profiler is None:
            return
        self.profiler.send_signal(signal.SIGINT)
        try:
            self.profiler.wait(20)
        except subprocess.TimeoutExpired:
            self.profiler.kill()
            self.profiler.wait(5)
        self.profiler = None

    def stop(self) -> dict[str, Any]:
        self.profile_stop()
        if self.proc is None:
            return {}
        began = time.perf_counter()
        killed = False
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                killed = True
                self.proc.kill()
                self.proc.wait(10)
        errors = self.levels.get("ERROR", 0) + self.levels.get("Traceback", 0)
        return {
            "returncode": self.proc.returncode,
            "stop_seconds": time.perf_counter() - began,
            "killed": killed,
            "log_errors": errors,
            "log_tail": [line.rstrip() for line in list(self.lines)[-15:]] if errors else [],
        }

    def diagnostics(self, since: float, until: float) -> dict[str, Any]:
        from bench.diag import summarise

        # The worker writes its calls every fraction of a second: wait for a write made
        # after `until`, so the calls of the run's end are in it.
        deadline = time.time() + 5
        while True:
            try:
                written = json.loads(Path(self.diag_path).read_text())
            except (OSError, ValueError) as exc:
                written = {"at": 0.0, "error": repr(exc)}
            if written["at"] > until:
                return summarise(written["events"], since, until)
            if time.time() > deadline:
                return {"error": written.get("error", "no write of the calls after the run")}
            time.sleep(0.05)


class InProcessWorker:
    """The memory store lives in one process: run the workers with `jobs.start()` here."""

    pid = None  # the workers run in the bench process

    def __init__(self, bench: Bench, *, concurrency: int = CONCURRENCY) -> None:
        self.bench = bench
        self.concurrency = concurrency
        self.override: Any = None

    def start(self, deadline: Deadline) -> None:
        from django.conf import settings
        from django.test import override_settings

        self.override = override_settings(ANOLE_JOBS={**settings.ANOLE_JOBS, "RUN": "auto"})
        self.override.enable()  # a fresh memory store, RUN="auto"
        self.bench.jobs.start(queues=[QUEUE], concurrency=self.concurrency)

    def profile_start(self) -> None:
        pass

    def profile_stop(self) -> None:
        pass

    def stop(self) -> dict[str, Any]:
        began = time.perf_counter()
        try:
            self.bench.jobs.stop(drain=True)
        finally:
            if self.override is not None:
                self.override.disable()
        return {"returncode": 0, "stop_seconds": time.perf_counter() - began, "killed": False}

    def diagnostics(self, since: float, until: float) -> dict[str, Any]:
        return {}


Worker = RunjobsWorker | InProcessWorker


def worker_for(bench: Bench, concurrency: int = CONCURRENCY) -> Worker:
    if bench.store == "memory":
        return InProcessWorker(bench, concurrency=concurrency)
    if concurrency != CONCURRENCY:
        return RunjobsWorker(bench, args=("--concurrency", str(concurrency)))
    return RunjobsWorker(bench)
