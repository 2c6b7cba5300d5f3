"""The typed settings view, its errors and the system checks."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from anole_jobs import conf
from anole_jobs.errors import ConfigurationError
from anole_jobs.testing import FakeClock


def ids(raw):
    return [p.id for p in conf.problems(raw)]


def test_defaults():
    settings = conf.parse({})
    assert settings.store.kind == "database" and settings.store.alias == "default"
    assert settings.store.vendor == "sqlite"
    assert list(settings.queues) == ["default"]
    assert settings.queues["default"].concurrency == 10
    assert settings.queues["default"].drain_timeout == timedelta(seconds=10)
    assert settings.run == "auto" and settings.deployment == "server"
    assert settings.lease == timedelta(seconds=30)
    assert settings.migrate is True and settings.notify is True and settings.metrics is True
    assert settings.table_prefix == "anole_jobs_" and settings.key_prefix == "anole:"
    assert settings.prune == {
        "completed": timedelta(hours=24),
        "dead": timedelta(days=30),
        "cancelled": timedelta(days=7),
    }
    assert settings.tracing is True and settings.sample_all is True


def test_durations_accept_seconds_or_timedelta():
    settings = conf.parse(
        {
            "LEASE": 5,
            "QUEUES": {"q": {"drain_timeout": timedelta(seconds=3)}},
            "PRUNE": {"dead": 60},
        }
    )
    assert settings.lease == timedelta(seconds=5)
    assert settings.queues["q"].drain_timeout == timedelta(seconds=3)
    assert settings.prune["dead"] == timedelta(seconds=60)
    assert settings.prune["completed"] == timedelta(hours=24)


@pytest.mark.parametrize("seconds", [1e20, -1e20, 10**30])
def test_a_duration_too_long_for_a_timedelta_is_a_clear_error(seconds):
    from anole_jobs.durations import to_timedelta

    # timedelta itself raises OverflowError, which said nothing of the setting.
    with pytest.raises(ValueError, match=r"^retry_in is too long: at most 999,999,999 days"):
        to_timedelta(seconds, name="retry_in", allow_negative=True)


def test_unknown_key_suggests_the_closest():
    problems = conf.problems({"QUEUE": {}})
    assert [p.id for p in problems] == ["anole_jobs.E001"]
    assert "did you mean 'QUEUES'?" in problems[0].hint
    with pytest.raises(ConfigurationError, match="unknown key 'QUEUE'.*did you mean 'QUEUES'"):
        conf.parse({"QUEUE": {}})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"STORE": "redis"}, "anole_jobs.E002"),
        ({"STORE": {"databse": "default"}}, "anole_jobs.E002"),
        ({"STORE": {"database": "nope"}}, "anole_jobs.E003"),
        ({"STORE": {"redis": "nope"}}, "anole_jobs.E005"),
        ({"STORE": {"redis": "default"}}, "anole_jobs.E005"),  # locmem, not django-redis
        ({"QUEUES": {}}, "anole_jobs.E006"),
        ({"QUEUES": {"q": {"concurrency": 0}}}, "anole_jobs.E006"),
        ({"QUEUES": {"q": {"concurency": 2}}}, "anole_jobs.E006"),
        ({"QUEUES": {"q": {"drain_timeout": "soon"}}}, "anole_jobs.E007"),
        ({"RUN": "sometimes"}, "anole_jobs.E007"),
        ({"DEPLOYMENT": "k8s"}, "anole_jobs.E007"),
        ({"LEASE": 0.5}, "anole_jobs.E007"),
        ({"MIGRATE": "yes"}, "anole_jobs.E007"),
        ({"PRUNE": {"running": 10}}, "anole_jobs.E007"),
        ({"TRACING": {"sample": True}}, "anole_jobs.E007"),
        ({"JOB_LOG_LINES": -1}, "anole_jobs.E007"),
        ({"JOB_LOG_LINES": 10_001}, "anole_jobs.E007"),
        ({"JOB_LOG_LINES": "200"}, "anole_jobs.E007"),
        ({"CLOCK": "no.such.clock"}, "anole_jobs.E008"),
        ({"CLOCK": 42}, "anole_jobs.E008"),
        ({"CRON": "0 3 * * *"}, "anole_jobs.E009"),
        ({"ADMIN_PERMISSION": 3}, "anole_jobs.E010"),
        ("not a dict", "anole_jobs.E001"),
    ],
)
def test_each_misconfiguration_has_its_check_id(raw, expected):
    assert expected in ids(raw)


def test_unsupported_database_vendor(settings):
    settings.DATABASES = {
        **settings.DATABASES,
        "maria": {"ENGINE": "django.db.backends.mysql", "NAME": "x"},
    }
    problems = conf.problems({"STORE": {"database": "maria"}})
    assert [p.id for p in problems] == ["anole_jobs.E004"]
    assert "SQLite and PostgreSQL" in problems[0].message


def test_clock_from_dotted_path_or_callable():
    clock = FakeClock()
    assert conf.parse({"CLOCK": clock}).clock() == clock()
    assert conf.parse({"CLOCK": "anole_jobs.clock.system_clock"}).clock().tzinfo is not None


def test_a_naive_clock_fails_loudly():
    from datetime import datetime

    settings = conf.parse({"CLOCK": lambda: datetime(2030, 1, 1)})  # noqa: DTZ001
    with pytest.raises(TypeError, match="aware"):
        settings.clock()


def test_checks_report_without_raising(settings):
    settings.ANOLE_JOBS = {"STORE": {"database": "missing"}, "QUEUES": {"q": {"concurrency": -1}}}
    # Only our tag: Django 6 runs its own model checks against every database by default.
    with pytest.raises(SystemCheckError) as excinfo:
        call_command("check", "--tag", "anole_jobs")
    text = str(excinfo.value)
    assert "anole_jobs.E003" in text and "anole_jobs.E006" in text


def test_the_first_use_raises_improperly_configured(settings):
    from django.core.exceptions import ImproperlyConfigured

    from anole_jobs import jobs
    from tests.sampleapp.jobs import Work

    settings.ANOLE_JOBS = {"STORE": {"database": "missing"}}
    with pytest.raises(ImproperlyConfigured, match="missing"):
        jobs.enqueue(Work())


def test_unknown_queue_of_a_kind_is_a_warning(settings):
    from django.core.checks import run_checks

    settings.ANOLE_JOBS = {"STORE": "memory", "QUEUES": {"default": {}}}
    warnings = [m for m in run_checks(databases=[]) if m.id == "anole_jobs.W001"]
    # tests.sampleapp declares test.priority on queue "mail".
    assert any("'mail'" in m.msg for m in warnings)


def test_settings_changes_rebuild_the_service(settings):
    from anole_jobs import jobs

    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual"}
    first = jobs.service
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "LEASE": 5}
    second = jobs.service
    assert first is not second and second.settings.lease == timedelta(seconds=5)


# -- sessions: the pool, a transaction pooler and the direct connection -------------------------
def test_session_settings_default_to_a_pool_of_two_and_no_pooler():
    settings = conf.parse({"STORE": {"database": "pg"}})
    assert (settings.pool_size, settings.direct_database, settings.transaction_pooler) == (
        2,
        None,
        False,
    )


@pytest.mark.parametrize(
    "direct",
    ["pg", "postgresql://postgres@127.0.0.1:5432/jobs", "host=127.0.0.1 port=5432 dbname=jobs"],
)
def test_the_direct_database_is_an_alias_or_a_dsn(direct):
    settings = conf.parse(
        {"STORE": {"database": "pg"}, "TRANSACTION_POOLER": True, "DIRECT_DATABASE": direct}
    )
    assert settings.direct_database == direct and settings.transaction_pooler


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"STORE": {"database": "pg"}, "DIRECT_DATABASE": "nowhere"}, "neither an alias"),
        ({"STORE": {"database": "pg"}, "DIRECT_DATABASE": "default"}, "not PostgreSQL"),
        ({"STORE": {"database": "pg"}, "DIRECT_DATABASE": "host='x"}, "not a valid DSN"),
        ({"STORE": {"database": "default"}, "DIRECT_DATABASE": "pg"}, "PostgreSQL database"),
        ({"STORE": {"database": "pg"}, "DIRECT_DATABASE": 5}, "a database alias or a DSN"),
        ({"STORE": {"database": "pg"}, "POOL_SIZE": -1}, "POOL_SIZE"),
        ({"STORE": {"database": "pg"}, "TRANSACTION_POOLER": "yes"}, "TRANSACTION_POOLER"),
    ],
)
def test_session_settings_are_checked(raw, says):
    problems = conf.problems(raw)
    assert problems and says in problems[0].message, problems


def test_the_statistics_keep_minutes_a_day_and_hours_30_days_by_default():
    keep = conf.parse({}).stats
    assert (keep.minutes, keep.hours) == (timedelta(days=1), timedelta(days=30))
    keep = conf.parse({"STATS": {"MINUTES": 6 * 3600, "HOURS": timedelta(days=90)}}).stats
    assert (keep.minutes, keep.hours) == (timedelta(hours=6), timedelta(days=90))
    assert conf.parse({"STATS": {"HOURS": timedelta(days=7)}}).stats.minutes == timedelta(days=1)


@pytest.mark.parametrize(
    ("stats", "message"),
    [
        ("30d", "must be a dict"),
        ({"MINUTE": 3600}, "unknown key 'MINUTE'"),
        ({"MINUTES": "1d"}, "must be a timedelta or a number of seconds"),
        ({"MINUTES": timedelta(minutes=30)}, "between 2 hours and 2 days, got 0.5 hours"),
        ({"MINUTES": timedelta(days=3)}, "between 2 hours and 2 days, got 3 days"),
        ({"HOURS": timedelta(hours=12)}, r"HOURS'\] \(12 hours\) must be at least MINUTES"),
        ({"HOURS": -1}, "must not be negative"),
    ],
)
def test_a_misconfigured_statistics_history_is_a_check_error(stats, message):
    found = conf.problems({"STATS": stats})
    assert [p.id for p in found] == ["anole_jobs.E007"] * len(found) and found
    assert any(re.search(message, p.message) for p in found), found
    with pytest.raises(ConfigurationError, match="STATS"):
        conf.parse({"STATS": stats})
