"""A debounced burst against real `runjobs` processes, on every durable store: 100 enqueues of
one key over 2 s, each within the debounce wait of the one before, run the job once, with the
last enqueue's arguments."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Backend, Spec

pytestmark = pytest.mark.e2e


def test_a_burst_of_one_hundred_enqueues_runs_once(backend: Backend) -> None:
    worker = backend.spawn(CONCURRENCY="4")
    worker.wait_ready()
    (ids,) = backend.enqueue_specs(
        Spec(
            "debounced",
            100,
            args={"key": "account-9", "marker": str(backend.markers)},
            spread=2.0,
        ),
    )
    assert len(ids) == 100 and len(set(ids)) == 1
    backend.wait_state(ids[:1], "completed", timeout=20)
    finished = list(backend.markers.glob("*.finished"))
    assert [p.name for p in finished] == [f"{ids[0]}.1.finished"]
    assert finished[0].read_text() == "99"
