"""A job that drains give back run after run is counted in its meta (``drain_give_backs``) and
logged at WARNING once, past three in a row; a run that ends by itself resets the count — on
every store, through the executor and the runtime's own give-back, as a drain uses them.

A drain happens only in `runjobs` or `jobs.start()`; here each "deploy" is one claim, one run
cancelled by a drain (or taken over by the runtime, as when a handler reaches no wait) and
the fenced give-back write, so the count is seen crossing processes' worth of give-backs
without starting any (tests/e2e/test_shutdown.py does it with real processes).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from anole_jobs.worker import drained
from anole_jobs.worker.cancel import CancelScope
from anole_jobs.worker.executor import Executor
from anole_jobs.worker.outcomes import Attempt, Outcomes, give_back
from tests.sampleapp.e2e_jobs import Noop

WARNING = "was given back by a drain"


def claim(env) -> Any:
    service = env.jobs.service
    now = env.clock()
    (claimed,) = service.store.claim(
        "default",
        kinds=service.registry.handled_kinds(),
        limit=1,
        now=now,
        lease_until=now + service.settings.lease,
        worker="test",
    )
    return claimed


def drain_by_cancel(env) -> None:
    """One deploy: the handler is cancelled by the drain and lets `Canceled` go up."""
    service = env.jobs.service
    scope = CancelScope(waits=False)
    scope.cancel("drain")
    attempt = Executor(service, manual=True).run(claim(env), scope)
    assert attempt.outcome == "interrupted"
    assert Outcomes(service).write([attempt]) == ["interrupted"]


def drain_by_runtime(env) -> None:
    """One deploy: the handler reached no wait, so the runtime gives the job back itself."""
    service = env.jobs.service
    claimed = claim(env)
    drained.count_give_back(service, claimed)
    attempt = Attempt(
        claimed=claimed,
        outcome="interrupted",
        finish=give_back(claimed.run, env.clock()),
        seconds=0.0,
    )
    assert Outcomes(service).write([attempt]) == ["interrupted"]


def warnings(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if WARNING in r.getMessage()]


@pytest.mark.parametrize("drain", [drain_by_cancel, drain_by_runtime], ids=["cancel", "runtime"])
def test_a_job_given_back_by_drains_is_counted_and_warned_about_once(env, drain, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="anole_jobs.worker")
    env.configure(QUEUES={"default": {"drain_timeout": 7}})
    job_id = env.jobs.enqueue(Noop()).id
    for count in range(1, 6):
        drain(env)
        record = env.jobs.get(job_id)
        # Back and fresh: the attempt not counted, no error; the count in its meta.
        assert (record.state, record.attempt, list(record.errors)) == ("available", 0, [])
        assert record.meta[drained.KEY] == count
        # Three in a row are a deploy or two in the middle of a long job; the fourth warns.
        assert len(warnings(caplog)) == (0 if count <= drained.WARN_AFTER else 1), count
    (warning,) = warnings(caplog)
    assert warning.levelno == logging.WARNING
    text = warning.getMessage()
    assert "e2e.noop" in text and "4 times in a row" in text
    assert "queue default's drain_timeout (7 s)" in text
    assert (warning.kind, warning.queue, warning.job_id) == ("e2e.noop", "default", job_id)


def test_a_run_that_ends_by_itself_resets_the_count(env) -> None:
    job_id = env.jobs.enqueue(Noop()).id
    drain_by_cancel(env)
    drain_by_cancel(env)
    assert env.jobs.get(job_id).meta[drained.KEY] == 2

    assert env.jobs.step().outcomes() == {job_id: "completed"}

    record = env.jobs.get(job_id)
    assert record.state == "completed"
    assert drained.KEY not in record.meta


def test_other_meta_survives_the_count(env) -> None:
    job_id = env.jobs.enqueue(Noop(), meta={"tenant": "acme"}).id
    drain_by_runtime(env)
    assert env.jobs.get(job_id).meta == {"tenant": "acme", drained.KEY: 1}
    env.jobs.step()
    assert env.jobs.get(job_id).meta == {"tenant": "acme"}
