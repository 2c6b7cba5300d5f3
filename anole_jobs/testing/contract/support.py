"""Small helpers the conformance suite is written with, and that a store's own tests may use:
a `NewJob` builder, a direct claim, a thread race and a recount. No pytest here."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections

from anole_jobs.stores.base import ClaimedJob, NewJob, Store

#: The suite's fixed start time: a fake clock starts here.
T0 = datetime(2030, 1, 1, tzinfo=UTC)
#: The lease a direct claim takes.
LEASE = timedelta(seconds=30)
#: How long a raced thread may take before the race fails (seconds).
RACE_TIMEOUT = 120.0

_TEMPLATE = NewJob(
    kind="contract.job",
    queue="default",
    args={},
    meta={},
    priority=0,
    max_attempts=3,
    state="available",
    scheduled_at=T0,
    created_at=T0,
)


def new_job(*, at: datetime | None = None, **fields: Any) -> NewJob:
    """A `NewJob` to insert: kind ``contract.job`` in queue ``default``, three attempts,
    ``available``, created and due at `at` (T0 by default), with `fields` in place of the
    defaults (a job due later takes ``state="scheduled"`` with its ``scheduled_at``)."""
    now = T0 if at is None else at
    return replace(_TEMPLATE, **{"created_at": now, "scheduled_at": now, **fields})


def claim(
    store: Store,
    now: datetime,
    *,
    limit: int = 10,
    queue: str = "default",
    kinds: Collection[str] | None = None,
    worker: str = "w",
    lease: timedelta = LEASE,
) -> list[ClaimedJob]:
    """`store.claim` as a worker makes it, with a lease of `lease` from `now`."""
    return store.claim(
        queue, kinds=kinds, limit=limit, now=now, lease_until=now + lease, worker=worker
    )


def race(threads: int, action: Callable[[int], Any]) -> list[Any]:
    """Run ``action(i)`` in `threads` real threads released together by a barrier; return
    their results in order. Fails when one raised or did not finish in `RACE_TIMEOUT` s.
    Each thread closes its own Django database connections when done."""
    barrier = threading.Barrier(threads)
    results: list[Any] = [None] * threads
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(RACE_TIMEOUT)
            results[index] = action(index)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            for connection in connections.all(initialized_only=True):
                connection.close()

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(RACE_TIMEOUT)
    assert not any(worker.is_alive() for worker in workers), "a raced thread did not finish"
    assert errors == [], errors
    return results
