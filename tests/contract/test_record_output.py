"""`job.record_output(value)` and the store's fenced `update_meta`, on every store: a
run keeps a JSON output in ``meta["output"]`` (the django.tasks backend keeps return values
this way); a stale run cannot write it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from anole_jobs import InvalidJob
from tests.sampleapp.jobs import HOOKS, Work


def test_a_run_records_its_output_beside_the_meta(env):
    HOOKS["output"] = lambda job, args: job.record_output({"rows": [1, 2], "ok": True})
    job = env.jobs.enqueue(Work(action="output"), meta={"origin": "test"})
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    assert env.jobs.get(job.id).meta == {"origin": "test", "output": {"rows": [1, 2], "ok": True}}


def test_a_later_output_replaces_the_earlier_one(env):
    def twice(job, args):
        job.record_output(1)
        job.record_output("two")
        assert job.meta["output"] == "two"

    HOOKS["twice"] = twice
    job = env.jobs.enqueue(Work(action="twice"))
    env.jobs.step()
    assert env.jobs.get(job.id).meta == {"output": "two"}


def test_an_output_that_is_not_json_fails_the_attempt(env):
    def bad(job, args):
        with pytest.raises(InvalidJob, match="output"):
            job.record_output({1, 2})
        raise ValueError("checked")

    HOOKS["bad"] = bad
    job = env.jobs.enqueue(Work(action="bad"))
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    assert "output" not in env.jobs.get(job.id).meta


def test_update_meta_is_fenced(env):
    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = env.store.claim(
        "default", kinds=None, limit=1, now=now, lease_until=now + timedelta(seconds=30), worker="w"
    )
    assert env.store.update_meta(claimed.run, {"output": 1}) is True
    env.jobs.retry(job.id)  # an admin retry: the claim above is stale now
    assert env.store.update_meta(claimed.run, {"output": 2}) is False
    assert env.jobs.get(job.id).meta == {"output": 1}
