"""An enqueue without options (the common `jobs.enqueue(args)`) reuses its kind's options,
checked the first time, and still checks each job's arguments, size and trace context: the
job it writes is the one an enqueue passing the same options explicitly writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from anole_jobs import InvalidJob, Unique, kind
from anole_jobs.api import jobs
from anole_jobs.kinds import set_job_options
from tests.sampleapp.jobs import Validated


@pytest.fixture
def memory(settings, clock):
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "CLOCK": clock}
    yield jobs
    jobs.reset()


@kind("test.plain_unique", queue="plain-q", priority=7, attempts=4, unique=Unique(scope="any"))
@dataclass
class PlainUnique:
    n: int = 0


def _row(job_id):
    record = jobs.get(job_id)
    return (
        record.kind,
        record.queue,
        record.priority,
        record.max_attempts,
        record.state,
        record.scheduled_at,
        record.created_at,
        record.meta,
        record.unique_key,
        record.args,
    )


def test_a_plain_enqueue_writes_what_the_kinds_options_given_explicitly_write(memory, clock):
    first = memory.enqueue(PlainUnique(n=1))  # checks the options, remembers them
    second = memory.enqueue(PlainUnique(n=2))  # the remembered options
    explicit = memory.enqueue(PlainUnique(n=3), queue="plain-q", priority=7)
    assert first.inserted and second.inserted and explicit.inserted
    rows = [_row(e.id) for e in (first, second, explicit)]
    assert (
        rows[1][:7]
        == rows[2][:7]
        == ("test.plain_unique", "plain-q", 7, 4, "available", clock(), clock())
    )
    assert rows[1][7] == rows[2][7] == {}
    assert rows[1][8] is not None and len({row[8] for row in rows}) == 3  # per-args keys
    # The kind's unique rule holds on the remembered path: a duplicate returns the first.
    again = memory.enqueue(PlainUnique(n=2))
    assert (again.id, again.inserted) == (second.id, False)


def test_each_plain_enqueue_still_checks_its_arguments_and_size(memory, settings, clock):
    memory.enqueue(Validated(count=1))
    with pytest.raises(InvalidJob, match="count"):
        memory.enqueue(Validated(count=0))
    with pytest.raises(InvalidJob, match="label must not be 'bad'"):
        memory.enqueue(Validated(count=1, label="bad"))
    settings.ANOLE_JOBS = {
        "STORE": "memory",
        "RUN": "manual",
        "CLOCK": clock,
        "MAX_PAYLOAD_BYTES": 100,
    }
    memory.enqueue(Validated(count=1))
    big = Validated(count=1, label="x" * 200)
    with pytest.raises(InvalidJob) as plain:
        memory.enqueue(big)
    with pytest.raises(InvalidJob) as explicit:
        memory.enqueue(big, priority=0)
    assert str(plain.value) == str(explicit.value)
    assert str(plain.value).startswith(
        "enqueue('test.validated'): the job's args and meta take 224 bytes of JSON, more than "
        "the 100 bytes MAX_PAYLOAD_BYTES allows"
    )
    assert memory.counts() == {"default": {"available": 1}}  # new settings, new memory store


def test_a_kinds_options_changed_after_its_first_enqueue_are_followed(memory):
    @kind("test.plain_later", attempts=2)
    @dataclass
    class Later:
        tries: int = 0

    before = memory.enqueue(Later(tries=9))
    set_job_options(Later, attempts_of=lambda args: args["tries"])
    after = memory.enqueue(Later(tries=9))
    assert (jobs.get(before.id).max_attempts, jobs.get(after.id).max_attempts) == (2, 9)


def test_a_delayed_enqueue_is_not_taken_for_a_plain_one(memory, clock):
    plain = memory.enqueue(PlainUnique(n=1))
    later = memory.enqueue(PlainUnique(n=2), delay=timedelta(minutes=5))
    assert jobs.get(plain.id).state == "available"
    record = jobs.get(later.id)
    assert (record.state, record.scheduled_at) == ("scheduled", clock() + timedelta(minutes=5))
