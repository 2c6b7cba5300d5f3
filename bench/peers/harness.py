"""The measurement every system in `python -m bench.compare` goes through, so each figure of
the comparison is taken the same way:

- enqueue one: `enqueue_one(i)` N times, each its own write;
- enqueue many: the library's bulk API (`enqueue_many(n)`) when it has one, else the same
  loop as "one" (the row says which);
- work: N no-op jobs are enqueued with the worker stopped; then ONE worker process starts with
  concurrency 10 (or what the library offers; the row says) and the harness polls the
  library's own count of unfinished jobs every 10 ms. Work rate = jobs finished ÷ (first poll
  that saw fewer than N unfinished − first poll that saw none), so neither the worker's
  start-up nor the enqueueing counts. Peers slower than the time cap are measured on the jobs
  they finished within it.

Runs in the peers' virtualenv as well as the project's: only the standard library here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
PG_DSN = "host=127.0.0.1 port=5432 user=postgres"
REDIS_URL = "redis://127.0.0.1:6379/0"


@dataclass
class Peer:
    """What a system offers the harness; every callable is synchronous."""

    name: str
    store: str
    version: str
    enqueue_one: Callable[[int], Any]
    enqueue_many: Callable[[int], Any]
    bulk_api: str  # the bulk API used, or "" when enqueue many is a loop of enqueue_one
    unfinished: Callable[[], int]
    clear: Callable[[], None]
    worker_argv: list[str]
    worker_env: dict[str, str] = field(default_factory=dict)
    concurrency: str = "10 threads"
    teardown: Callable[[], None] = lambda: None


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tag", default=str(os.getpid()))
    parser.add_argument("--store", default="")
    parser.add_argument("--single", type=int, default=1_000)
    parser.add_argument("--many", type=int, default=10_000)
    parser.add_argument("--work", type=int, default=10_000)
    parser.add_argument("--work-seconds", type=float, default=60.0)
    parser.add_argument("--repeat", type=int, default=2)
    return parser.parse_args(argv)


def measure(peer: Peer, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": peer.name,
        "store": peer.store,
        "version": peer.version,
        "bulk_api": peer.bulk_api,
        "concurrency": peer.concurrency,
        "enqueue_one": [],
        "enqueue_many": [],
        "work": [],
        "work_jobs": [],
    }
    try:
        for _ in range(args.repeat):
            peer.clear()
            peer.enqueue_one(-1)  # connect: not part of the figure
            peer.clear()
            began = time.perf_counter()
            for i in range(args.single):
                peer.enqueue_one(i)
            out["enqueue_one"].append(args.single / (time.perf_counter() - began))

            peer.clear()
            began = time.perf_counter()
            peer.enqueue_many(args.many)
            out["enqueue_many"].append(args.many / (time.perf_counter() - began))

            peer.clear()
            peer.enqueue_many(args.work)
            done, seconds = work(peer, args.work, args.work_seconds)
            out["work"].append(done / seconds if seconds else None)
            out["work_jobs"].append(done)
    finally:
        try:
            peer.clear()
        finally:
            peer.teardown()
    return out


def work(peer: Peer, n: int, cap: float) -> tuple[int, float]:
    """Start the worker on `n` waiting jobs; (jobs finished, seconds from first to last)."""
    # The worker's log goes to a file, not a pipe: nobody reads a pipe while the worker runs,
    # and a worker that logs a line per job (runjobs at INFO) blocks once its 64 KiB fill up.
    with tempfile.TemporaryFile() as log:
        return _work(peer, n, cap, log)


def _work(peer: Peer, n: int, cap: float, log: IO[bytes]) -> tuple[int, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **peer.worker_env}
    proc = subprocess.Popen(
        peer.worker_argv,
        env=env,
        cwd=str(ROOT),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        start_new_session=True,
    )
    try:
        deadline = time.perf_counter() + 120
        while (left := peer.unfinished()) >= n:
            if proc.poll() is not None:
                raise RuntimeError(f"{peer.name} worker exited: {_tail(log)}")
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{peer.name}: the worker started no job in 120 s")
            time.sleep(0.01)
        first, first_left = time.perf_counter(), left
        while left > 0 and time.perf_counter() - first < cap:
            if proc.poll() is not None:
                raise RuntimeError(f"{peer.name} worker exited: {_tail(log)}")
            time.sleep(0.01)
            left = peer.unfinished()
        return first_left - left, time.perf_counter() - first
    finally:
        _stop(proc)


def _tail(log: IO[bytes]) -> str:
    log.flush()
    log.seek(0, os.SEEK_END)
    log.seek(max(0, log.tell() - 1500))
    return log.read().decode(errors="replace") or "(no output)"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever it forked


def main(build: Callable[[argparse.Namespace], Peer]) -> None:
    args = arguments()
    result: dict[str, Any]
    try:
        result = measure(build(args), args)
    except Exception as exc:  # noqa: BLE001 - the parent reports it
        import traceback

        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}"[-1500:]}
    Path(args.out).write_text(json.dumps(result))
    sys.exit(0)
