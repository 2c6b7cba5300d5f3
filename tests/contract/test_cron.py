"""Cron on every store: first sighting, exactly-once ticks across instances, gaps, pruned jobs,
daylight saving, `jobs.cron_list()` and `jobs.cron_trigger()`.

Each test configures `CRON` through `env.configure` (the facade rebuilds its service) and
moves the fake clock; concurrent instances are real threads released by a barrier.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from anole_jobs import Enqueued, Job, jobs, kind
from anole_jobs.errors import ConfigurationError
from anole_jobs.events import CRON_ENQUEUED, ENQUEUED, Event
from anole_jobs.maintenance.cron import CronScheduler
from anole_jobs.schedules import CronRecord
from anole_jobs.testing.contract import race
from anole_jobs.unique import Unique

KIND = "test.cron.report"
JOB_PATH = "tests.contract.test_cron.Report"


@kind(KIND)
@dataclass
class Report:
    title: str = "daily"
    count: int = 1


@jobs.handler(Report)
def run_report(job: Job, args: Report) -> None:
    return None


UNIQUE_PATH = "tests.contract.test_cron.OneAtATime"


@kind("test.cron.one-at-a-time", unique=Unique())
@dataclass
class OneAtATime:
    pass


def at(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def configure(env, *entries: dict[str, Any]) -> None:
    env.configure(CRON=[{"name": "report", "job": JOB_PATH, **entry} for entry in entries])


def cron_jobs(env) -> list[Any]:
    """The jobs cron made, oldest first."""
    return sorted(env.jobs.list(kind=KIND), key=lambda record: record.id)


def ticks_of(env) -> list[str]:
    return [record.meta["cron"]["tick"] for record in cron_jobs(env)]


# -- first sighting and ticks ----------------------------------------------------------------------


def test_a_fresh_entry_records_its_latest_tick_and_enqueues_nothing(env):
    configure(env, {"schedule": "0 * * * *"})
    env.clock.set(at(2030, 1, 1, 10, 30))
    report = env.jobs.step()
    assert report.leader and report.cron_enqueued == 0
    assert cron_jobs(env) == []
    (record,) = env.jobs.cron_list()
    assert record.last_tick_at == at(2030, 1, 1, 10)
    assert record.last_job_id is None
    assert record.next_run_at == at(2030, 1, 1, 11)


def test_each_tick_is_enqueued_once_and_runs(env):
    configure(env, {"schedule": "0 * * * *"})
    env.clock.set(at(2030, 1, 1, 10, 30))
    env.jobs.step()
    seen: list[Event] = []
    unsubscribe = env.jobs.service.bus.subscribe(
        lambda event: seen.append(event) if event.name in (CRON_ENQUEUED, ENQUEUED) else None
    )
    try:
        env.clock.set(at(2030, 1, 1, 11))
        report = env.jobs.step()
        (job,) = cron_jobs(env)
        assert report.cron_enqueued == 1
        assert report.outcomes() == {job.id: "completed"}  # stage and run follow cron
        assert env.jobs.step().cron_enqueued == 0  # same moment again
        env.clock.advance(59)
        assert env.jobs.step().cron_enqueued == 0  # later within the same minute
    finally:
        unsubscribe()
    assert job.kind == KIND and job.queue == "default" and job.priority == 0
    assert job.args == {"title": "daily", "count": 1}
    assert job.meta["cron"] == {"name": "report", "tick": "2030-01-01T11:00:00+00:00"}
    assert job.unique_key is not None  # one key per entry and tick
    assert [(e.name, dict(e.fields)) for e in seen] == [
        (ENQUEUED, {"queue": "default", "kind": KIND, "inserted": True}),
        (CRON_ENQUEUED, {"name": "report", "job_id": job.id}),
    ]
    env.clock.set(at(2030, 1, 1, 12))
    assert env.jobs.step().cron_enqueued == 1
    assert ticks_of(env) == ["2030-01-01T11:00:00+00:00", "2030-01-01T12:00:00+00:00"]
    (record,) = env.jobs.cron_list()
    assert record.last_tick_at == at(2030, 1, 1, 12)
    assert record.last_job_id == cron_jobs(env)[-1].id


def test_entry_args_queue_priority_and_meta_reach_the_job(env):
    configure(
        env,
        {
            "schedule": "*/5 * * * *",
            "args": {"title": "weekly", "count": 3},
            "queue": "mail",
            "priority": 7,
            "meta": {"team": "ops"},
        },
    )
    env.jobs.step()
    env.clock.advance(timedelta(minutes=5))
    assert env.jobs.step().cron_enqueued == 1
    (job,) = cron_jobs(env)
    assert job.args == {"title": "weekly", "count": 3}
    assert (job.queue, job.priority) == ("mail", 7)
    assert job.meta["team"] == "ops" and job.meta["cron"]["name"] == "report"


# -- the store's cron_advance --------------------------------------------------------------------


def plain_job(env):
    """A job with no unique key, so only cron_advance's own rule can stop a second insert."""
    return env.jobs.service.build(Report(), now=env.clock())


def test_cron_advance_records_only_later_ticks(env):
    store, tick = env.store, at(2030, 1, 1, 1)
    assert store.cron_states(["a", "b"]) == {}
    assert store.cron_advance(name="a", tick=tick, job=None) is None  # first sighting
    (state,) = store.cron_states(["a", "b"]).values()
    assert (state.name, state.last_tick_at, state.last_job_id) == ("a", tick, None)

    assert store.cron_advance(name="a", tick=tick, job=plain_job(env)) is None  # not later
    assert store.cron_advance(name="a", tick=tick - timedelta(hours=1), job=plain_job(env)) is None
    assert env.jobs.counts() == {}

    later = tick + timedelta(hours=1)
    inserted = store.cron_advance(name="a", tick=later, job=plain_job(env))
    assert inserted is not None and inserted.inserted
    state = store.cron_states(["a"])["a"]
    assert (state.last_tick_at, state.last_job_id) == (later, inserted.id)
    assert env.jobs.get(inserted.id).kind == KIND
    assert store.cron_states(["b"]) == {}  # entries are independent


def test_cron_advance_racing_on_one_tick_inserts_one_job(env):
    store, tick = env.store, at(2030, 1, 1, 1)
    store.cron_advance(name="a", tick=tick - timedelta(hours=1), job=None)
    jobs_to_insert = [plain_job(env) for _ in range(8)]

    results = race(8, lambda i: store.cron_advance(name="a", tick=tick, job=jobs_to_insert[i]))

    winners = [r for r in results if r is not None]
    assert len(winners) == 1 and winners[0].inserted
    assert env.jobs.counts() == {"default": {"available": 1}}
    assert store.cron_states(["a"])["a"].last_job_id == winners[0].id


# -- exactly once across instances ---------------------------------------------------------------


def test_two_threads_stepping_enqueue_each_tick_once(env):
    # The threads of one process are one instance: both lead, and the tick is enqueued once.
    configure(env, {"schedule": "0 * * * *"})
    env.jobs.step()  # first sighting, by this thread
    env.jobs.service  # build the service before the threads share it
    for hour in (1, 2, 3):
        env.clock.set(at(2030, 1, 1, hour))
        reports = race(2, lambda i: env.jobs.step())
        assert all(r.leader for r in reports)
        assert sum(r.cron_enqueued for r in reports) == 1
        assert len(cron_jobs(env)) == hour
    assert ticks_of(env) == [f"2030-01-01T0{h}:00:00+00:00" for h in (1, 2, 3)]


def test_schedulers_racing_on_one_tick_insert_one_job(env):
    # Eight schedulers that all believe they lead (a leader that has not yet noticed it lost
    # leadership): the store's cron_advance alone must keep the tick to one job.
    configure(env, {"schedule": "0 * * * *"})
    service = env.jobs.service
    CronScheduler(service).run_once(env.clock())
    env.clock.set(at(2030, 1, 1, 1))
    now = env.clock()

    counts = race(8, lambda i: CronScheduler(service).run_once(now))

    assert sum(counts) == 1
    (job,) = cron_jobs(env)
    assert env.jobs.cron_list()[0].last_job_id == job.id


def test_a_second_scheduler_finds_the_tick_taken(env):
    configure(env, {"schedule": "0 * * * *"})
    service = env.jobs.service
    first, second = CronScheduler(service), CronScheduler(service)
    first.run_once(env.clock())
    env.clock.set(at(2030, 1, 1, 1))
    assert first.run_once(env.clock()) == 1
    assert second.run_once(env.clock()) == 0
    assert len(cron_jobs(env)) == 1


def test_a_follower_does_not_run_cron(env):
    configure(env, {"schedule": "0 * * * *"})
    env.jobs.step()  # this thread leads and records the first sighting
    lease = env.jobs.service.settings.lease
    env.clock.advance(lease + timedelta(seconds=1))
    if not env.has("leadership_lapses"):
        env.store.leadership.close()  # a session's lock: this instance's session ends instead
    assert env.store.lead(instance="elsewhere", now=env.clock(), ttl=timedelta(hours=2))
    env.clock.set(at(2030, 1, 1, 1))
    report = env.jobs.step()
    assert not report.leader and report.cron_enqueued == 0
    assert cron_jobs(env) == []
    env.clock.set(at(2030, 1, 1, 2, 1))  # the other leader's lease has lapsed (02:00:31)
    if not env.has("leadership_lapses"):
        env.store.resign(instance="elsewhere")
    report = env.jobs.step()
    assert report.leader and report.cron_enqueued == 1
    assert ticks_of(env) == ["2030-01-01T02:00:00+00:00"]  # the latest missed tick only


# -- gaps and pruning ----------------------------------------------------------------------------


def test_a_long_gap_enqueues_the_latest_missed_tick_once(env):
    configure(env, {"schedule": "0 * * * *"})
    env.jobs.step()
    env.clock.set(at(2030, 1, 11, 0, 30))  # ten days (240 ticks) without a leader
    assert env.jobs.step().cron_enqueued == 1
    assert env.jobs.step().cron_enqueued == 0
    assert ticks_of(env) == ["2030-01-11T00:00:00+00:00"]
    assert env.jobs.cron_list()[0].last_tick_at == at(2030, 1, 11)
    env.clock.set(at(2030, 1, 11, 1))
    assert env.jobs.step().cron_enqueued == 1
    assert len(cron_jobs(env)) == 2


def test_a_weekly_schedule_is_not_enqueued_again_after_its_job_was_pruned(env):
    configure(env, {"schedule": "0 9 * * 1"})  # Mondays 09:00 UTC
    env.jobs.step()  # Tuesday 2030-01-01: records Monday 2029-12-31 09:00
    assert env.jobs.cron_list()[0].last_tick_at == at(2029, 12, 31, 9)
    env.clock.set(at(2030, 1, 7, 9))
    assert env.jobs.step().cron_enqueued == 1
    (job,) = cron_jobs(env)
    assert env.jobs.get(job.id).state == "completed"

    env.clock.advance(timedelta(hours=24, seconds=1))
    report = env.jobs.step()
    assert report.pruned == 1 and report.cron_enqueued == 0
    assert env.jobs.get(job.id) is None
    env.clock.set(at(2030, 1, 13, 23, 59))
    assert env.jobs.step().cron_enqueued == 0
    assert cron_jobs(env) == []
    (record,) = env.jobs.cron_list()
    assert record.last_tick_at == at(2030, 1, 7, 9) and record.last_job_id == job.id

    env.clock.set(at(2030, 1, 14, 9))
    assert env.jobs.step().cron_enqueued == 1
    assert ticks_of(env) == ["2030-01-14T09:00:00+00:00"]


# -- daylight saving (cronsim's rules, see docs/cron.md) ----------------------------------------

DST_CASES = {
    # 02:30 does not exist on 2030-03-31 in Paris (02:00 CET -> 03:00 CEST): it runs at 03:00.
    "paris-spring-forward": (
        "30 2 * * *",
        "Europe/Paris",
        at(2030, 3, 30, 12),
        [
            (at(2030, 3, 31, 0, 59), None),  # 01:59 CET
            (at(2030, 3, 31, 1, 0), "2030-03-31T01:00:00+00:00"),  # 03:00 CEST
            (at(2030, 4, 1, 0, 29), None),
            (at(2030, 4, 1, 0, 30), "2030-04-01T00:30:00+00:00"),  # 02:30 CEST
        ],
    ),
    # 02:30 happens twice on 2030-10-27 in Paris: it runs once, at the first (CEST) one.
    "paris-fall-back": (
        "30 2 * * *",
        "Europe/Paris",
        at(2030, 10, 26, 12),
        [
            (at(2030, 10, 27, 0, 30), "2030-10-27T00:30:00+00:00"),  # 02:30 CEST
            (at(2030, 10, 27, 1, 30), None),  # 02:30 CET, the repeat
            (at(2030, 10, 27, 2, 30), None),
            (at(2030, 10, 28, 1, 30), "2030-10-28T01:30:00+00:00"),  # 02:30 CET
        ],
    ),
    # An hourly schedule is not a fixed time of day: both 01:00s of 2030-11-03 in New York run.
    "new-york-hourly-fall-back": (
        "0 * * * *",
        "America/New_York",
        at(2030, 11, 3, 4, 30),
        [
            (at(2030, 11, 3, 5, 0), "2030-11-03T05:00:00+00:00"),  # 01:00 EDT
            (at(2030, 11, 3, 5, 30), None),
            (at(2030, 11, 3, 6, 0), "2030-11-03T06:00:00+00:00"),  # 01:00 EST
            (at(2030, 11, 3, 7, 0), "2030-11-03T07:00:00+00:00"),  # 02:00 EST
        ],
    ),
}


@pytest.mark.parametrize("case", list(DST_CASES))
def test_daylight_saving_transitions_follow_cronsim(env, case):
    schedule, zone, start, moments = DST_CASES[case]
    configure(env, {"schedule": schedule, "timezone": zone})
    env.configure(PRUNE={"completed": timedelta(days=30)})  # keep every job to compare
    env.clock.set(start)
    assert env.jobs.step().cron_enqueued == 0  # first sighting
    expected: list[str] = []
    for moment, tick in moments:
        env.clock.set(moment)
        report = env.jobs.step()
        assert report.cron_enqueued == (tick is not None), moment
        if tick is not None:
            expected.append(tick)
        assert ticks_of(env) == expected, moment


# -- admin: cron_list and cron_trigger ------------------------------------------------------------


def test_cron_list_describes_each_entry(env):
    configure(
        env,
        {"schedule": "0  3 * * *"},
        {"name": "paris", "schedule": "0 3 * * *", "timezone": "Europe/Paris"},
    )
    env.clock.set(at(2030, 1, 1, 12))
    before = env.jobs.cron_list()
    assert before == [
        CronRecord(
            name="report",
            schedule="0 3 * * *",
            timezone="UTC",
            next_run_at=at(2030, 1, 2, 3),
            last_tick_at=None,
            last_job_id=None,
        ),
        CronRecord(
            name="paris",
            schedule="0 3 * * *",
            timezone="Europe/Paris",
            next_run_at=at(2030, 1, 2, 2),  # 03:00 CET
            last_tick_at=None,
            last_job_id=None,
        ),
    ]
    env.jobs.step()
    env.clock.set(at(2030, 1, 2, 3))
    assert env.jobs.step().cron_enqueued == 2
    report, paris = env.jobs.cron_list()
    ids = {job.meta["cron"]["name"]: job.id for job in cron_jobs(env)}
    assert (report.last_tick_at, report.last_job_id) == (at(2030, 1, 2, 3), ids["report"])
    assert (paris.last_tick_at, paris.last_job_id) == (at(2030, 1, 2, 2), ids["paris"])
    assert report.next_run_at == at(2030, 1, 3, 3) and paris.next_run_at == at(2030, 1, 3, 2)


def test_cron_list_is_empty_without_entries(env):
    assert env.jobs.cron_list() == []


def test_cron_trigger_enqueues_now_outside_the_schedule(env):
    configure(env, {"schedule": "0 3 * * *", "args": {"title": "now"}, "queue": "mail"})
    env.jobs.step()
    before = env.jobs.cron_list()[0]
    first = env.jobs.cron_trigger("report")
    second = env.jobs.cron_trigger("report")
    assert isinstance(first, Enqueued) and first.inserted and second.inserted
    assert first.id != second.id  # not unique
    job = env.jobs.get(first.id)
    assert job.kind == KIND and job.queue == "mail" and job.state == "available"
    assert job.args == {"title": "now", "count": 1}
    assert job.meta["cron"] == {"name": "report", "triggered": True}
    assert job.scheduled_at == env.clock()
    after = env.jobs.cron_list()[0]
    # The schedule is untouched; the run by hand is the entry's last job.
    assert (after.last_tick_at, after.next_run_at) == (before.last_tick_at, before.next_run_at)
    assert after.last_job_id == second.id


def test_a_trigger_before_the_first_sighting_leaves_the_schedule_to_start_as_usual(env):
    configure(env, {"schedule": "0 3 * * *"})
    env.clock.set(at(2030, 1, 1, 12))
    triggered = env.jobs.cron_trigger("report")
    (entry,) = env.jobs.cron_list()
    assert (entry.last_tick_at, entry.last_job_id) == (None, triggered.id)

    assert env.jobs.step().cron_enqueued == 0  # first sighting: history starts, no past tick
    (entry,) = env.jobs.cron_list()
    assert (entry.last_tick_at, entry.last_job_id) == (at(2030, 1, 1, 3), triggered.id)

    env.clock.set(at(2030, 1, 2, 3))
    assert env.jobs.step().cron_enqueued == 1  # the next tick runs, and becomes the last job
    ticked = [job for job in cron_jobs(env) if "tick" in job.meta["cron"]]
    (entry,) = env.jobs.cron_list()
    assert (entry.last_tick_at, entry.last_job_id) == (at(2030, 1, 2, 3), ticked[0].id)


def test_a_trigger_refused_by_the_kinds_unique_rule_keeps_the_last_job(env):
    configure(env, {"name": "unique", "schedule": "0 3 * * *", "job": UNIQUE_PATH})
    env.jobs.step()
    first = env.jobs.cron_trigger("unique")
    second = env.jobs.cron_trigger("unique")
    assert first.inserted and not second.inserted and second.id == first.id
    assert env.jobs.cron_list()[0].last_job_id == first.id


def test_the_store_records_a_trigger_without_moving_the_tick(env):
    store, tick = env.store, at(2030, 1, 1, 1)
    store.cron_advance(name="a", tick=tick, job=None)
    inserted = store.cron_trigger(name="a", job=plain_job(env))
    assert inserted.inserted and env.jobs.get(inserted.id).state == "available"
    state = store.cron_states(["a"])["a"]
    assert (state.last_tick_at, state.last_job_id) == (tick, inserted.id)
    # A later tick still goes in (the trigger recorded no tick), and becomes the last job.
    ticked = store.cron_advance(name="a", tick=tick + timedelta(hours=1), job=plain_job(env))
    assert ticked is not None and store.cron_states(["a"])["a"].last_job_id == ticked.id
    # An entry never seen: a job, no tick; its first sighting keeps the job.
    fresh = store.cron_trigger(name="b", job=plain_job(env))
    assert store.cron_states(["b"])["b"].last_tick_at is None
    assert store.cron_advance(name="b", tick=tick, job=None) is None
    state = store.cron_states(["b"])["b"]
    assert (state.last_tick_at, state.last_job_id) == (tick, fresh.id)


def test_cron_trigger_of_an_unknown_name_raises_lookup_error(env):
    configure(env, {"schedule": "0 3 * * *"})
    with pytest.raises(LookupError, match="'nope'.*'report'"):
        env.jobs.cron_trigger("nope")
    assert env.jobs.counts() == {}


def test_an_invalid_entry_stops_step_and_the_admin_calls(env):
    configure(env, {"schedule": "0 25 * * *"})
    with pytest.raises(ConfigurationError, match="'report'.*Bad hour"):
        env.jobs.step()
    with pytest.raises(ConfigurationError, match="Bad hour"):
        env.jobs.cron_list()
    with pytest.raises(ConfigurationError):
        env.jobs.cron_trigger("report")
