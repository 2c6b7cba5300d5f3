"""`jobs.step()`'s leadership belongs to the process, not to the thread that stepped: a thread
that called `step()` and ended leaves nothing behind that keeps another thread from leading
(prune, cron and the queued gauge go on), on PostgreSQL no advisory-lock session per thread,
and the leader gauge reads 0 or 1 however many threads stepped."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections

from anole_jobs import events
from tests.sampleapp.jobs import Work

THREADS = 8


def step_in_a_thread(env: Any) -> Any:
    """`jobs.step()` in a thread of its own that then ends; its report."""
    reports: list[Any] = []

    def step() -> None:
        try:
            reports.append(env.jobs.step())
        finally:
            for connection in connections.all(initialized_only=True):
                connection.close()

    thread = threading.Thread(target=step)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    (report,) = reports
    return report


def gauge(env: Any) -> float | None:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("anole_jobs_leader")


def test_a_thread_that_stepped_and_ended_does_not_keep_another_from_leading(env):
    assert step_in_a_thread(env).leader
    # This thread now: it leads, and the leader duties run (prune, the queued gauge).
    done = env.jobs.enqueue(Work())
    assert env.jobs.step().leader  # at once, not once the ended thread's lease lapsed
    assert env.jobs.get(done.id).state == "completed"
    seen: list[Any] = []
    unsubscribe = env.jobs.service.bus.subscribe(seen.append, events.QUEUED_GAUGE)
    try:
        env.clock.advance(timedelta(days=2))  # past the completed job's prune horizon
        report = env.jobs.step()
    finally:
        unsubscribe()
    assert report.leader and report.pruned == 1
    assert env.jobs.get(done.id) is None
    assert seen, "the leader did not report the queued gauge"


def test_threads_of_one_process_share_one_leadership(env):
    reports = [step_in_a_thread(env) for _ in range(THREADS)]
    assert all(report.leader for report in reports)
    assert env.jobs.step().leader


def test_the_leader_gauge_stays_at_most_one_however_many_threads_stepped(env):
    for _ in range(THREADS):
        step_in_a_thread(env)
        assert gauge(env) in (None, 1.0)
    env.jobs.reset()  # the service goes: its leadership resigns
    assert gauge(env) in (None, 0.0)


def test_no_advisory_lock_session_per_thread_on_postgres(env):
    if env.name != "postgres":
        pytest.skip("the advisory-lock session is PostgreSQL's")
    for _ in range(THREADS):
        step_in_a_thread(env)
    with connections["pg"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND query LIKE '%%advisory%%'"
        )
        (sessions,) = cursor.fetchone()
    # One session for the process's leadership, not one per thread that ever stepped.
    assert sessions == 1
