"""Which queue a job may go to, on every store: a queue the code declares (in ``QUEUES``, on a
kind, on a ``CRON`` entry) or one named on purpose with `NewQueue`. A typo (``queue="mial"``)
is refused with "did you mean" and stores nothing, where it used to store jobs no worker ever
ran; ``set_limits("snyc")`` no longer creates a queue. And a ``partition`` that names a field
no kind of its queue has is a system-check error (``anole_jobs.E018``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from anole_jobs import InvalidJob, NewQueue, Workflow, kind
from anole_jobs.checks import check_settings
from tests.sampleapp.jobs import Work


@kind("test.queue_names.report", queue="declared-by-a-kind")
@dataclass
class Report:
    account: int


def queue_names(env) -> list[str]:
    return [record.name for record in env.jobs.queues()]


def test_a_mistyped_queue_is_refused_with_did_you_mean_and_nothing_is_stored(env):
    with pytest.raises(InvalidJob, match="no queue named 'mial'.*did you mean 'mail'") as caught:
        env.jobs.enqueue(Work(), queue="mial")
    assert "NewQueue('mial')" in str(caught.value)  # the way to use a new queue on purpose
    with pytest.raises(InvalidJob, match="did you mean 'mail'"):
        env.jobs.enqueue_many([Work(), Work()], queue="mial")
    workflow = Workflow("typo")
    workflow.add(Work(), queue="mial")
    with pytest.raises(InvalidJob, match="did you mean 'mail'"):
        env.jobs.enqueue_workflow(workflow)
    assert env.jobs.list() == []
    assert queue_names(env) == ["default", "mail"]


def test_queues_the_code_declares_are_used_as_they_are(env):
    env.configure(
        CRON=[
            {
                "name": "nightly",
                "schedule": "0 3 * * *",
                "job": "tests.sampleapp.jobs.Work",
                "queue": "named-by-cron",
            }
        ]
    )
    for queue in ("mail", "declared-by-a-kind", "named-by-cron"):
        job = env.jobs.enqueue(Work(), queue=queue)
        assert env.jobs.get(job.id).queue == queue
    assert env.jobs.get(env.jobs.enqueue(Report(account=1)).id).queue == "declared-by-a-kind"


def test_a_new_queue_is_used_on_purpose_with_new_queue(env):
    job = env.jobs.enqueue(Work(), queue=NewQueue("tenant-42"))
    record = env.jobs.get(job.id)
    assert record.queue == "tenant-42" and type(record.queue) is str
    (step,) = env.jobs.enqueue_many([Work()], queue=NewQueue("tenant-43"))
    assert env.jobs.get(step.id).queue == "tenant-43"
    with pytest.raises(InvalidJob, match="at most 200 characters"):
        env.jobs.enqueue(Work(), queue=NewQueue("t" * 201))  # still a name


def test_set_limits_refuses_a_typo_and_creates_nothing(env):
    env.configure(QUEUES={"default": {}, "sync": {}})
    with pytest.raises(InvalidJob, match="no queue named 'snyc'.*did you mean 'sync'"):
        env.jobs.set_limits("snyc", global_concurrency=2)
    assert queue_names(env) == ["default", "sync"]
    limited = env.jobs.set_limits("sync", global_concurrency=2)  # configured
    assert limited.limits.global_concurrency == 2
    created = env.jobs.set_limits(NewQueue("tenant-7"), rate_limit="5/s")  # on purpose
    assert created.name == "tenant-7" and created.limits.rate_limit == "5/s"
    env.jobs.enqueue(Work(), queue=NewQueue("tenant-8"))
    known = env.jobs.set_limits("tenant-8", global_concurrency=1)  # the store knows it
    assert known.limits.global_concurrency == 1


def test_pause_still_takes_any_name(env):
    """Pausing a queue before any job reaches it is how an operator holds it back: the
    facade's pause takes any name (the surfaces ask for "create")."""
    assert env.jobs.pause("not-yet-used").paused


@pytest.mark.parametrize(
    ("partition", "errors"),
    [
        ("account", []),
        ("acount", ["anole_jobs.E018"]),
        (["account", "region"], ["anole_jobs.E018"]),
    ],
)
def test_a_partition_no_kind_of_the_queue_has_is_a_check_error(settings, partition, errors):
    settings.ANOLE_JOBS = {
        "STORE": "memory",
        "QUEUES": {
            "default": {},
            "declared-by-a-kind": {"global_concurrency": 3, "partition": partition},
        },
    }
    found = [message for message in check_settings() if message.id == "anole_jobs.E018"]
    assert [message.id for message in found] == errors
    if found:
        assert "'declared-by-a-kind'" in found[0].msg and "test.queue_names.report" in found[0].msg
        assert "one partition" in found[0].msg


def test_a_partition_on_a_queue_no_kind_declares_is_checked_against_every_kind(settings):
    for field, errors in (("nowhere_at_all", 1), ("account", 0)):  # Report has an account
        settings.ANOLE_JOBS = {
            "STORE": "memory",
            "QUEUES": {"default": {}, "bulk": {"rate_limit": "5/s", "partition": field}},
        }
        assert [m.id for m in check_settings()].count("anole_jobs.E018") == errors
