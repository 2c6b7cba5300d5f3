"""Worker presence on every store: records written on a heartbeat, listed until they expire,
removed on a clean stop, and pruned by the leader once expired. Time moves only with the
fake clock."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from anole_jobs import conf
from anole_jobs.stores import open_store
from anole_jobs.stores.workers import HeldJob, QueueSlots, WorkerRecord

TTL = timedelta(seconds=30)


def worker(env, worker_id="host-a:101:abc", *, host="host-a", pid=101, jobs=(), ttl=TTL):
    now = env.clock()
    return WorkerRecord(
        id=worker_id,
        host=host,
        pid=pid,
        version="1.2.3",
        queues=(
            QueueSlots(name="default", busy=len(jobs), total=10),
            QueueSlots(name="mail", busy=0, total=4),
        ),
        started_at=now - timedelta(minutes=5),
        last_seen=now,
        expires_at=now + ttl,
        held=len(jobs),
        jobs=tuple(jobs),
    )


def held(env, job_id, *, running=True):
    return HeldJob(
        id=job_id,
        kind="billing.refund",
        queue="default",
        attempt=2,
        started_at=env.clock() - timedelta(seconds=job_id),
        running=running,
    )


def test_a_recorded_worker_is_listed_with_every_field(env):
    store = env.store
    assert store.workers(now=env.clock()) == []
    record = worker(env, jobs=[held(env, 7), held(env, 9, running=False)])
    store.record_worker(record)
    assert store.workers(now=env.clock()) == [record]
    assert env.jobs.workers() == [record]  # the facade reads with the configured clock


def test_a_heartbeat_replaces_the_record(env):
    store = env.store
    store.record_worker(worker(env, jobs=[held(env, 7)]))
    env.clock.advance(10)
    renewed = worker(env, jobs=[held(env, 8)])
    store.record_worker(renewed)
    (listed,) = store.workers(now=env.clock())
    assert listed == renewed
    assert [job.id for job in listed.jobs] == [8]


def test_workers_are_listed_by_host_then_pid(env):
    store = env.store
    b = worker(env, "host-b:5:x", host="host-b", pid=5)
    a2 = worker(env, "host-a:200:y", host="host-a", pid=200)
    a1 = worker(env, "host-a:30:z", host="host-a", pid=30)
    for record in (b, a2, a1):
        store.record_worker(record)
    assert [w.id for w in store.workers(now=env.clock())] == [a1.id, a2.id, b.id]


def test_an_expired_record_is_hidden_then_pruned_and_a_renewed_one_stays(env):
    store = env.store
    dead = worker(env, "host-a:1:dead", pid=1)
    alive = worker(env, "host-a:2:alive", pid=2)
    store.record_worker(dead)
    store.record_worker(alive)
    env.clock.advance(TTL - timedelta(seconds=1))
    assert len(store.workers(now=env.clock())) == 2  # not yet expired
    store.record_worker(worker(env, "host-a:2:alive", pid=2))  # its heartbeat renews it
    env.clock.advance(timedelta(seconds=1))  # exactly at the dead one's expiry
    assert [w.id for w in store.workers(now=env.clock())] == [alive.id]
    assert store.prune_workers(now=env.clock()) == 1
    assert store.prune_workers(now=env.clock()) == 0
    assert [w.id for w in store.workers(now=env.clock())] == [alive.id]
    # Nothing of the dead one is left: listing it at an earlier time finds it gone.
    assert [w.id for w in store.workers(now=env.clock() - TTL)] == [alive.id]


def test_a_clean_stop_removes_the_record(env):
    store = env.store
    record = worker(env)
    store.record_worker(record)
    assert store.remove_worker(record.id) is True
    assert store.remove_worker(record.id) is False
    assert store.workers(now=env.clock()) == []
    assert store.prune_workers(now=env.clock() + TTL * 10) == 0


def test_the_leaders_step_prunes_expired_records(env):
    store = env.store
    store.record_worker(worker(env))
    env.clock.advance(TTL * 2)
    env.jobs.step()  # leader phase: prune
    assert store.workers(now=env.clock() - TTL * 2) == []


def test_a_worker_is_seen_by_every_instance_on_durable_stores(env):
    env.require("supports_other_processes")
    record = worker(env, jobs=[held(env, 3)])
    env.store.record_worker(record)
    other = open_store(conf.parse(env.settings.ANOLE_JOBS))
    try:
        assert other.workers(now=env.clock()) == [record]
        assert other.remove_worker(record.id) is True
    finally:
        other.close()
    assert env.store.workers(now=env.clock()) == []


def test_records_keep_odd_names_and_large_pids(env):
    record = replace(
        worker(env, "hôst/ü:4294967295:é'\"", host="hôst/ü", pid=4_294_967_295),
        version="0.1.0+local",
    )
    env.store.record_worker(record)
    assert env.store.workers(now=env.clock()) == [record]


def test_redis_keeps_records_under_the_names_keys_py_gives(env):
    if env.name != "redis":
        return  # the other stores have no key names
    from anole_jobs.stores.redis.keys import LUA

    store = env.store
    keys = store.keys
    got = store.client.eval(LUA + "return {K_workers(), K_worker_expiry()}", 0, keys.prefix)
    assert [value.decode() for value in got] == [keys.workers(), keys.worker_expiry()]
    record = worker(env)
    store.record_worker(record)
    assert store.client.hexists(keys.workers(), record.id)
    assert store.client.zscore(keys.worker_expiry(), record.id) is not None
    store.prune_workers(now=env.clock() + TTL)
    assert not store.client.exists(keys.workers(), keys.worker_expiry())  # nothing left over
