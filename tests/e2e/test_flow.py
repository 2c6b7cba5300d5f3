"""Fair flow and sequences hold across real `runjobs` processes, on every durable store.

Two workers of four slots each. What ran when is read from the handlers' own records (marker
files touched when a handler starts and when it returns, as in test_limits.py): the order of
the starts shows the turns, and the spans of one sequence's jobs never overlap.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import Backend, Spec

pytestmark = pytest.mark.e2e


def times(markers: Path, what: str) -> dict[int, int]:
    return {int(p.name.split(".")[0]): p.stat().st_mtime_ns for p in markers.glob(f"*.{what}")}


def start_workers(backend: Backend) -> None:
    workers = [backend.spawn(CONCURRENCY="4") for _ in range(2)]
    for worker in workers:
        worker.wait_ready()


def test_a_late_customer_gets_turns_and_sequences_never_overlap(backend: Backend) -> None:
    marker = str(backend.markers)
    # The default queue takes turns by customer, for the enqueuer (which gives the turns) and
    # the workers alike.
    backend.env["ANOLE_E2E_LIMITS"] = json.dumps({"fairness": "customer"})
    backend.env["ANOLE_E2E_FLOW"] = "1"  # the kinds of this test (tests.sampleapp.e2e_flow_jobs)
    a, b, *accounts = backend.enqueue_specs(
        Spec("e2e.fair", 300, args={"customer": "A", "marker": marker}),
        Spec("e2e.fair", 10, args={"customer": "B", "marker": marker}),
        *(Spec("e2e.sequence", 6, args={"account": n, "marker": marker}) for n in range(3)),
    )
    start_workers(backend)
    backend.wait_state(b, "completed", timeout=30)
    backend.wait_state([i for ids in accounts for i in ids], "completed", timeout=30)
    started = times(backend.markers, "started")
    finished = times(backend.markers, "finished")
    # B's ten started among the first 25 fair jobs to start, though 300 of A came first.
    fair_order = sorted((at, i) for i, at in started.items() if i in set(a) | set(b))
    first = [i for _, i in fair_order[:25]]
    assert set(b) <= set(first), [("B" if i in b else "A") for i in first]
    # Each sequence ran one at a time, in enqueue order.
    for ids in accounts:
        spans = [(started[i], finished[i]) for i in ids]
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end <= start
