"""One module per scenario; each has `NAME` and `run(bench) -> list[Figure]`.

`SCENARIOS` is the order `python -m bench` runs them in: cheap, store-only figures first, then
the ones that start a worker, then the table-growth one (the largest tables last).
"""

from __future__ import annotations

from bench.scenarios import (
    async_io,
    enqueue_many,
    enqueue_one,
    growth,
    latency,
    processes,
    runtime,
    scaleout,
    search,
    soak,
    stats,
    step,
    workflows,
)

SCENARIOS = {
    module.NAME: module
    for module in (
        enqueue_one,
        enqueue_many,
        step,
        runtime,
        latency,
        growth,
        scaleout,
        soak,
        processes,
        stats,
        search,
        workflows,
        async_io,
    )
}
