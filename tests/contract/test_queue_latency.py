"""Queue latency on every store: `oldest_available` on `jobs.queues()` (when a queue's oldest
available job became available) and the ``anole_jobs_queue_latency_seconds`` gauge the leader
reports beside the queued one, `jobs.step()` included.

Time moves only with the fake clock; the metrics are read from the registry they live in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from anole_jobs import Job, jobs, kind, metrics


@kind("test.latency.job")
@dataclass
class LJob:
    n: int = 0


@jobs.handler(LJob)
def run_ljob(job: Job, args: LJob) -> None:
    return None


def latency(queue: str) -> float | None:
    from prometheus_client import REGISTRY

    registry = metrics.current_registry() or REGISTRY
    return registry.get_sample_value("anole_jobs_queue_latency_seconds", {"queue": queue})


def test_oldest_available_is_the_lowest_scheduled_at_of_available_jobs(env):
    start = env.clock()
    assert {q.name: q.oldest_available for q in env.jobs.queues()} == {
        "default": None,
        "mail": None,
    }
    env.jobs.enqueue(LJob(1), priority=5)
    env.clock.advance(10)
    env.jobs.enqueue(LJob(2), priority=-5)
    env.jobs.enqueue(LJob(3), delay=60)  # scheduled: not available
    env.jobs.enqueue(LJob(4), queue="mail")
    assert env.store.oldest_available(["default", "mail", "nothing"]) == {
        "default": start,
        "mail": env.clock(),
    }
    by_name = {q.name: q for q in env.jobs.queues()}
    assert by_name["default"].oldest_available == start
    # A staged job became available at its scheduled time.
    env.clock.advance(60)
    env.jobs.pause("default")
    env.jobs.pause("mail")
    env.jobs.step()
    assert env.jobs.queues()[0].oldest_available == start
    env.jobs.resume("default")
    env.jobs.step()
    assert env.store.oldest_available(["default"]) == {}


def test_step_reports_the_latency_gauge_in_its_leader_phase(env):
    env.jobs.pause("default")
    env.jobs.enqueue(LJob(1))
    env.clock.advance(42)
    env.jobs.step()
    assert latency("default") == 42
    assert latency("mail") == 0
    env.clock.advance(timedelta(seconds=10))
    env.jobs.step()
    assert latency("default") == 42  # not yet 15 s since the last report
    env.clock.advance(timedelta(seconds=5))
    env.jobs.step()
    assert latency("default") == 57
    env.jobs.resume("default")
    env.jobs.step()  # runs it
    env.clock.advance(15)
    env.jobs.step()
    assert latency("default") == 0
