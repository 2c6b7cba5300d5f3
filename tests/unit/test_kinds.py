"""Declaring kinds and handlers: one handler per kind, and a kind without one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured

from anole_jobs import InvalidJob, Unique, jobs, kind
from anole_jobs.kinds import registry, spec_of


def test_kind_records_its_options():
    @kind("unit.options", queue="q", priority=-3, attempts=2, timeout=90, unique=Unique())
    @dataclass
    class Options:
        x: int

    spec = spec_of(Options)
    assert (spec.name, spec.queue, spec.priority, spec.attempts) == ("unit.options", "q", -3, 2)
    assert spec.timeout == timedelta(seconds=90)
    assert spec.unique == Unique()
    assert registry.kind("unit.options") is spec


@pytest.mark.parametrize(
    "options",
    [
        {"priority": 101},
        {"priority": -101},
        {"priority": 1.5},
        {"attempts": 0},
        {"timeout": 0},
        {"timeout": "1m"},
        {"queue": ""},
        {"backoff": 3},
        {"unique": "yes"},
    ],
)
def test_bad_kind_options_raise_invalid_job(options):
    with pytest.raises(InvalidJob):
        kind("unit.bad", **options)


def test_kind_requires_a_dataclass():
    with pytest.raises(InvalidJob, match="dataclass"):

        @kind("unit.not_dataclass")
        class Plain:
            pass


def test_a_kind_name_declared_on_two_types_is_an_error():
    @kind("unit.twice")
    @dataclass
    class First:
        pass

    with pytest.raises(ImproperlyConfigured, match="declared twice"):

        @kind("unit.twice")
        @dataclass
        class Second:
            pass


def test_a_second_handler_for_one_kind_is_an_error():
    @kind("unit.handled")
    @dataclass
    class Handled:
        pass

    @jobs.handler(Handled)
    def first(job, args):
        pass

    with pytest.raises(ImproperlyConfigured, match="already has a handler"):

        @jobs.handler(Handled)
        def second(job, args):
            pass

    registry.remove_handler("unit.handled")


def test_handler_of_an_undecorated_type_raises():
    @dataclass
    class Plain:
        pass

    with pytest.raises(InvalidJob, match="not a job kind"):
        jobs.handler(Plain)


def test_async_handlers_are_recognised():
    @kind("unit.async")
    @dataclass
    class Async:
        pass

    @jobs.handler(Async)
    async def run(job, args):
        pass

    assert registry.handler("unit.async").is_async
    registry.remove_handler("unit.async")


def test_jobs_modules_are_autodiscovered():
    # tests/sampleapp/jobs.py is imported by AppConfig.ready(), not by this test.
    assert registry.handler("test.work") is not None
    assert registry.kind("test.orphan") is not None and registry.handler("test.orphan") is None


def test_unique_options_are_validated():
    with pytest.raises(InvalidJob):
        Unique(scope="forever")  # type: ignore[arg-type]
    with pytest.raises(InvalidJob):
        Unique(period=0)
    assert Unique(period=60).period == timedelta(seconds=60)


def test_fake_clock():
    from datetime import UTC, datetime

    from anole_jobs.testing import FakeClock

    clock = FakeClock(datetime(2031, 5, 1, tzinfo=UTC))
    assert clock() == datetime(2031, 5, 1, tzinfo=UTC)
    clock.advance(timedelta(minutes=1))
    clock.advance(30)
    assert clock() == datetime(2031, 5, 1, 0, 1, 30, tzinfo=UTC)
    clock.set(datetime(2032, 1, 1, tzinfo=UTC))
    assert clock().year == 2032
    with pytest.raises(ValueError):
        FakeClock(datetime(2031, 1, 1))  # noqa: DTZ001
