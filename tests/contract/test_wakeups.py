"""Wake-ups, on every store: the store's own write wakes the waiters of its queue, once the
write is committed, and a rolled-back write wakes nobody (stores.base, "Wake-ups").

Waiters are subscribed to the store's in-process hub; `wait(0)` reads what reached them so far
without blocking.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction

from tests.sampleapp.jobs import Work


class Boom(Exception):
    pass


def waiter(env):
    return env.store.wakeups.subscribe(["default", "mail"])


def test_an_enqueue_wakes_its_queue_at_once(env):
    subscription = waiter(env)
    env.jobs.enqueue(Work())
    assert subscription.wait(0) == {"default"}
    env.jobs.enqueue(Work(), delay=60)  # scheduled: nothing to claim yet
    env.jobs.enqueue_many([Work(), Work()], queue="mail")
    assert subscription.wait(0) == {"mail"}


def test_a_retry_wakes_its_queue(env):
    job = env.jobs.enqueue(Work(), delay=60)
    subscription = waiter(env)
    assert env.jobs.retry(job.id).state == "available"
    assert subscription.wait(0) == {"default"}


def wakes_at_commit(env, on_commit):
    subscription = waiter(env)
    with transaction.atomic(using=env.alias or "default"):
        env.jobs.enqueue(Work(), on_commit=on_commit)
        assert subscription.wait(0) == set()  # invisible to workers until the commit
    assert subscription.wait(0) == {"default"}


def wakes_nobody_on_rollback(env, on_commit):
    before = env.jobs.counts()
    subscription = waiter(env)
    with pytest.raises(Boom), transaction.atomic(using=env.alias or "default"):
        env.jobs.enqueue(Work(), on_commit=on_commit)
        env.jobs.enqueue_many([Work()], queue="mail", on_commit=on_commit)
        raise Boom
    assert subscription.wait(0) == set()
    assert env.jobs.counts() == before


@pytest.mark.parametrize("on_commit", [False, True])
def test_an_enqueue_inside_atomic_wakes_at_commit_on_sql_stores(env, on_commit):
    env.require("supports_transactions")
    wakes_at_commit(env, on_commit)


@pytest.mark.parametrize("on_commit", [False, True])
def test_a_rolled_back_enqueue_wakes_nobody_on_sql_stores(env, on_commit):
    env.require("supports_transactions")
    wakes_nobody_on_rollback(env, on_commit)


@pytest.mark.django_db(databases=["default"], transaction=True)
def test_on_commit_wakes_at_commit_or_never_on_other_stores(env):
    env.require("supports_transactions", absent=True)
    # Without on_commit the job is stored, and wakes, at once: a rollback cannot undo it.
    wakes_at_commit(env, on_commit=True)
    wakes_nobody_on_rollback(env, on_commit=True)


def test_a_cron_tick_wakes_its_queue(env):
    env.configure(
        CRON=[{"name": "every-minute", "schedule": "* * * * *", "job": "tests.sampleapp.jobs.Work"}]
    )
    env.jobs.step()  # first sighting: records the tick, enqueues nothing
    subscription = waiter(env)
    env.clock.advance(timedelta(minutes=1))
    env.jobs.step()
    assert "default" in subscription.wait(0)


def test_an_enqueue_announces_the_highest_priority_it_made_available(env):
    subscription = waiter(env)
    env.jobs.enqueue(Work(), priority=7)
    assert subscription.wait_announced(0) == ({"default"}, 7)
    env.jobs.enqueue_many([Work(), Work()], queue="mail", priority=-3)
    env.jobs.enqueue_many([Work()], queue="mail", priority=40)
    env.jobs.enqueue(Work(), queue="mail", priority=90, delay=60)  # scheduled: not announced
    assert subscription.wait_announced(0) == ({"mail"}, 40)
    env.jobs.retry(env.jobs.enqueue(Work(), delay=60).id)  # a retry wakes, announcing nothing
    assert subscription.wait_announced(0) == ({"default"}, None)


def test_a_waiter_hears_only_the_priorities_of_its_own_queues(env):
    subscription = env.store.wakeups.subscribe(["mail"])
    env.jobs.enqueue(Work(), priority=100)
    env.jobs.enqueue(Work(), queue="mail", priority=1)
    assert subscription.wait_announced(0) == ({"mail"}, 1)
