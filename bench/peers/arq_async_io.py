"""arq in the `async_io` scenario: N jobs, each an async function awaiting one HTTP call to
the scenario's slow local server, through the same raw client (`bench/slow_http.py`: a pool
of keep-alive connections on the worker's loop); ONE arq worker, ``max_jobs`` = the
concurrency. Run with the peers' Python (arq is no dependency of the project):

    PEERS_PYTHON bench/peers/arq_async_io.py HOST:PORT N CONCURRENCY REDIS_URL

The jobs are enqueued first (pipelined), then the worker runs in burst mode until the queue is
empty: rate = N ÷ the worker's run. Prints one JSON line: jobs/s, the most threads of the
process during the run, its RSS after. Its queue (a name unique to the run) is deleted after.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for slow_http

from arq import create_pool  # noqa: E402
from arq.connections import RedisSettings  # noqa: E402
from arq.worker import Worker, func  # noqa: E402
from slow_http import pool  # type: ignore[import-not-found]  # noqa: E402


async def http_call(ctx: dict[str, Any], url: str) -> None:
    await pool(url).get()


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def main(url: str, n: int, concurrency: int, redis_url: str) -> dict[str, Any]:
    settings = RedisSettings.from_dsn(redis_url)
    queue = f"arq:anole-bench:{os.getpid()}"
    redis = await create_pool(settings, default_queue_name=queue)
    try:
        began = time.perf_counter()
        for start in range(0, n, 1000):
            await asyncio.gather(
                *(redis.enqueue_job("http_call", url) for _ in range(min(1000, n - start)))
            )
        enqueued = time.perf_counter()
        worker = Worker(
            functions=[func(http_call, name="http_call")],
            redis_pool=redis,
            queue_name=queue,
            max_jobs=concurrency,
            burst=True,
            poll_delay=0.01,
            handle_signals=False,
            keep_result=0,
            log_results=False,
        )
        threads = threading.active_count()
        run = asyncio.ensure_future(worker.async_run())
        while not run.done():
            threads = max(threads, threading.active_count())
            await asyncio.sleep(0.05)
        await run
        finished = time.perf_counter()
        done = worker.jobs_complete
        await worker.close()
    finally:
        await redis.delete(queue)
        await redis.aclose()
    return {
        "jobs_per_second": n / (finished - enqueued),
        "e2e_per_second": n / (finished - began),
        "completed": done,
        "threads": threads,
        "rss": rss(),
    }


if __name__ == "__main__":
    url, n, concurrency, redis_url = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    print(json.dumps(asyncio.run(main(url, n, concurrency, redis_url))))
