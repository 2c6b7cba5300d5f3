"""What the leader's hourly statistics cost each store: `roll_up_stats` and `prune_stats`
against a read of the same minutes, in one process (docs/performance.md).

    .venv/bin/python bench/rollup_cost.py [--store memory,sqlite,postgres,redis] [--rounds 3]
                                          [--queues 20]

Each round fills the next hour with one completed run per queue and minute (`--queues` × 60
minute rows), then times, one after another:

- ``read``: `stats()` of that hour at minute resolution, what a dashboard's chart of the last
  hour reads (the baseline);
- ``roll``: the leader's call just after the hour ended, which rolls it (and sums the hour
  rolled before it again, as every call does);
- ``idle``: the same call a minute later, with no new hour ended: what the leader pays on every
  other minute of the hour;
- ``prune``: `prune_stats` dropping the minutes of the hour before (its rows are rolled).

It prints the median milliseconds of each over the rounds and each one's ratio to ``read``.
PostgreSQL needs a server at 127.0.0.1:5432 (user postgres), Redis one at 127.0.0.1:6379 (its
keys under a prefix of this run, deleted after).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Importing counts_cost configures Django (its settings, databases and setup) for this script.
counts_cost = importlib.import_module("bench.counts_cost")
flow_cost = importlib.import_module("bench.flow_cost")


from anole_jobs.stores.base import Finish  # noqa: E402
from bench.common import scratch_postgres  # noqa: E402

#: The start of the first hour filled (counts_cost's fixed time, at a whole hour).
T0 = counts_cost.NOW.replace(minute=0, second=0, microsecond=0)
KEEP = timedelta(days=30)
STEPS = ("read", "roll", "idle", "prune")


def fill_hour(store: Any, start: Any, queues: list[str]) -> None:
    """One run per queue in each minute of the hour from `start`, completed 5 ms after its
    claim (so each minute row counts a start, a completion and a run time)."""
    for minute in range(60):
        at = start + timedelta(minutes=minute, seconds=1)
        store.insert(
            [replace(counts_cost.new_job(minute), queue=q, scheduled_at=at) for q in queues]
        )
        claimed = []
        for q in queues:
            claimed += store.claim(
                q, kinds=None, limit=1, now=at, lease_until=at + timedelta(minutes=5), worker="r"
            )
        ended = at + timedelta(milliseconds=5)
        store.finish([Finish(run=c.run, state="completed", at=ended) for c in claimed])


def timed(call: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    returned = call()
    return (time.perf_counter() - began) * 1000, returned


def measure(name: str, rounds: int, queues: int) -> None:
    env = flow_cost.open_env(name)
    store = env.store
    names = [f"q{i}" for i in range(queues)]
    found: dict[str, list[float]] = {step: [] for step in STEPS}
    try:
        for index in range(rounds + 1):  # the first round warms every statement up
            start = T0 + timedelta(hours=index)
            end = start + timedelta(hours=1)
            fill_hour(store, start, names)
            times = {
                "read": timed(
                    lambda s=start, e=end: store.stats(None, since=s, until=e, resolution="minute")
                ),
                "roll": timed(
                    lambda e=end: store.roll_up_stats(now=e + timedelta(seconds=5), keep=KEEP)
                ),
                "idle": timed(
                    lambda e=end: store.roll_up_stats(now=e + timedelta(minutes=1), keep=KEEP)
                ),
                "prune": timed(
                    lambda s=start, e=end: store.prune_stats(
                        minutes_before=s, hours_before=e - KEEP
                    )
                ),
            }
            rolled = times["roll"][1]
            if rolled != queues:  # the hour just ended, one row per queue
                raise SystemExit(f"{name}: the roll-up wrote {rolled} rows, not {queues}")
            if times["idle"][1]:  # nothing new: the hour rolled before is unchanged
                raise SystemExit(f"{name}: a roll-up with no new hour wrote {times['idle'][1]}")
            if index:
                for step, (ms, _) in times.items():
                    found[step].append(ms)
    finally:
        env.close()  # Redis: its keys; the databases are this run's own (dropped after)
    read = statistics.median(found["read"])
    print(f"{name}: {queues} queues x 60 minutes, {rounds} rounds (median ms, ratio to read)")
    for step in STEPS:
        ms = statistics.median(found[step])
        print(
            f"  {step:6s} {ms:8.2f} ms  ({min(found[step]):.2f}-{max(found[step]):.2f})"
            f"  {ms / read:5.2f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", default="memory,sqlite,postgres,redis")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queues", type=int, default=20)
    options = parser.parse_args()
    stores = [s.strip() for s in options.store.split(",") if s.strip()]
    with scratch_postgres("postgres" in stores, counts_cost.PG_DATABASE):
        for name in stores:
            measure(name, options.rounds, options.queues)
    return 0


if __name__ == "__main__":
    sys.exit(main())
