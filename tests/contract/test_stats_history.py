"""The statistics' history on every store: the leader rolls each ended hour up into one row per
queue (`Store.roll_up_stats`) and prunes minutes and hours past their horizons
(`Store.prune_stats`); per-hour reads take rolled rows where they are and minutes elsewhere.

Every time comes from the test (the store's `now`/`at` arguments, or the fake clock through the
facade), so each test knows which hours have ended.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from anole_jobs.errors import StoreUnavailable
from anole_jobs.stores.base import Finish
from anole_jobs.stores.stats import StatsPoint
from anole_jobs.testing.contract import new_job
from tests.support.stats import clear_stats

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)  # the start of an hour
LEASE = timedelta(seconds=30)
KEEP = timedelta(days=30)


@pytest.fixture(autouse=True)
def no_earlier_counters(request: Any) -> None:
    """The SQL stores' stat tables are no models: start from none."""
    if "env" in request.fixturenames:
        clear_stats(request.getfixturevalue("env"))


def hour(n: float) -> datetime:
    return T0 + timedelta(hours=n)


def complete(store: Any, at: datetime, n: int = 1, queue: str = "default", ms: int = 5) -> None:
    """`n` runs of `queue` claimed at `at`, completed `ms` later."""
    store.insert([new_job(at=at, queue=queue) for _ in range(n)])
    claimed = store.claim(queue, kinds=None, limit=n, now=at, lease_until=at + LEASE, worker="test")
    assert len(claimed) == n
    ended = at + timedelta(milliseconds=ms)
    store.finish([Finish(run=c.run, state="completed", at=ended) for c in claimed])


def hourly(store: Any, until: datetime, queues: Any = None) -> dict[str, dict[datetime, Any]]:
    found = store.stats(queues, since=hour(-48), until=until, resolution="hour")
    return {q: {p.at: p for p in ps} for q, ps in found.items()}


def counts(point: StatsPoint) -> tuple[int, ...]:
    return (
        point.started,
        point.completed,
        point.retried,
        point.dead,
        point.runtime_total_ms,
        point.runtime_max_ms,
        *point.runtime,
    )


def as_counts(found: dict[str, dict[datetime, Any]]) -> dict[str, dict[datetime, tuple]]:
    return {q: {at: counts(p) for at, p in ps.items()} for q, ps in found.items()}


def test_a_roll_up_sums_each_ended_hour_and_reads_the_same(env):
    store = env.store
    complete(store, hour(0) + timedelta(minutes=5), 2, ms=3)
    complete(store, hour(0) + timedelta(minutes=50), 1, ms=400)
    complete(store, hour(0) + timedelta(minutes=20), 1, queue="mail", ms=1)
    complete(store, hour(1) + timedelta(minutes=1), 3, ms=7)
    now = hour(1) + timedelta(minutes=30)
    before = as_counts(hourly(store, now))

    # Hour 0 has ended, hour 1 has not: one row per queue of hour 0.
    assert store.roll_up_stats(now=now, keep=KEEP) == 2
    assert as_counts(hourly(store, now)) == before
    point = hourly(store, now)["default"][hour(0)]
    assert (point.started, point.completed, point.runtime_max_ms) == (3, 3, 400)
    assert point.runtime_total_ms == 3 + 3 + 400
    assert hourly(store, now)["default"][hour(1)].completed == 3

    # Once the minutes are gone, the rolled hour still reads the same; the hour not rolled
    # yet keeps its minutes.
    store.prune_stats(minutes_before=hour(1) + timedelta(minutes=1), hours_before=hour(-48))
    assert as_counts(hourly(store, now)) == before
    minutes = store.stats(None, since=hour(-1), until=now, resolution="minute")
    assert {p.at for p in minutes["default"]} == {hour(1) + timedelta(minutes=1)}
    assert "mail" not in minutes


def test_a_roll_up_again_changes_nothing(env):
    store = env.store
    complete(store, hour(0) + timedelta(minutes=10), 2)
    complete(store, hour(1) + timedelta(minutes=10), 1, queue="mail")
    now = hour(2) + timedelta(minutes=1)
    assert store.roll_up_stats(now=now, keep=KEEP) == 2
    rolled = as_counts(hourly(store, now))
    # A second leader (or the same after a crash) rolls the same hours again: same rows.
    assert store.roll_up_stats(now=now, keep=KEEP) == 0
    assert store.roll_up_stats(now=now + timedelta(minutes=30), keep=KEEP) == 0
    assert as_counts(hourly(store, now)) == rolled
    assert rolled["default"][hour(0)][:2] == (2, 2)
    assert rolled["mail"][hour(1)][:2] == (1, 1)


def test_a_late_write_to_the_last_hour_rolled_is_rolled_again(env):
    store = env.store
    complete(store, hour(0) + timedelta(minutes=59), 1)
    assert store.roll_up_stats(now=hour(1), keep=KEEP) == 1
    # A run that ended in hour 0 reaches the store after the roll-up.
    complete(store, hour(0) + timedelta(minutes=59, seconds=50), 1)
    assert store.roll_up_stats(now=hour(1) + timedelta(minutes=1), keep=KEEP) == 1
    store.prune_stats(minutes_before=hour(1), hours_before=hour(-48))
    assert hourly(store, hour(1))["default"][hour(0)].completed == 2


def test_a_re_roll_after_the_minutes_are_gone_keeps_the_history(env):
    store = env.store
    complete(store, hour(0) + timedelta(minutes=30), 4)
    assert store.roll_up_stats(now=hour(1), keep=KEEP) == 1
    store.prune_stats(minutes_before=hour(3), hours_before=hour(-48))
    # The last hour rolled is summed again at the next roll-up: from no minutes now.
    assert store.roll_up_stats(now=hour(3), keep=KEEP) == 0
    assert hourly(store, hour(3))["default"][hour(0)].completed == 4


def test_no_minute_is_pruned_before_its_hour_is_rolled_up(env):
    store = env.store
    complete(store, hour(0) + timedelta(minutes=30), 1)
    complete(store, hour(1) + timedelta(minutes=30), 1)
    # Nothing rolled yet: the prune keeps every minute whatever its age.
    store.prune_stats(minutes_before=hour(5), hours_before=hour(-48))
    minutes = store.stats(None, since=hour(0), until=hour(5), resolution="minute")
    assert len(minutes["default"]) == 2
    # Hour 0 rolled (the roll-up is at hour 1 plus a minute): its minutes may go, hour 1's
    # stay until it is rolled too.
    assert store.roll_up_stats(now=hour(1) + timedelta(minutes=45), keep=KEEP) == 1
    store.prune_stats(minutes_before=hour(5), hours_before=hour(-48))
    minutes = store.stats(None, since=hour(0), until=hour(5), resolution="minute")
    assert [p.at for p in minutes["default"]] == [hour(1) + timedelta(minutes=30)]
    points = hourly(store, hour(5))["default"]
    assert (points[hour(0)].completed, points[hour(1)].completed) == (1, 1)


def test_minutes_past_their_horizon_go_and_the_hours_stay_for_theirs(env):
    store = env.store
    complete(store, hour(0) + timedelta(minutes=10), 2)
    complete(store, hour(30), 1)
    now = hour(30) + timedelta(minutes=20)
    store.roll_up_stats(now=now, keep=KEEP)
    store.prune_stats(minutes_before=now - timedelta(days=1), hours_before=now - KEEP)
    minutes = store.stats(None, since=hour(0), until=now, resolution="minute")
    assert [p.at for p in minutes["default"]] == [hour(30)]
    found = hourly(store, now)["default"]
    assert (found[hour(0)].completed, found[hour(30)].completed) == (2, 1)

    # 30 days later the hour of hour 0 goes too; a later one stays.
    later = hour(0) + KEEP + timedelta(hours=2)
    store.roll_up_stats(now=later, keep=KEEP)
    store.prune_stats(minutes_before=later - timedelta(days=1), hours_before=later - KEEP)
    found = store.stats(None, since=hour(-1), until=later, resolution="hour")
    assert [p.at for p in found["default"]] == [hour(30)]


def test_a_range_across_rolled_and_unrolled_hours_reads_the_same_before_and_after(env):
    store = env.store
    for n in range(6):
        complete(store, hour(n) + timedelta(minutes=7 * n + 1), n + 1, ms=10 * n)
    complete(store, hour(2) + timedelta(minutes=3), 2, queue="mail")
    now = hour(5) + timedelta(minutes=50)
    # Hours 0-2 rolled and their minutes pruned, hours 3-4 ended but not rolled, 5 running.
    store.roll_up_stats(now=hour(3), keep=KEEP)
    store.prune_stats(minutes_before=hour(27), hours_before=hour(-48))
    before = as_counts(hourly(store, now))
    assert sorted(before["default"]) == [hour(n) for n in range(6)]
    # Hours 3 and 4 (hour 2, summed again from no minutes, writes nothing).
    assert store.roll_up_stats(now=now, keep=KEEP) == 2
    assert as_counts(hourly(store, now)) == before
    assert as_counts(hourly(store, now, queues=["mail"])) == {"mail": before["mail"]}
    assert [before["default"][hour(n)][1] for n in range(6)] == [1, 2, 3, 4, 5, 6]


def test_a_roll_up_the_store_missed_is_caught_up_by_the_next(env):
    """Rounds whose roll-up failed (the store was down) skip no hour: the next roll-up starts
    from the last hour rolled, however long ago, and no prune meanwhile drops a minute of an
    hour not rolled."""
    store = env.store
    complete(store, hour(0) + timedelta(minutes=30), 2)
    env.clock.set(hour(1) + timedelta(minutes=30))
    env.jobs.step()  # the leader's round: rolls hour 0
    complete(store, hour(1) + timedelta(minutes=35), 1)

    calls = []

    def unavailable(self: Any, **kwargs: Any) -> int:
        calls.append(kwargs["now"])
        raise StoreUnavailable("the store is down (test)")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(store), "roll_up_stats", unavailable)
        for n in (2, 3, 4):
            complete(store, hour(n) + timedelta(minutes=10), n)
            env.clock.set(hour(n) + timedelta(minutes=40))
            with pytest.raises(StoreUnavailable):
                env.jobs.step()
    assert calls == [hour(n) + timedelta(minutes=40) for n in (2, 3, 4)]
    # A prune now (however far its horizon) keeps the minutes of the hours not rolled.
    store.prune_stats(minutes_before=hour(30), hours_before=hour(-48))
    minutes = store.stats(None, since=hour(0), until=hour(5), resolution="minute")
    assert [p.at.hour - T0.hour for p in minutes["default"]] == [1, 2, 3, 4]

    # Back: the next round rolls hours 1 to 4, and a prune then keeps every one of them.
    env.clock.set(hour(5) + timedelta(minutes=1))
    env.jobs.step()
    store.prune_stats(minutes_before=hour(30), hours_before=hour(-48))
    assert store.stats(None, since=hour(0), until=hour(5), resolution="minute") == {}
    found = hourly(store, hour(30))["default"]
    assert [found[hour(n)].completed for n in range(5)] == [2, 1, 2, 3, 4]
