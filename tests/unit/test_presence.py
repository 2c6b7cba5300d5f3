"""Worker presence from a runtime in this process (memory store, RUN="auto"): the heartbeat
records the worker with its busy slots and the jobs it holds (running and claimed ahead), and
a clean stop removes the record. Waits are condition waits on the records the store is
given, never sleeps."""

from __future__ import annotations

import threading
from typing import Any

from anole_jobs import jobs
from anole_jobs.stores.workers import WorkerRecord
from tests.sampleapp.jobs import Work
from tests.unit.test_runtime import WAIT, Runtime, rt  # noqa: F401 - the fixture


def spy_records(runtime: Runtime) -> tuple[threading.Condition, list[WorkerRecord]]:
    """Every record the store is given, and a condition notified with each."""
    cond = threading.Condition()
    seen: list[WorkerRecord] = []
    store = runtime.store
    record_worker = store.record_worker

    def spy(worker: WorkerRecord) -> Any:
        record_worker(worker)
        with cond:
            seen.append(worker)
            cond.notify_all()

    store.record_worker = spy
    return cond, seen


def test_the_heartbeat_records_busy_slots_and_held_jobs_and_stop_removes_them(rt: Runtime):  # noqa: F811
    rt.configure(LEASE=1)  # a heartbeat every third of a second
    cond, seen = spy_records(rt)
    release = rt.gate()
    action = rt.hook(lambda job, args: release.wait(WAIT))
    ids = [e.id for e in jobs.enqueue_many([Work(action=action) for _ in range(9)])]
    jobs.start()
    with cond:
        # Three slots busy, three more jobs claimed ahead and waiting for a slot.
        assert cond.wait_for(lambda: seen and seen[-1].busy == 3 and seen[-1].held == 6, WAIT)
        record = seen[-1]
    (listed,) = jobs.workers()
    assert listed.id == record.id and listed.pid == record.pid
    assert [(q.name, q.busy, q.total) for q in record.queues] == [("default", 3, 3)]
    assert [job.running for job in record.jobs] == [True] * 3 + [False] * 3
    assert {job.id for job in record.jobs} <= set(ids)
    # The record counts for three heartbeats (one lease) after it was written.
    assert (record.expires_at - record.last_seen).total_seconds() == 1.0
    release.set()
    rt.log.wait_finished(9)
    jobs.stop()
    assert jobs.workers() == []
