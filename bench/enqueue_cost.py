"""What one `jobs.enqueue` costs on Redis, against Huey's enqueue (a pickle and one `LPUSH`)
and the raw HSET+ZADD in MULTI, all in this process, interleaved round by round:

    .venv/bin/python bench/enqueue_cost.py [--jobs 2000] [--rounds 5]

Prints, per figure, the median over the rounds (after one warm-up round) of the wall µs per
enqueue and of this process's CPU µs per enqueue (the client's share: Python, redis-py, the
socket calls), then our figures as ratios of the baselines. The server's share is the wall
time less the client's CPU (the round trip and the script), which is what a loaded machine
moves most.

CPU time still moves with what the other core does; instruction counts do not: count one
measured round of `jobs.enqueue` under callgrind,

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.out \
        .venv/bin/python bench/enqueue_cost.py --rounds 1 --jobs 2000 --callgrind
    grep ^totals: /tmp/cg.out          # instructions of the client for the 2,000 enqueues

and the server's share, on a `redis-server` of your own run under callgrind (every command
of that server in the measured round is counted, so nothing else may use it):

    valgrind --tool=callgrind --callgrind-out-file=/tmp/rs.out redis-server --port 6392 \
        --save '' --appendonly no &
    .venv/bin/python bench/enqueue_cost.py --redis redis://127.0.0.1:6392/0 --jobs 500 \
        --server-callgrind PID --server-out /tmp/rs.out   # PID: the redis-server's

which prints the server's instructions per `jobs.enqueue` and per Huey-like `LPUSH`.

Keys live under ``anole_enqueue_cost_<pid>:`` and are deleted at the end.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import context  # noqa: E402
from bench.common import QUICK, REDIS_URL, Options  # noqa: E402
from bench.context import Bench  # noqa: E402


def callgrind(command: str) -> None:
    """Under `valgrind --tool=callgrind`: instrumentation on or off (`--instr=on|off`)."""
    subprocess.run(
        ["callgrind_control", command, str(os.getpid())], check=True, capture_output=True
    )


def server_instructions(options: argparse.Namespace, measured: Callable[[], Any]) -> int:
    """The instructions the callgrind'ed server (`--server-callgrind`) ran for `measured()`."""
    pid, out = str(options.server_callgrind), Path(options.server_out)
    subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
    measured()
    before = set(out.parent.glob(out.name + "*"))
    subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
    dumps = sorted(set(out.parent.glob(out.name + "*")) - before, key=lambda f: f.stat().st_mtime)
    text = dumps[-1].read_text()
    for dump in dumps:
        dump.unlink()
    found = re.search(r"^(?:totals|summary): (\d+)", text, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no totals in {dumps[-1]}")
    return int(found[1])


def timed(n: int, one: Callable[[int], Any]) -> tuple[float, float]:
    """(wall µs, CPU µs) per call of `one(i)` for i in range(n)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        one(i)
    return (
        (time.perf_counter() - wall) * 1e6 / n,
        (time.process_time() - cpu) * 1e6 / n,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--redis", default=REDIS_URL, help=f"the server (default {REDIS_URL})")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="under valgrind --tool=callgrind --instr-atstart=no: count only one round of "
        "jobs.enqueue after a warm-up round (no baselines)",
    )
    parser.add_argument(
        "--server-callgrind",
        type=int,
        help="the PID of a redis-server that "
        "runs under callgrind: count its instructions per enqueue",
    )
    parser.add_argument("--server-out", help="that server's --callgrind-out-file")
    options = parser.parse_args()
    os.environ["ANOLE_BENCH_REDIS"] = options.redis  # bench/settings.py
    context.REDIS_URL = options.redis  # Bench.wipe
    bench = Bench("redis", QUICK, f"enqueue_cost_{os.getpid()}", Options())
    bench.setup()
    try:
        run(bench, options)
    finally:
        bench.close()


def run(bench: Bench, options: argparse.Namespace) -> None:
    import redis

    from bench.jobs import Noop

    jobs, n = bench.jobs, options.jobs
    client = redis.Redis.from_url(options.redis)
    prefix = bench.prefix + "raw:"

    def ours(i: int) -> Any:
        return jobs.enqueue(Noop(n=i))

    # Huey's enqueue: a task message pickled, one LPUSH onto the queue's list.
    def huey_like(i: int) -> Any:
        message = ("bench.noop", str(i), None, None, 0, None, None, ((i,), {}), None)
        return client.lpush(prefix + "huey", pickle.dumps(message, pickle.HIGHEST_PROTOCOL))

    def hset_zadd(i: int) -> Any:
        pipe = client.pipeline(transaction=True)
        pipe.hset(f"{prefix}job:{i}", mapping={"kind": "bench.noop", "args": f'{{"n":{i}}}'})
        pipe.zadd(prefix + "queue", {str(i): 0})
        return pipe.execute()

    def wipe() -> None:
        bench.wipe()

    ours(-1)  # connect, load the script
    if options.server_callgrind:
        for name, one in (("jobs.enqueue", ours), ("Huey-like LPUSH", huey_like)):
            timed(n, one)  # warm-up
            wipe()
            count = server_instructions(options, lambda one=one: timed(n, one))  # type: ignore[misc]
            wipe()
            print(f"server: {count / n / 1000:.1f}k instructions per {name} (N={n})")
        return
    if options.callgrind:
        timed(n, ours)
        wipe()
        callgrind("--instr=on")
        timed(n, ours)
        callgrind("--instr=off")
        print(f"counted {n} enqueues")
        return
    figures: dict[str, list[tuple[float, float]]] = {"ours": [], "huey": [], "multi": []}
    for index in range(options.rounds + 1):
        for name, one in (("ours", ours), ("huey", huey_like), ("multi", hset_zadd)):
            wipe()
            figure = timed(n, one)
            if index:  # the first round warms up
                figures[name].append(figure)
    wipe()
    medians = {
        name: (statistics.median(w for w, _ in found), statistics.median(c for _, c in found))
        for name, found in figures.items()
    }
    for name, (wall, cpu) in medians.items():
        print(
            f"{name:6} wall {wall:6.1f} µs/enqueue  CPU {cpu:6.1f} µs  "
            + "rounds: "
            + ", ".join(f"{w:.0f}/{c:.0f}" for w, c in figures[name])
        )
    wall, cpu = medians["ours"]
    print(
        f"ours ÷ huey-like: rate {medians['huey'][0] / wall:.2f}×, "
        f"ours ÷ HSET+ZADD MULTI: rate {medians['multi'][0] / wall:.2f}× "
        f"(jobs={n}, rounds={options.rounds})"
    )


if __name__ == "__main__":
    main()
