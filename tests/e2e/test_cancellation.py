"""Drain and timeout reach every kind of handler, on every store, in a real `runjobs`.

One process per store and case runs one handler per way of waiting at once: `job.sleep`,
`job.check_cancelled()`, a Django query, an `await` (async handler) and no wait at all, plus a
handler that swallows its `Canceled`. Each handler touches ``<id>.1.canceled`` when `Canceled`
reaches it, so the tests see that the handler itself was cancelled, not only the job's state.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ALLOWANCE, WRITE_GRACE, Backend, Spec
from tests.e2e.test_shutdown import given_back, stop_and_time

pytestmark = pytest.mark.e2e

WAITING = ("sleep", "check", "query")  # the sync handlers that reach a wait; "await" is async
DRAIN = 1.0  # the drain test's drain_timeout (the default queue's, from ANOLE_E2E_DRAIN)
BOUND = DRAIN + WRITE_GRACE + ALLOWANCE


def matrix(backend: Backend, sync_kind: str, async_kind: str, **args: object) -> dict[str, int]:
    """Enqueue one handler per way of waiting (+ one that swallows); their ids by name."""
    marker = str(backend.markers)
    names = [*WAITING, "none"]
    specs = [Spec(sync_kind, args={"how": how, "marker": marker, **args}) for how in names]
    specs.append(Spec(async_kind, args={"marker": marker, **args}))
    specs.append(Spec(sync_kind, args={"how": "check", "swallow": True, "marker": marker, **args}))
    ids = backend.enqueue_specs(*specs)
    return dict(zip([*names, "await", "swallow"], (job_ids[0] for job_ids in ids), strict=True))


def canceled(backend: Backend, job_id: int) -> bool:
    return (backend.markers / f"{job_id}.1.canceled").exists()


def test_a_drain_cancels_every_kind_of_wait_and_puts_back_only_what_ignores_it(
    backend: Backend,
) -> None:
    ids = matrix(backend, "wait", "wait_async", seconds=60)
    (finishing,) = backend.enqueue("block", seconds=0.5, marker=str(backend.markers))
    worker = backend.spawn(CONCURRENCY="8", DRAIN=str(DRAIN))
    worker.wait_ready()
    backend.wait_markers(len(ids) + 1)
    took = stop_and_time(worker)
    assert took <= BOUND, f"exited {took:.1f} s after the signal (bound {BOUND} s)"
    records = backend.jobs([*ids.values(), finishing])
    for how in (*WAITING, "await"):
        job_id = ids[how]
        # The handler saw Canceled at its wait, let it go up: interrupted, attempt not counted.
        assert canceled(backend, job_id), f"{how}: the handler never saw Canceled"
        assert given_back(records[job_id]), (how, records[job_id])
    # Never reached a wait: the runtime put it back itself after the grace.
    assert not canceled(backend, ids["none"])
    assert given_back(records[ids["none"]]), records[ids["none"]]
    # Caught Canceled and returned: completed.
    swallowed = records[ids["swallow"]]
    assert canceled(backend, ids["swallow"])
    assert (swallowed["state"], swallowed["attempt"]) == ("completed", 1), swallowed
    # Finished during the drain: keeps its outcome.
    assert (records[finishing]["state"], records[finishing]["attempt"]) == ("completed", 1)
    assert worker.output().count(": interrupted") == 5, worker.output()


def test_a_timeout_cancels_every_kind_of_wait(backend: Backend) -> None:
    ids = matrix(backend, "wait_timeout", "wait_async_timeout", seconds=30)
    # "none" returns after 1.5 s without reaching a wait: nothing could cancel it.
    none_id = ids.pop("none")
    (quick_none,) = backend.enqueue(
        "wait_timeout", how="none", seconds=1.5, marker=str(backend.markers)
    )
    worker = backend.spawn(CONCURRENCY="8")
    worker.wait_ready()
    records = backend.wait_jobs(
        [*ids.values(), quick_none],
        lambda r: r["state"] in ("dead", "completed"),
        "every run to end",
    )
    for how in (*WAITING, "await"):
        record = records[ids[how]]
        assert canceled(backend, ids[how]), f"{how}: the handler never saw Canceled"
        assert record["state"] == "dead", (how, record)  # attempts=1: the timeout was its last
        assert [e["type"] for e in record["errors"]] == ["Timeout"], (how, record)
    assert records[ids["swallow"]]["state"] == "completed"
    assert records[quick_none]["state"] == "completed"
    assert not canceled(backend, quick_none)
    # The 60-s "none" handler still runs; a drain puts it back.
    backend.wait_markers(1, what="started", job_id=none_id)
    stop_and_time(worker)
    assert given_back(backend.jobs([none_id])[none_id])
