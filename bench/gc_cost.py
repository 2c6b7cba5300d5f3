"""What Python's garbage collector costs a worker per job, in one process on the memory store:
the same no-op jobs run by `jobs.start()` (one slot) with the collector as Python sets it,
with the start-up's objects frozen, as `runjobs` tunes it, and turned off (docs/performance.md).

    .venv/bin/python bench/gc_cost.py [--jobs 20000] [--rounds 2]

Each configuration runs in a fresh child process, in turn, `--rounds` times; it prints the
worker's CPU µs per job of each (median, min-max). The script uses the public API only, so a copy of
it measures another tree's code the same way (an A/B: run each tree's copy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGURATIONS = ("python", "frozen", "tuned", "off")


def child(jobs: int, configuration: str) -> None:
    """Enqueue `jobs` no-op jobs, set the collector up, run them with one slot; print the CPU
    seconds per job that this process spent."""
    import gc

    os.environ.update(
        DJANGO_SETTINGS_MODULE="bench.settings", ANOLE_BENCH_STORE="memory", ANOLE_BENCH_RUN="auto"
    )
    import django

    django.setup()
    from anole_jobs import jobs as facade
    from bench.jobs import Noop

    for start in range(0, jobs, 1000):
        facade.enqueue_many([Noop(n=i) for i in range(start, min(jobs, start + 1000))])
    gc.collect()
    if configuration in ("frozen", "tuned"):
        gc.freeze()
    if configuration == "tuned":
        gc.set_threshold(20_000, *gc.get_threshold()[1:])
    if configuration == "off":
        gc.disable()
    began = time.process_time()
    facade.start(queues=["default"], concurrency=1)
    while facade.counts().get("default", {}).get("completed", 0) < jobs:
        time.sleep(0.005)  # the bench polls the count, as bench/context.py does
    print((time.process_time() - began) / jobs * 1e6, flush=True)
    os._exit(0)  # the runtime's threads need no drain here


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", choices=CONFIGURATIONS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        sys.path.insert(0, str(ROOT))
        child(options.jobs, options.child)
        return 0
    found: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
    for _ in range(options.rounds):
        for name in CONFIGURATIONS:
            out = subprocess.run(
                [sys.executable, __file__, "--jobs", str(options.jobs), "--child", name],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            found[name].append(float(out.split()[-1]))
    print(f"worker CPU per job, memory store, one slot, {options.jobs:,} no-op jobs")
    for name, values in found.items():
        print(
            f"  {name:7s} median {statistics.median(values):6.1f} µs"
            f" ({min(values):.1f}-{max(values):.1f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
