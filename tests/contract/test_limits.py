"""Queue limits enforced by the store inside its claim, on every store: `global_concurrency`,
`rate_limit` (a sliding window counted from the claims), each per `partition` of the args,
from the settings or set at runtime. Time moves only with the fake clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from anole_jobs.limits import Limits, RateLimit, RuntimeLimits
from anole_jobs.stores.base import Finish
from tests.sampleapp.jobs import Work

LEASE = timedelta(seconds=30)


def limited(env, *, queue="default", **options):
    """Configure `queue` with limit `options`; the limits as the store receives them."""
    queues = dict(env.settings.ANOLE_JOBS["QUEUES"])
    queues[queue] = {**queues.get(queue, {}), **options}
    env.configure(QUEUES=queues)
    return env.jobs.service.settings.queues[queue].limits


def claim(env, limits, *, limit=10, queue="default"):
    now = env.clock()
    return env.store.claim_limited(
        queue, limits=limits, kinds=None, limit=limit, now=now, lease_until=now + LEASE, worker="w"
    )


def complete(env, claimed):
    assert env.store.finish(
        [Finish(run=c.run, state="completed", at=env.clock()) for c in claimed]
    ) == [True] * len(claimed)


def test_global_concurrency_caps_the_claimed_and_unfinished_jobs(env):
    limits = limited(env, global_concurrency=2)
    ids = [e.id for e in env.jobs.enqueue_many([Work() for _ in range(5)])]
    first = claim(env, limits)
    assert [c.record.id for c in first.jobs] == ids[:2]
    assert first.held and first.reopens_at is None  # only a finish makes room
    again = claim(env, limits)
    assert again.jobs == [] and again.held
    # Held jobs stay available, their attempt untouched.
    for job_id in ids[2:]:
        record = env.jobs.get(job_id)
        assert record.state == "available" and record.attempt == 0
    assert env.store.held_count("default", limits, now=env.clock()) == 3
    complete(env, first.jobs[:1])
    assert [c.record.id for c in claim(env, limits).jobs] == ids[2:3]


def test_a_rate_limit_is_a_sliding_window_counted_from_the_claims(env):
    limits = limited(env, rate_limit="3/m")
    ids = [e.id for e in env.jobs.enqueue_many([Work() for _ in range(8)])]
    start = env.clock()
    first = claim(env, limits, limit=2)
    assert len(first.jobs) == 2 and not first.held
    env.clock.advance(20)
    second = claim(env, limits)
    assert len(second.jobs) == 1 and second.held
    # The window reopens when the oldest claim leaves it: 60 s after the first claim.
    assert second.reopens_at == start + timedelta(seconds=60)
    complete(env, first.jobs + second.jobs)  # finishing does not make room: claims count
    env.clock.set(start + timedelta(seconds=59, microseconds=999_999))
    assert claim(env, limits).jobs == []
    env.clock.set(start + timedelta(seconds=60))
    third = claim(env, limits)
    assert len(third.jobs) == 2  # the two claims of `start` left the window; 20 s's stays
    assert third.reopens_at == start + timedelta(seconds=80)
    assert [c.record.id for c in first.jobs + second.jobs + third.jobs] == ids[:5]


def test_a_job_given_back_and_claimed_again_counts_twice_in_the_rate_window(env):
    # A job given back (a drain, or a second signal that stopped its handler) may already
    # have called what the rate protects, so its claim stays in the window, and the next
    # claim of the same job, at the same instant, is a claim of its own.
    limits = limited(env, rate_limit=(2, timedelta(seconds=1)))
    (only,) = env.jobs.enqueue_many([Work()])
    first = claim(env, limits)
    assert [c.record.id for c in first.jobs] == [only.id]
    now = env.clock()
    assert env.store.finish(
        [
            Finish(
                run=first.jobs[0].run,
                state="available",
                at=now,
                scheduled_at=now,
                give_back_attempt=True,
            )
        ]
    ) == [True]
    again = claim(env, limits)
    assert [c.record.id for c in again.jobs] == [only.id]
    env.jobs.enqueue_many([Work()])
    third = claim(env, limits)
    assert third.jobs == [] and third.held
    assert third.reopens_at == now + timedelta(seconds=1)


def test_a_pair_rate_limit_and_a_concurrency_hold_together(env):
    limits = limited(env, global_concurrency=1, rate_limit=(2, timedelta(seconds=10)))
    env.jobs.enqueue_many([Work() for _ in range(4)])
    one = claim(env, limits)
    assert len(one.jobs) == 1 and one.held and one.reopens_at is None
    complete(env, one.jobs)
    two = claim(env, limits)
    assert len(two.jobs) == 1
    complete(env, two.jobs)
    held = claim(env, limits)
    assert held.jobs == [] and held.reopens_at == env.clock() + timedelta(seconds=10)


def test_limits_hold_per_partition_and_other_partitions_go_on(env):
    limits = limited(env, global_concurrency=1, partition="tag")
    tags = ["a", "a", "b", "a", "c", "b"]
    ids = [e.id for e in env.jobs.enqueue_many([Work(tag=t) for t in tags])]
    first = claim(env, limits)
    # One of each customer, in claim order; the rest of "a" and "b" stay held.
    assert [c.record.id for c in first.jobs] == [ids[0], ids[2], ids[4]]
    assert first.held
    assert env.store.held_count("default", limits, now=env.clock()) == 3
    complete(env, [c for c in first.jobs if c.record.args["tag"] == "b"])
    assert [c.record.id for c in claim(env, limits).jobs] == [ids[5]]


def test_a_partition_of_several_fields_and_missing_fields(env):
    limits = limited(env, global_concurrency=1, partition=["tag", "action"])
    jobs = [Work(tag="a"), Work(tag="a", action="fail"), Work(tag="a"), Work(tag="b")]
    ids = [e.id for e in env.jobs.enqueue_many(jobs)]
    assert [c.record.id for c in claim(env, limits).jobs] == [ids[0], ids[1], ids[3]]


def test_limits_set_at_runtime_replace_the_settings_and_none_returns_to_them(env):
    limits = limited(env, global_concurrency=1)
    env.jobs.enqueue_many([Work() for _ in range(6)])
    env.store.set_limits("default", RuntimeLimits(global_concurrency=3))
    assert env.store.runtime_limits() == {"default": RuntimeLimits(global_concurrency=3)}
    assert len(claim(env, limits).jobs) == 3
    env.store.set_limits("default", RuntimeLimits())
    assert env.store.runtime_limits() == {}
    assert claim(env, limits).jobs == []  # back to 1, and 3 still run
    # A queue with no limits in its settings gets them at runtime too.
    rate = RateLimit(1, timedelta(seconds=5))
    env.store.set_limits("mail", RuntimeLimits(rate_limit=rate))
    env.jobs.enqueue_many([Work() for _ in range(2)], queue="mail")
    plain = Limits()
    assert len(claim(env, plain, queue="mail").jobs) == 1
    assert claim(env, plain, queue="mail").jobs == []
    assert env.store.runtime_limits()["mail"] == RuntimeLimits(rate_limit=rate)


def test_without_limits_a_limited_claim_is_a_plain_claim(env):
    ids = [e.id for e in env.jobs.enqueue_many([Work() for _ in range(3)])]
    taken = claim(env, Limits(), limit=2)
    assert [c.record.id for c in taken.jobs] == ids[:2] and not taken.held
    assert env.store.held_count("default", Limits(), now=env.clock()) == 0


def test_a_paused_queue_yields_nothing_to_a_limited_claim(env):
    limits = limited(env, global_concurrency=5)
    env.jobs.enqueue(Work())
    env.store.pause("default", now=env.clock())
    assert claim(env, limits).jobs == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"global_concurrency": 0}, "positive int"),
        ({"global_concurrency": True}, "positive int"),
        ({"rate_limit": "10/d"}, '"N/s", "N/m" or "N/h"'),
        ({"rate_limit": "0/s"}, "at least 1"),
        ({"rate_limit": (5, 0)}, "positive"),
        ({"rate_limit": (5,)}, "pair"),
        ({"partition": []}, "non-empty list"),
        ({"partition": ["a", "a"]}, "twice"),
    ],
)
def test_bad_limits_are_system_check_errors(options, message):
    from anole_jobs import conf

    problems = conf.problems({"QUEUES": {"default": options}})
    assert [p.id for p in problems] == ["anole_jobs.E016"]
    assert message in problems[0].message and "QUEUES['default']" in problems[0].message


def test_a_step_runs_only_what_the_limits_allow_and_the_rest_waits(env):
    limited(env, rate_limit="2/m")
    ids = [e.id for e in env.jobs.enqueue_many([Work() for _ in range(5)])]
    assert len(env.jobs.step().runs) == 2
    assert len(env.jobs.step().runs) == 0
    assert [env.jobs.get(i).state for i in ids].count("available") == 3
    env.clock.advance(60)
    assert len(env.jobs.step().runs) == 2


def test_a_claimer_whose_clock_read_earlier_still_counts_every_claim_of_its_window(env):
    # Two workers: one read its clock at 11.0 s but takes its turn after one that read
    # 11.4 s (which found nothing to claim, and no longer counts the claim made at 10.3 s).
    limits = limited(env, rate_limit=(1, timedelta(seconds=1)))
    start = env.clock()
    env.jobs.enqueue(Work())
    env.clock.set(start + timedelta(seconds=10.3))
    assert len(claim(env, limits).jobs) == 1
    env.clock.set(start + timedelta(seconds=11.4))
    assert claim(env, limits).jobs == []  # nothing waits
    env.jobs.enqueue(Work())
    env.clock.set(start + timedelta(seconds=11.0))
    late = claim(env, limits)
    assert late.jobs == [] and late.held  # 10.3 s is in its window: the rate is used
    assert late.reopens_at == start + timedelta(seconds=11.3)
