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
        # Three slots busy. A pool claims only its free slots until it has measured its pace
        # (these jobs have not finished yet), so it holds exactly the three that run.
        assert cond.wait_for(lambda: seen and seen[-1].busy == 3 and seen[-1].held == 3, WAIT)
        record = seen[-1]
    (listed,) = jobs.workers()
    assert listed.id == record.id and listed.pid == record.pid
    assert [(q.name, q.busy, q.total) for q in record.queues] == [("default", 3, 3)]
    assert [job.running for job in record.jobs] == [True] * 3
    assert {job.id for job in record.jobs} <= set(ids)
    # The record counts for three heartbeats (one lease) after it was written.
    assert (record.expires_at - record.last_seen).total_seconds() == 1.0
    release.set()
    rt.log.wait_finished(9)
    jobs.stop()
    assert jobs.workers() == []


def test_a_presence_failure_never_fails_the_heartbeat_round(settings, caplog):
    from anole_jobs.conf import QueueConfig
    from anole_jobs.errors import StoreUnavailable
    from anole_jobs.testing import FakeClock
    from anole_jobs.worker.heartbeat import Heartbeat
    from anole_jobs.worker.presence import Presence
    from anole_jobs.worker.runs import RunRegistry

    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "CLOCK": FakeClock()}
    service = jobs.service
    runs = RunRegistry()
    presence = Presence(
        service,
        worker_id="w:1:x",
        queues=[QueueConfig(name="default", concurrency=2, drain_timeout=1)],
        runs=runs,
        interval=10.0,
    )
    heartbeat = Heartbeat(service, runs, presence)
    store = service.store

    def down(worker: WorkerRecord) -> None:
        raise StoreUnavailable("the store is down for this test")

    store.record_worker = down
    with caplog.at_level("WARNING", logger="anole_jobs.worker"):
        assert heartbeat.round() == heartbeat.interval
        assert heartbeat.round() == heartbeat.interval
    assert heartbeat.failures == 0  # no back-off: the leases' heartbeat keeps its pace
    warnings = [r.getMessage() for r in caplog.records if "could not record" in r.getMessage()]
    assert len(warnings) == 1 and "the store is down for this test" in warnings[0]
    del store.record_worker
    assert heartbeat.round() == heartbeat.interval
    assert [w.id for w in jobs.workers()] == ["w:1:x"]
    jobs.reset()
