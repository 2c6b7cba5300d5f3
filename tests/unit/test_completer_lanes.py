"""On a store whose queues fail apart (a Redis Cluster), each queue's outcomes are written by a
completer of its own: a write that hangs on one queue (its master failing over) holds up no
other queue's outcome, and the stop still writes what every queue has pending."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from anole_jobs import jobs
from anole_jobs.testing import FakeClock
from anole_jobs.worker.completer import Completer, QueueCompleters
from anole_jobs.worker.outcomes import Attempt, Outcomes, give_back
from anole_jobs.worker.runner import Runtime
from tests.sampleapp.jobs import Work

WAIT = 10.0


@pytest.fixture
def service(settings: Any, recorder: Any) -> Iterator[Any]:
    settings.ANOLE_JOBS = {
        "STORE": "memory",
        "RUN": "manual",
        "CLOCK": FakeClock(),
        "QUEUES": {"default": {}, "mail": {}, "other": {}},
    }
    yield jobs.service
    jobs.reset()


def claimed_attempt(service: Any, queue: str) -> Attempt:
    service.enqueue(Work(), queue=queue)
    now = service.clock()
    (claimed,) = service.store.claim(
        queue, kinds=None, limit=1, now=now, lease_until=now + service.settings.lease, worker="w"
    )
    return Attempt(
        claimed=claimed, outcome="interrupted", finish=give_back(claimed.run, now), seconds=0
    )


def test_a_queue_whose_write_hangs_holds_up_no_other_queues_outcome(service: Any) -> None:
    inner = service.store.inner
    stuck, release = threading.Event(), threading.Event()
    real_finish = inner.finish

    def finish(results: Any) -> Any:
        if any(inner.get(r.run.id).queue == "mail" for r in results):
            stuck.set()
            release.wait(WAIT)  # its master fails over
        return real_finish(results)

    inner.finish = finish
    completer = QueueCompleters(service, Outcomes(service), ["default", "mail"])
    completer.start()
    try:
        mail_settled, default_settled = threading.Event(), threading.Event()
        completer.submit(claimed_attempt(service, "mail"), mail_settled.set)
        assert stuck.wait(WAIT)
        completer.submit(claimed_attempt(service, "default"), default_settled.set)
        assert default_settled.wait(WAIT), "the healthy queue's outcome waited for the stuck one"
        assert not mail_settled.is_set()
        release.set()
        assert mail_settled.wait(WAIT)
    finally:
        release.set()
        assert completer.stop(WAIT)


def test_the_stop_writes_what_every_queue_has_pending(service: Any) -> None:
    completer = QueueCompleters(service, Outcomes(service), ["default", "mail"])
    settled: list[str] = []
    attempts = [claimed_attempt(service, queue) for queue in ("default", "mail", "other")]
    for attempt in attempts:
        completer.submit(attempt, lambda q=attempt.claimed.record.queue: settled.append(q))
    completer.start()
    assert completer.stop(WAIT)
    assert sorted(settled) == ["default", "mail", "other"]
    assert {service.store.get(a.claimed.record.id).state for a in attempts} == {"available"}


def test_the_runtime_writes_apart_only_where_queues_fail_apart(service: Any) -> None:
    assert type(Runtime(service).completer) is Completer
    service.store.queues_fail_apart = True  # as the cluster store says
    completer = Runtime(service).completer
    assert isinstance(completer, QueueCompleters)
    assert sorted(completer.lanes) == ["default", "mail", "other"]


def test_where_queues_fail_apart_a_hanging_limits_look_up_does_not_hold_up_claims(
    service: Any,
) -> None:
    from anole_jobs.clock import monotonic
    from anole_jobs.worker.claims import LOOKUP_WAIT, RuntimeLimitsLookup

    service.store.queues_fail_apart = True
    lookup = RuntimeLimitsLookup(service, every=0.0)
    jobs.set_limits("mail", global_concurrency=1)
    assert lookup.queues() == {"mail"}  # the first look-up: before the first claim
    release = threading.Event()
    inner = service.store.inner
    real = inner.runtime_limits
    inner.runtime_limits = lambda: (release.wait(WAIT), real())[1]  # a master fails over
    try:
        began = monotonic()
        assert lookup.queues() == {"mail"}  # what the last one found
        assert lookup.queues() == {"mail"}  # one look-up in flight at a time
        assert monotonic() - began < 2 * LOOKUP_WAIT + 1.0
    finally:
        release.set()
