"""Cron entries without a store: validation messages, the system check E009, and tick
arithmetic — checked against a plain forward walk of cronsim, across daylight-saving changes."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.validators import MinValueValidator

from anole_jobs import conf, kind
from anole_jobs.checks import check_settings
from anole_jobs.errors import ConfigurationError
from anole_jobs.schedules import CronEntry, load_cron, parse_cron, validate_cron

PATH = "tests.unit.test_cron.Digest"


@kind("test.cron_unit.digest")
@dataclass
class Digest:
    count: int = field(default=1, metadata={"validators": [MinValueValidator(1)]})
    label: str = "x"


@dataclass
class Plain:
    """A dataclass that is not a job kind."""

    n: int = 0


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def entry(**overrides: Any) -> dict[str, Any]:
    return {"name": "digest", "schedule": "0 3 * * *", "job": PATH, **overrides}


def parsed(schedule: str, timezone: str = "UTC") -> CronEntry:
    (item,), errors = parse_cron([entry(schedule=schedule, timezone=timezone)])
    assert errors == []
    return item


# -- validation ------------------------------------------------------------------------------------


def test_a_valid_entry_parses_with_defaults():
    (item,), errors = parse_cron([entry(schedule="  */5   9-17 * * MON-FRI ")])
    assert errors == []
    assert item.name == "digest"
    assert item.schedule == "*/5 9-17 * * MON-FRI"
    assert item.timezone == "UTC"
    assert item.job_type is Digest and item.kind == "test.cron_unit.digest"
    assert item.args == {} and item.meta == {}
    assert item.queue is None and item.priority is None
    assert item.args_instance() == Digest()


def test_all_options_are_kept():
    (item,), errors = parse_cron(
        [
            entry(
                args={"count": 3},
                timezone="Europe/Paris",
                queue="mail",
                priority=-5,
                meta={"team": "ops"},
            )
        ]
    )
    assert errors == []
    assert (item.timezone, item.queue, item.priority) == ("Europe/Paris", "mail", -5)
    assert item.args_instance() == Digest(count=3)
    assert item.meta == {"team": "ops"}
    assert item.tz == ZoneInfo("Europe/Paris")


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            {"schedule": "0 25 * * *"},
            "schedule '0 25 * * *' is not a valid cron expression: Bad hour",
        ),
        ({"schedule": "0 3 * *"}, "has 4 fields; a cron expression has five"),
        ({"schedule": "0 0 3 * * *"}, "has 6 fields"),  # cronsim's seconds field is not allowed
        ({"schedule": "@daily"}, "nicknames are not supported; write '0 0 * * *'"),
        ({"schedule": ""}, "schedule must be a five-field cron expression string"),
        ({"schedule": 5}, "schedule must be a five-field cron expression string, got 5"),
        ({"schedule": "* * */20 * 1L"}, "never matches"),
        (
            {"job": "tests.unit.nowhere.Digest"},
            "job 'tests.unit.nowhere.Digest' cannot be imported",
        ),
        ({"job": "tests.unit.test_cron.Plain"}, "is not a job kind: decorate its dataclass"),
        ({"job": 3}, "job must be the dotted path of a @kind dataclass"),
        ({"args": {"count": "three"}}, "args do not decode into Digest: Digest.count"),
        ({"args": {"count": 0}}, "args do not decode into Digest"),  # a field rule
        ({"args": [1]}, "args must be a dict of the job's fields, got list"),
        ({"timezone": "Mars/Olympus"}, "timezone 'Mars/Olympus' is not a known IANA time zone"),
        ({"timezone": 1}, "timezone must be an IANA name"),
        ({"queue": ""}, "queue must be a non-empty string"),
        ({"priority": 101}, "priority must be an int in -100..100"),
        ({"priority": True}, "priority must be an int in -100..100"),
        ({"meta": {"x": {1, 2}}}, "meta['x']"),
        ({"schedul": "0 3 * * *"}, "unknown key 'schedul' (did you mean 'schedule'?)"),
        ({"name": ""}, "name must be a non-empty string"),
    ],
)
def test_each_problem_is_named_with_its_entry(overrides, expected):
    messages = validate_cron([entry(**overrides)])
    assert len(messages) >= 1
    assert any(expected in message for message in messages), messages
    assert all(message.startswith("ANOLE_JOBS['CRON'][0]") for message in messages)


def test_missing_keys_and_non_dicts_are_reported():
    messages = validate_cron([{"name": "lonely"}, "0 3 * * *"])
    assert messages == [
        "ANOLE_JOBS['CRON'][0] ('lonely'): missing 'schedule', 'job'",
        "ANOLE_JOBS['CRON'][1] must be a dict, got str",
    ]


def test_duplicate_names_are_an_error():
    messages = validate_cron([entry(), entry(schedule="0 4 * * *")])
    assert messages == [
        "ANOLE_JOBS['CRON'][1] ('digest'): the name is already used by entry 0; names identify "
        "entries and must be unique"
    ]


def test_every_problem_of_every_entry_is_reported_at_once():
    messages = validate_cron(
        [entry(schedule="61 * * * *", timezone="Nowhere/Land"), entry(name="b", job="x.y.Z")]
    )
    assert len(messages) == 3
    assert [m.split(":")[0] for m in messages] == [
        "ANOLE_JOBS['CRON'][0] ('digest')",
        "ANOLE_JOBS['CRON'][0] ('digest')",
        "ANOLE_JOBS['CRON'][1] ('b')",
    ]


def test_cron_must_be_a_list():
    assert validate_cron({"name": "x"}) == ["ANOLE_JOBS['CRON'] must be a list of dicts, got dict"]
    assert validate_cron([]) == [] and validate_cron(None) == []


def test_a_missing_cronsim_is_reported_only_when_entries_exist(monkeypatch):
    monkeypatch.setitem(sys.modules, "cronsim", None)  # makes `import cronsim` fail
    assert validate_cron([]) == []
    (message,) = validate_cron([entry()])
    assert "needs cronsim, a dependency of anole-jobs that is not installed" in message
    assert 'pip install "cronsim>=2.6"' in message


def test_load_cron_raises_configuration_error_listing_every_problem():
    settings = conf.parse(
        {"STORE": "memory", "CRON": [entry(schedule="0 3 * *"), entry(name="x", job="no.such.Job")]}
    )
    with pytest.raises(ConfigurationError) as caught:
        load_cron(settings)
    text = str(caught.value)
    assert text.startswith("ANOLE_JOBS['CRON'] is invalid: ")
    assert "('digest'): schedule '0 3 * *' has 4 fields" in text
    assert "('x'): job 'no.such.Job' cannot be imported" in text
    good = conf.parse({"STORE": "memory", "CRON": [entry()]})
    assert [item.name for item in load_cron(good)] == ["digest"]


# -- system checks ------------------------------------------------------------------------------


def test_system_checks_report_invalid_entries_as_e009(settings):
    settings.ANOLE_JOBS = {
        "STORE": "memory",
        "CRON": [entry(schedule="0 3 * * * *"), entry(name="ok")],
    }
    errors = [m for m in check_settings() if m.id == "anole_jobs.E009"]
    assert len(errors) == 1
    assert "('digest'): schedule '0 3 * * * *' has 6 fields" in errors[0].msg
    assert errors[0].hint == "see docs/cron.md"


def test_system_checks_accept_valid_entries(settings):
    settings.ANOLE_JOBS = {"STORE": "memory", "CRON": [entry(), entry(name="other")]}
    assert [m for m in check_settings() if m.id == "anole_jobs.E009"] == []


def test_system_checks_report_a_cron_that_is_not_a_list(settings):
    settings.ANOLE_JOBS = {"STORE": "memory", "CRON": "0 3 * * *"}
    assert [m.id for m in check_settings()] == ["anole_jobs.E009"]


# -- ticks ---------------------------------------------------------------------------------------


def test_next_after_is_strictly_after():
    item = parsed("0 * * * *")
    assert item.next_after(at(2030, 1, 1, 10)) == at(2030, 1, 1, 11)
    assert item.next_after(at(2030, 1, 1, 10, 59, 59, 999_999)) == at(2030, 1, 1, 11)


def test_latest_between_includes_now_and_excludes_after():
    item = parsed("0 * * * *")
    assert item.latest_between(at(2030, 1, 1, 9), at(2030, 1, 1, 10)) == at(2030, 1, 1, 10)
    assert item.latest_between(at(2030, 1, 1, 10), at(2030, 1, 1, 10, 59)) is None
    assert item.latest_between(None, at(2030, 1, 1, 10, 59)) == at(2030, 1, 1, 10)


def test_latest_between_finds_the_latest_tick_after_a_long_gap():
    every_minute = parsed("* * * * *")
    assert every_minute.latest_between(at(2030, 1, 1), at(2031, 1, 1, 0, 0, 30)) == at(2031, 1, 1)
    first_of_month = parsed("* 3 1 * *", "Europe/Paris")
    # Every minute of 03:xx on the 1st, Paris time; twenty months later, on the 30th.
    assert first_of_month.latest_between(at(2029, 5, 1), at(2031, 1, 30)) == at(2031, 1, 1, 2, 59)
    leap_day = parsed("0 0 29 2 *")
    assert leap_day.latest_between(None, at(2030, 1, 1)) == at(2028, 2, 29)


def forward_walk(schedule: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    """Every tick in (start, end], by one plain cronsim walk (the reference)."""
    from cronsim import CronSim

    it = CronSim(schedule, start.astimezone(ZoneInfo(zone)))
    ticks: list[datetime] = []
    while True:
        tick = next(it).astimezone(UTC)
        if tick > end:
            return ticks
        if tick > start and (not ticks or tick > ticks[-1]):
            ticks.append(tick)


TRANSITIONS = [
    ("Europe/Paris", at(2030, 3, 31)),
    ("Europe/Paris", at(2030, 10, 27)),
    ("America/New_York", at(2030, 3, 10, 5)),
    ("America/New_York", at(2030, 11, 3, 5)),
]
SCHEDULES = ["30 2 * * *", "30 1 * * *", "0 * * * *", "*/20 * * * *", "15 2,3 * * *", "30 1 * * 0"]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize(("zone", "day"), TRANSITIONS)
def test_ticks_agree_with_one_walk_from_the_past_across_dst(zone, day, schedule):
    item = parsed(schedule, zone)
    start, end = day - timedelta(days=30), day + timedelta(days=2)
    reference = forward_walk(schedule, zone, start, end + timedelta(days=8))
    now = day - timedelta(hours=6)
    while now < day + timedelta(hours=30):
        latest = max(t for t in reference if t <= now)
        following = min(t for t in reference if t > now)
        earlier = [t for t in reference if t < latest]
        assert item.latest_between(None, now) == latest, now
        assert item.latest_between(earlier[-1], now) == latest, now
        assert item.latest_between(latest, now) is None, now
        assert item.next_after(now) == following, now
        now += timedelta(minutes=17, seconds=7)


def local_ticks(item: CronEntry, day_start: datetime, hours: int = 24) -> list[str]:
    ticks, moment = [], day_start
    while (tick := item.next_after(moment)) is not None and tick < day_start + timedelta(
        hours=hours
    ):
        ticks.append(tick.astimezone(item.tz).strftime("%H:%M%z"))
        moment = tick
    return ticks


def test_fixed_times_in_a_skipped_hour_run_when_the_gap_ends():
    # Paris, 2030-03-31: 02:00 CET jumps to 03:00 CEST.
    item = parsed("30 2 * * *", "Europe/Paris")
    assert local_ticks(item, at(2030, 3, 30, 23)) == ["03:00+0200"]
    assert local_ticks(item, at(2030, 3, 31, 23)) == ["02:30+0200"]
    two_in_gap = parsed("15,45 2 * * *", "Europe/Paris")
    assert local_ticks(two_in_gap, at(2030, 3, 30, 23)) == ["03:00+0200"]  # once, not twice


def test_fixed_times_in_a_repeated_hour_run_once():
    # New York, 2030-11-03: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
    item = parsed("30 1 * * *", "America/New_York")
    assert local_ticks(item, at(2030, 11, 3, 4)) == ["01:30-0400"]


def test_frequent_schedules_follow_real_time_through_both_transitions():
    every_20 = parsed("*/20 * * * *", "America/New_York")
    # The repeated hour ticks twice; the skipped hour not at all.
    assert local_ticks(every_20, at(2030, 11, 3, 4, 50), hours=3) == [
        "01:00-0400", "01:20-0400", "01:40-0400",
        "01:00-0500", "01:20-0500", "01:40-0500",
        "02:00-0500", "02:20-0500", "02:40-0500",
    ]  # fmt: skip
    assert local_ticks(every_20, at(2030, 3, 10, 5, 50), hours=2) == [
        "01:00-0500", "01:20-0500", "01:40-0500",
        "03:00-0400", "03:20-0400", "03:40-0400",
    ]  # fmt: skip


def test_a_missing_parser_is_a_check_error_and_never_fails_a_step(
    monkeypatch, settings, caplog, clock
):
    from anole_jobs.api import jobs

    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "CLOCK": clock, "CRON": [entry()]}
    monkeypatch.setitem(sys.modules, "cronsim", None)  # a broken install
    try:
        (error,) = [m for m in check_settings() if m.id == "anole_jobs.E009"]
        assert "needs cronsim" in error.msg
        with caplog.at_level("ERROR", logger="anole_jobs.cron"):
            assert jobs.step().cron_enqueued == 0
            assert jobs.step().cron_enqueued == 0
            assert jobs.cron_list() == []
        lines = [r.getMessage() for r in caplog.records if r.name == "anole_jobs.cron"]
        assert len(lines) == 1 and lines[0].startswith("cron is off: ") and "check" in lines[0]
    finally:
        jobs.reset()
