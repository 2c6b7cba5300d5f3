"""Queue limits hold across real `runjobs` processes, on every durable store.

What ran when is read from the handlers' own records: each handler touches a marker file when
it starts and another when it returns (`tests.sampleapp.e2e_jobs.touch`), and the files'
modification times say when. A handler's recorded span lies inside its job's claimed span
(claimed before it starts, finished after it returns), so recorded spans that never overlap
more than N times mean the claims did not either.
"""

from __future__ import annotations

import bisect
import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.conftest import Backend, Spec

pytestmark = pytest.mark.e2e

PROCESSES = 3


def times(markers: Path, what: str) -> dict[int, float]:
    return {int(p.name.split(".")[0]): p.stat().st_mtime for p in markers.glob(f"*.{what}")}


def most_at_once(started: dict[int, float], finished: dict[int, float]) -> int:
    """The most recorded spans open at one instant (an end before a start at a tie)."""
    events = sorted(
        [(at, 1) for at in started.values()] + [(at, -1) for at in finished.values()],
        key=lambda e: (e[0], e[1]),
    )
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def start_workers(backend: Backend, limits: dict[str, object]) -> None:
    workers = [backend.spawn(CONCURRENCY="4", LIMITS=json.dumps(limits)) for _ in range(PROCESSES)]
    for worker in workers:
        worker.wait_ready()


def test_a_global_concurrency_holds_across_processes(backend: Backend) -> None:
    start_workers(backend, {"global_concurrency": 2})
    count = 9
    (ids,) = backend.enqueue_specs(
        Spec("block", count, args={"seconds": 0.3, "marker": str(backend.markers)})
    )
    backend.wait_markers(count, "finished", timeout=60)
    backend.wait_state(ids, "completed")
    started, finished = times(backend.markers, "started"), times(backend.markers, "finished")
    # Never more than two at once, and the two slots were used (not one at a time).
    assert most_at_once(started, finished) == 2
    ran_by = [
        {i for i in ids if f"e2e-marker {i}.1.started" in worker.output()}
        for worker in backend.workers
    ]
    assert sum(map(len, ran_by)) == count


def test_a_rate_limit_holds_across_processes(backend: Backend) -> None:
    # Eleven windows' worth of jobs: ten seconds of claims at the limit.
    rate, count = 20, 220
    start_workers(backend, {"rate_limit": f"{rate}/s"})
    (ids,) = backend.enqueue_specs(Spec("claim_time", count, args={"marker": str(backend.markers)}))
    backend.wait_markers(count, "claimed", timeout=90)
    backend.wait_state(ids, "completed", timeout=60)
    # Each handler recorded its claim's time, the time the limit counts; in microseconds, so
    # a window's edge is exact.
    recorded = sorted(
        datetime.fromisoformat(p.read_text()) for p in backend.markers.glob("*.claimed")
    )
    assert len(recorded) >= count
    claims = [(at - recorded[0]) // timedelta(microseconds=1) for at in recorded]
    # Every window of one second, wherever it starts (it suffices to start them at a claim),
    # holds at most the rate, exactly: the store counts each claim's window from the claims'
    # own times, whichever process made them. The limit was reached, not claims one at a time.
    busiest = max(
        bisect.bisect_left(claims, first + 1_000_000) - i for i, first in enumerate(claims)
    )
    spans = " ".join(f"{c / 1e6:.4f}" for c in claims)
    assert busiest == rate, spans
    # So the last ten windows' jobs came no sooner than ten seconds after the first claim, and
    # held jobs were claimed soon after each window reopened (the worker sleeps until then):
    # well within the second per window the rule allows, with room for a loaded machine.
    took = claims[-1] / 1e6
    assert 10.0 <= took <= 10.0 + 5.0, spans
