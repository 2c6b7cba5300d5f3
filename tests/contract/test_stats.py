"""`Store.stats`: per-queue, per-minute counters of started, completed, retried and dead runs
and the run-time histogram, on every store, kept in the writes that move the jobs.

Times come from the test (the store's `now`/`at` arguments, or the fake clock through the
facade), so each test knows exactly which minute a counter must land in.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from anole_jobs.core import ErrorEntry
from anole_jobs.stores.base import Finish, RunRef
from anole_jobs.stores.stats import RUNTIME_BUCKETS_MS, STATS_KEEP, StatsPoint, bucket_of
from anole_jobs.testing.contract import new_job
from tests.sampleapp.jobs import Work
from tests.support.stats import clear_stats


@pytest.fixture(autouse=True)
def no_earlier_counters(request: Any) -> None:
    """The SQL stores' stat table is no model, so the test database's flush between tests
    leaves other tests' counters in it: start from none."""
    if "env" in request.fixturenames:
        clear_stats(request.getfixturevalue("env"))


T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)  # the start of a minute
LEASE = timedelta(seconds=30)


def run(store: Any, queue: str, now: datetime, n: int = 1) -> list[RunRef]:
    claimed = store.claim(
        queue, kinds=None, limit=n, now=now, lease_until=now + LEASE, worker="test"
    )
    assert len(claimed) == n
    return [c.run for c in claimed]


def error(at: datetime, attempt: int) -> ErrorEntry:
    return ErrorEntry(at=at, attempt=attempt, type="ValueError", message="boom")


def points(store: Any, resolution: str = "minute", queues: Any = None) -> dict[str, Any]:
    found = store.stats(
        queues, since=T0 - timedelta(hours=2), until=T0 + timedelta(hours=2), resolution=resolution
    )
    return {q: {p.at: p for p in ps} for q, ps in found.items()}


def minute(n: int) -> datetime:
    return T0 + timedelta(minutes=n)


def test_each_move_lands_in_its_minute(env):
    store = env.store
    store.insert([new_job(at=T0), new_job(at=T0), new_job(at=T0), new_job(at=T0, queue="mail")])
    a, b, c = run(store, "default", minute(0) + timedelta(seconds=10), 3)
    run(store, "mail", minute(0) + timedelta(seconds=59))
    ended = minute(1) + timedelta(seconds=5)
    assert store.finish(
        [
            Finish(run=a, state="completed", at=ended),
            Finish(run=b, state="completed", at=ended),
            Finish(
                run=c,
                state="retrying",
                at=ended + timedelta(seconds=1),
                scheduled_at=minute(2),
                error=error(ended + timedelta(seconds=1), 1),
            ),
        ]
    ) == [True, True, True]
    store.stage(now=minute(2))
    (again,) = run(store, "default", minute(2) + timedelta(seconds=30))
    store.finish([Finish(run=again, state="dead", at=minute(3), error=error(minute(3), 2))])

    found = points(store)
    default = found["default"]
    assert sorted(default) == [minute(0), minute(1), minute(2), minute(3)]
    assert (default[minute(0)].started, default[minute(0)].completed) == (3, 0)
    first = default[minute(1)]
    assert (first.started, first.completed, first.retried, first.dead) == (0, 2, 1, 0)
    assert first.failed == 1
    assert (default[minute(2)].started, default[minute(2)].retried) == (1, 0)
    assert (default[minute(3)].dead, default[minute(3)].failed) == (1, 1)
    assert found["mail"][minute(0)].started == 1

    # Per hour, the same counts summed into the hour that holds them.
    hourly = points(store, "hour")["default"]
    assert list(hourly) == [T0]
    total = hourly[T0]
    assert (total.started, total.completed, total.retried, total.dead) == (4, 2, 1, 1)

    # A queue filter returns only those queues; an empty one none.
    assert set(points(store, queues=["mail"])) == {"mail"}
    assert points(store, queues=[]) == {}
    assert points(store, queues=["nothing-here"]) == {}


def test_percentiles_come_from_the_run_times(env):
    store = env.store
    runs_ms = [3] * 90 + [150] * 9 + [4000]
    store.insert([new_job(at=T0) for _ in runs_ms])
    refs = run(store, "default", T0, len(runs_ms))
    store.finish(
        [
            Finish(run=ref, state="completed", at=T0 + timedelta(milliseconds=ms))
            for ref, ms in zip(refs, runs_ms, strict=True)
        ]
    )
    (point,) = points(store, "hour")["default"].values()
    assert point.completed == 100
    assert sum(point.runtime) == 100
    assert point.runtime[bucket_of(3)] == 90
    assert point.runtime[bucket_of(150)] == 9
    assert point.runtime_max_ms == 4000
    assert point.runtime_total_ms == 90 * 3 + 9 * 150 + 4000
    # The upper bound of the bucket holding each rank, never past the longest run.
    assert point.percentile(0.50) == 5
    assert point.percentile(0.95) == 200
    assert point.percentile(0.99) == 200
    assert point.percentile(1.0) == 4000
    assert point.mean_ms == pytest.approx(56.2)


def test_a_run_time_is_counted_to_the_millisecond_rounded_up(env):
    store = env.store
    store.insert([new_job(at=T0), new_job(at=T0)])
    start = T0 + timedelta(seconds=1, microseconds=250_000)
    a, b = run(store, "default", start, 2)
    store.finish(
        [
            Finish(run=a, state="completed", at=start + timedelta(milliseconds=100)),
            Finish(run=b, state="completed", at=start + timedelta(microseconds=100_001)),
        ]
    )
    (point,) = points(store)["default"].values()
    assert point.runtime[bucket_of(100)] == 1
    assert point.runtime[bucket_of(101)] == 1
    assert (point.runtime_max_ms, point.runtime_total_ms) == (101, 201)


def test_each_bucket_bound_falls_in_its_own_bucket(env):
    # A run of exactly a bound is in that bound's bucket, one millisecond more in the next one:
    # the SQL computes the bucket its own way, which must agree with `bucket_of` at every edge.
    store = env.store
    runs_ms = [0, *RUNTIME_BUCKETS_MS, *(bound + 1 for bound in RUNTIME_BUCKETS_MS)]
    store.insert([new_job(at=T0) for _ in runs_ms])
    refs = run(store, "default", T0, len(runs_ms))
    store.finish(
        [
            Finish(run=ref, state="completed", at=T0 + timedelta(milliseconds=ms))
            for ref, ms in zip(refs, runs_ms, strict=True)
        ]
    )
    expected = [0] * len(RUNTIME_BUCKETS_MS + (0,))
    for ms in runs_ms:
        expected[bucket_of(ms)] += 1
    merged = StatsPoint(at=T0)
    for point in points(store, "hour")["default"].values():
        merged = merged.plus(point)
    assert list(merged.runtime) == expected
    assert merged.completed == len(runs_ms)
    assert merged.runtime_total_ms == sum(runs_ms)
    assert merged.runtime_max_ms == max(runs_ms)


def test_lapsed_leases_count_as_retried_then_dead(env):
    store = env.store
    store.insert([new_job(at=T0, max_attempts=2)])
    run(store, "default", minute(0))
    assert [r.state for r in store.rescue(now=minute(5))] == ["available"]
    run(store, "default", minute(6))
    assert [r.state for r in store.rescue(now=minute(9))] == ["dead"]
    found = points(store)["default"]
    assert (found[minute(5)].retried, found[minute(5)].dead) == (1, 0)
    assert (found[minute(9)].retried, found[minute(9)].dead) == (0, 1)
    assert found[minute(0)].started == found[minute(6)].started == 1


def test_snoozes_drains_and_admin_actions_count_nothing(env):
    store = env.store
    inserted = store.insert([new_job(at=T0), new_job(at=T0), new_job(at=T0)])
    a, b, c = run(store, "default", minute(0), 3)
    store.finish(
        [
            # a snooze and a drain give their attempt back
            Finish(
                run=a,
                state="scheduled",
                at=minute(1),
                scheduled_at=minute(9),
                give_back_attempt=True,
            ),
            Finish(
                run=b,
                state="available",
                at=minute(1),
                scheduled_at=minute(1),
                give_back_attempt=True,
            ),
        ]
    )
    store.cancel(inserted[2].id, now=minute(1))  # cancelled while running
    store.retry(inserted[2].id, now=minute(1))
    store.delete(inserted[0].id)
    found = points(store)["default"]
    assert list(found) == [minute(0)]
    assert found[minute(0)].started == 3
    assert found[minute(0)].failed == found[minute(0)].completed == 0


def test_counters_outlive_their_jobs_and_are_pruned_by_age(env):
    store = env.store
    store.insert([new_job(at=T0), new_job(at=T0)])
    a, b = run(store, "default", minute(0), 2)
    store.finish([Finish(run=a, state="completed", at=minute(0))])
    store.prune(now=minute(10), horizons={"completed": timedelta(0)})
    assert store.get(a.id) is None  # the job is gone, its counts stay
    assert points(store)["default"][minute(0)].completed == 1

    # Minutes go by whole hours once rolled up (tests/contract/test_stats_history.py): the
    # hour holding the horizon stays whole, the next prune an hour later drops it.
    later = minute(0) + STATS_KEEP + timedelta(minutes=1)
    store.finish([Finish(run=b, state="completed", at=later)])
    store.roll_up_stats(now=later, keep=timedelta(days=30))
    store.prune_stats(minutes_before=later - STATS_KEEP, hours_before=later - STATS_KEEP)
    found = store.stats(None, since=T0 - timedelta(hours=1), until=later, resolution="minute")
    assert [p.at for p in found["default"]] == [minute(0), minute(1) + STATS_KEEP]
    hour_later = later + timedelta(hours=1)
    store.prune_stats(minutes_before=hour_later - STATS_KEEP, hours_before=later - STATS_KEEP)
    found = store.stats(None, since=T0 - timedelta(hours=1), until=later, resolution="minute")
    assert [p.at for p in found["default"]] == [minute(1) + STATS_KEEP]


def test_the_worker_path_counts_through_the_facade(env):
    env.clock.set(T0 + timedelta(seconds=30))
    env.jobs.enqueue_many([Work(), Work(), Work(action="fail")])
    env.jobs.step()
    found = env.store.stats(None, since=T0, until=T0 + timedelta(minutes=1), resolution="minute")
    (point,) = found["default"]
    assert point.at == T0
    assert (point.started, point.completed, point.retried, point.dead) == (3, 2, 1, 0)
    assert point.percentile(0.5) == 0  # the fake clock stands still: every run took 0 ms


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resolution": "week"}, "resolution must be"),
        ({"since": datetime(2030, 1, 1)}, "aware"),  # noqa: DTZ001 - the point: naive
        ({"until": T0 - timedelta(days=1)}, "before since"),
    ],
)
def test_a_malformed_query_is_refused(env, kwargs, message):
    query: dict[str, Any] = {"since": T0, "until": T0 + timedelta(hours=1), "resolution": "hour"}
    query.update(kwargs)
    with pytest.raises(ValueError, match=message):
        env.store.stats(None, **query)


def test_a_percentile_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="between 0 and 1"):
        StatsPoint(at=T0).percentile(0)
    assert StatsPoint(at=T0).percentile(0.5) is None


def test_redis_lua_and_python_name_the_statistics_keys_alike(env):
    if env.name != "redis":
        pytest.skip("the Redis store's key names")
    from anole_jobs.stores.redis.keys import LUA

    store = env.store
    script = LUA + (
        "return {K_stat(29000000, 'a:b'), K_stath(483333, 'q'), K_statm(), K_stathm(),"
        " tostring(STATS_KEEP_SECONDS), tostring(#STAT_BOUNDS), K_sthist(483333, 'q:r'),"
        " K_sthistm()}"
    )
    got = [value.decode() for value in store.client.eval(script, 0, store.keys.prefix)]
    assert got == [
        store.keys.stat(29000000, "a:b"),
        store.keys.stat_hour(483333, "q"),
        store.keys.stat_minutes(),
        store.keys.stat_hours(),
        str(int(STATS_KEEP.total_seconds())),
        str(len(RUNTIME_BUCKETS_MS)),
        store.keys.stat_history(483333, "q:r"),
        store.keys.stat_histories(),
    ]


def test_a_claim_within_a_queues_limits_counts_as_started(env):
    """A limited claim is a claim like any other in the statistics (a store that claims
    within limits by another path must count it too)."""
    from anole_jobs.limits import Limits

    store = env.store
    store.insert([new_job(at=T0), new_job(at=T0), new_job(at=T0)])
    now = minute(0) + timedelta(seconds=20)
    taken = store.claim_limited(
        "default",
        limits=Limits(global_concurrency=2),
        kinds=None,
        limit=10,
        now=now,
        lease_until=now + LEASE,
        worker="test",
    )
    assert len(taken.jobs) == 2 and taken.held
    assert points(store)["default"][minute(0)].started == 2
