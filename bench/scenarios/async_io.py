"""Async I/O jobs (opt-in: ``--scenarios async_io``): ONE `manage.py runjobs --concurrency
1000` (memory: `jobs.start()` here) works N=10,000 `bench.http` jobs (1,000 with --quick),
each an `async def` handler awaiting one HTTP call to a local server that answers after
50 ms (`bench/slow_http.py`, its own process). The handlers run as tasks on the worker's one
event loop and share its pool of keep-alive connections. Figures: jobs/s from the end of
enqueueing (and from its start), the most threads the worker had during the run, and its
RSS after. Against: the same N calls made by one raw asyncio client in the bench process,
1,000 at a time, no queue (what the server and the loop allow), measured just before.

Peers: on Redis, when ``ANOLE_BENCH_PEERS_PYTHON`` names a Python that has arq installed,
arq works the same N jobs against the same server right after (`bench/peers/arq_async_io.py`:
ONE worker, ``max_jobs`` = 1,000, the same client)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import BENCH_DIR, ROOT, Deadline, process_rss
from bench.context import Bench
from bench.report import Figure, figure

NAME = "async_io"
CONCURRENCY = 1000
DELAY = 0.05  # seconds the server takes for each response


def threads_of(pid: int | None) -> int:
    """Threads of the worker process (memory: this process) now, from /proc."""
    path = Path(f"/proc/{pid or 'self'}/status")
    try:
        for line in path.read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def run(bench: Bench) -> list[Figure]:
    from bench.jobs import HttpCall
    from bench.slow_http import raw_calls

    n = 1_000 if bench.sizes.runtime <= 1_000 else 10_000
    server = subprocess.Popen(
        [sys.executable, str(BENCH_DIR / "slow_http.py"), str(DELAY)],
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line.startswith("listening "):
            raise RuntimeError(f"the slow HTTP server did not start: {line!r}")
        url = f"127.0.0.1:{int(line.split()[1])}"
        base = asyncio.run(raw_calls(url, n, CONCURRENCY))
        bench.wipe()
        with bench.worker(concurrency=CONCURRENCY) as worker:
            deadline = Deadline(max(60.0, n / 50), "async_io throughput")
            threads = threads_of(worker.pid)
            began = time.perf_counter()
            batch = bench.sizes.batch
            for start in range(0, n, batch):
                bench.jobs.enqueue_many([HttpCall(url=url) for _ in range(min(batch, n - start))])
            enqueued = time.perf_counter()
            while True:
                threads = max(threads, threads_of(worker.pid))
                done = bench.completed()
                if done >= n:
                    finished = time.perf_counter()
                    break
                deadline.check(f"({done}/{n} completed)")
                time.sleep(bench.options.poll_interval)
            rss = process_rss(worker.pid) if worker.pid else None
        peer = arq_peer(bench, url, n)
    finally:
        server.kill()
        server.wait(10)
    rate = n / (finished - enqueued)
    e2e = n / (finished - began)
    who = "jobs.start() in-process" if bench.store == "memory" else "1 runjobs"
    against = f"raw asyncio client, {CONCURRENCY} at a time, no queue"
    figures = [
        figure(
            "async_io",
            f"async HTTP jobs (50 ms each), {who}, c={CONCURRENCY} (N={n:,})",
            rate,
            "jobs/s",
            ratio=rate / base,
            against=against,
            note=f"raw client: {base:,.0f} calls/s",
        ),
        figure(
            "async_io_e2e",
            "  N / time from the start of enqueueing",
            e2e,
            "jobs/s",
            ratio=e2e / base,
            against=against,
        ),
        figure("async_io_threads", "  most threads in the worker during the run", threads, ""),
    ]
    if rss:
        figures.append(figure("async_io_rss", "  worker RSS after the run", rss / 2**20, "MiB"))
    if peer:
        figures += [
            figure(
                "async_io_arq",
                f"arq (peer), 1 worker, max_jobs={CONCURRENCY} (N={n:,})",
                peer["jobs_per_second"],
                "jobs/s",
                ratio=rate / peer["jobs_per_second"],
                against="anole ÷ arq",
                note=f"arq: {peer['threads']} thread(s), RSS {peer['rss'] / 2**20:.0f} MiB",
            ),
        ]
    return figures


def arq_peer(bench: Bench, url: str, n: int) -> dict[str, float] | None:
    """arq's run of the same jobs (Redis, with ``ANOLE_BENCH_PEERS_PYTHON`` set), or None."""
    python = os.environ.get("ANOLE_BENCH_PEERS_PYTHON")
    if bench.store != "redis" or not python:
        return None
    from bench.common import REDIS_URL

    done = subprocess.run(
        [python, str(BENCH_DIR / "peers" / "arq_async_io.py"), url, str(n), str(CONCURRENCY)]
        + [REDIS_URL],
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=max(120.0, n / 20),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the arq peer failed:\n{done.stdout}\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
