"""Names and numbers no store can hold are refused where they enter, by one rule
(`anole_jobs.bounds`), on every store: a name of at most 200 printable characters, a count up
to 2**31 - 1 (the stores' INTEGER columns), an args-search integer within 64 bits. PostgreSQL
answered such values with a ``DataError`` (a NUL, an integer out of range), or with an index
row too big that read as an outage; SQLite with ``OverflowError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from anole_jobs import InvalidJob, NewQueue, Workflow, kind
from anole_jobs.bounds import COUNT_MAX, NAME_MAX
from anole_jobs.checks import check_settings
from anole_jobs.schedules import validate_cron
from tests.sampleapp.jobs import Work

TOO_LONG = "n" * (NAME_MAX + 1)


def test_set_limits_takes_counts_up_to_what_the_stores_keep(env):
    held = env.jobs.set_limits("default", global_concurrency=COUNT_MAX, rate_limit=(COUNT_MAX, 1))
    assert held.limits.global_concurrency == COUNT_MAX
    for value in (COUNT_MAX + 1, 2**63, 2**64, 10**5000):
        with pytest.raises(ValueError, match="at most 2147483647"):
            env.jobs.set_limits("default", global_concurrency=value)
    for rate in (f"{COUNT_MAX + 1}/s", "9" * 5000 + "/m", (2**64, 1)):
        with pytest.raises(ValueError, match="at most 2147483647"):
            env.jobs.set_limits("default", rate_limit=rate)
    with pytest.raises(ValueError, match="too long"):
        env.jobs.set_limits("default", rate_limit=(3, 1e300))
    (default,) = [q for q in env.jobs.queues() if q.name == "default"]
    assert default.limits.global_concurrency == COUNT_MAX  # as it was


def test_an_args_search_holds_64_bit_integers(env):
    job = env.jobs.enqueue(Work(tag="big"))
    assert [r.id for r in env.jobs.list(args={"tag": "big"})] == [job.id]
    assert env.jobs.list(args={"n": 2**63 - 1}) == [] == env.jobs.list(args={"n": -(2**63)})
    for value in (2**63, -(2**63) - 1, [2**64], {"deep": 10**40}):
        with pytest.raises(InvalidJob, match="integers from -2\\*\\*63 to 2\\*\\*63 - 1"):
            env.jobs.list(args={"n": value})


def test_queue_and_kind_filters_follow_the_rule_for_names(env):
    env.jobs.enqueue(Work())
    assert env.jobs.list(queue="q" * NAME_MAX) == []
    for filters in ({"queue": TOO_LONG}, {"kind": "a\x00b"}, {"queue": "tab\there"}):
        with pytest.raises(InvalidJob, match="filter"):
            env.jobs.list(**filters)


def test_a_delay_past_the_year_9999_is_refused(env):
    for delay in (10**12, timedelta(days=999_999_999)):
        with pytest.raises(InvalidJob, match="delay"):
            env.jobs.enqueue(Work(), delay=delay)
    assert env.jobs.list() == []


def test_resume_of_a_name_too_long_is_refused_before_the_store(env):
    """A 10,000-character queue could be paused (created) but not resumed on PostgreSQL."""
    for call in (env.jobs.pause, env.jobs.resume):
        with pytest.raises(InvalidJob, match=f"at most {NAME_MAX} characters"):
            call("q" * 10_000)
    with pytest.raises(InvalidJob, match=f"at most {NAME_MAX} characters"):
        env.jobs.set_limits(NewQueue(TOO_LONG), global_concurrency=1)
    assert env.store.paused_queues() == {} and env.store.runtime_limits() == {}


def test_kinds_declare_names_and_attempts_within_the_bounds():
    for name in (TOO_LONG, "tab\there", ""):
        with pytest.raises(InvalidJob, match="kind name"):
            kind(name)
    with pytest.raises(InvalidJob, match="queue name"):
        kind("bounds.ok", queue=TOO_LONG)
    with pytest.raises(InvalidJob, match="attempts must be at most 2147483647"):
        kind("bounds.ok", attempts=COUNT_MAX + 1)

    @kind("b" * NAME_MAX, attempts=COUNT_MAX)
    @dataclass
    class Longest:
        pass


def test_workflow_step_names_follow_the_rule_for_names():
    workflow = Workflow("bounds")
    workflow.add(Work(), name="s" * NAME_MAX)
    for name in (TOO_LONG, "new\nline"):
        with pytest.raises(InvalidJob, match="step's name"):
            workflow.add(Work(), name=name)
    with pytest.raises(InvalidJob, match="NUL"):
        Workflow("a\x00b")


def test_cron_and_queue_names_in_the_settings_are_check_errors(settings):
    entry = {"schedule": "0 3 * * *", "job": "tests.sampleapp.jobs.Work"}
    problems = validate_cron(
        [{**entry, "name": TOO_LONG}, {**entry, "name": "ok", "queue": "\x00"}]
    )
    assert len(problems) == 2 and "at most 200" in problems[0] and "control" in problems[1]
    settings.ANOLE_JOBS = {"STORE": "memory", "QUEUES": {"default": {}, TOO_LONG: {}}}
    found = [m for m in check_settings() if m.id == "anole_jobs.E006"]
    assert len(found) == 1 and "at most 200 characters" in found[0].msg
