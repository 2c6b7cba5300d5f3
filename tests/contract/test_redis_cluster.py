"""The Redis store on a Redis Cluster: what the shared contract suite (run on the
``redis_cluster`` store too) does not show by itself. Queues land on different masters, each
queue's keys stay in its slot, ids carry their slot and grow in enqueue order, what spans
queues is merged, and what cannot work on a cluster is refused with a clear error.

The cluster is the session's local three-master cluster (tests/support/redis_cluster.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis
from django.core import checks

from anole_jobs import InvalidJob, NewQueue, Workflow
from anole_jobs.errors import ConfigurationError
from anole_jobs.stores.redis.cluster import RedisClusterStore
from anole_jobs.stores.redis.keys import LUA, SLOTS, key_slot, queue_slot, slot_tag
from tests.sampleapp.jobs import Work
from tests.sampleapp.workflow_jobs import Step

pytestmark = pytest.mark.parametrize("env", ["redis_cluster"], indirect=True)


def node_client(cluster: Any, port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port)


def queues_on_distinct_masters(cluster: Any, n: int = 3) -> dict[str, int]:
    """`n` queue names whose slots three different masters serve: {queue: port}."""
    chosen: dict[str, int] = {}
    for i in range(1000):
        queue = f"q{i}"
        port = cluster.node_of_slot(queue_slot(queue))
        if port not in chosen.values():
            chosen[queue] = port
        if len(chosen) == n:
            return chosen
    raise AssertionError("no queue names found for every master")


def test_queues_spread_over_the_masters_and_each_stays_in_its_slot(env, local_redis_cluster):
    placed = queues_on_distinct_masters(local_redis_cluster)
    assert len(set(placed.values())) == 3
    enqueued = [(q, env.jobs.enqueue(Work(tag=q), queue=NewQueue(q)).id) for q in placed]
    enqueued += [(q, env.jobs.enqueue(Work(tag=q), queue=NewQueue(q)).id) for q in placed]
    store = env.store
    for queue, job_id in enqueued:
        assert job_id % SLOTS == queue_slot(queue)
        node = node_client(local_redis_cluster, placed[queue])
        # The job hash and the queue's index live on the master of the queue's slot.
        assert node.exists(store.base_keys.for_queue(queue).job(job_id)) == 1
        assert node.zcard(store.base_keys.for_queue(queue).by_queue(queue)) == 2
    # Ids grow in enqueue order across the slots, so the newest-first listing is that order.
    ids = [job_id for _, job_id in enqueued]
    assert ids == sorted(ids)
    assert [r.id for r in env.jobs.list()] == ids[::-1]
    assert env.jobs.counts() == {queue: {"available": 2} for queue in placed}
    report = env.jobs.step()  # manual mode runs every queue of QUEUES; these are not in it
    assert report.runs == []
    env.configure(QUEUES={queue: {} for queue in placed})
    outcomes = env.jobs.step().outcomes()
    assert outcomes == dict.fromkeys(ids, "completed")
    assert env.jobs.counts() == {queue: {"completed": 2} for queue in placed}


def test_maintenance_runs_in_every_slot(env, local_redis_cluster):
    placed = queues_on_distinct_masters(local_redis_cluster)
    env.configure(QUEUES={queue: {} for queue in placed})
    later = [env.jobs.enqueue(Work(), queue=q, delay=timedelta(seconds=30)) for q in placed]
    assert env.jobs.step().runs == []
    env.clock.advance(timedelta(seconds=31))
    report = env.jobs.step()
    assert report.staged == 3
    assert report.outcomes() == {job.id: "completed" for job in later}


def test_a_workflow_across_slots_is_refused_with_the_way_out(env, local_redis_cluster):
    placed = list(queues_on_distinct_masters(local_redis_cluster, 2))
    wf = Workflow("spread")
    a = wf.add(Step("a", "ok"), name="a", queue=NewQueue(placed[0]))
    wf.add(Step("b", "ok"), name="b", after=[a], queue=NewQueue(placed[1]))
    with pytest.raises(InvalidJob, match="one hash slot") as caught:
        env.jobs.enqueue_workflow(wf)
    assert "hash tag" in str(caught.value)
    assert placed[0] in str(caught.value) and placed[1] in str(caught.value)
    assert env.jobs.list() == []  # nothing was written


def test_a_workflow_over_queues_with_one_hash_tag_runs(env):
    queues = ["{flow}import", "{flow}mail"]
    assert queue_slot(queues[0]) == queue_slot(queues[1]) == key_slot("flow")
    env.configure(QUEUES={queue: {} for queue in queues})
    wf = Workflow("tagged")
    a = wf.add(Step("a", "ok"), name="a", queue=queues[0])
    wf.add(Step("b", "ok"), name="b", after=[a], queue=queues[1])
    created = env.jobs.enqueue_workflow(wf)
    env.jobs.step()
    env.jobs.step()
    assert {n: env.jobs.get(i).state for n, i in created.jobs.items()} == {
        "a": "completed",
        "b": "completed",
    }
    record = env.jobs.workflow(created.id)
    assert record is not None and [record.steps[n].queue for n in "ab"] == queues


def test_lua_and_python_agree_on_the_cluster_prefix(env):
    store = env.store
    keys = store.base_keys.for_queue("mail")
    script = LUA + "return {P, tostring(ID_NEXT), tostring(CLUSTER), ID_STRIDE, K_known_queues()}"
    got = store.client.eval(script, 1, keys.prefix, f"{keys.prefix}\0{5 * SLOTS + 7}")
    assert [v.decode() if isinstance(v, bytes) else v for v in got] == [
        keys.prefix,
        str(5 * SLOTS + 7),
        "true",
        SLOTS,
        keys.known_queues(),
    ]


def test_key_slot_and_slot_tags_agree_with_the_server(env, local_redis_cluster):
    node = node_client(local_redis_cluster, local_redis_cluster.ports[0])
    for name in ["mail", "{a}b", "a{b}{c}", "{}x", "x{}", "é", "{flow}import", "a}{b"]:
        assert key_slot(name) == node.cluster("keyslot", name), name
    for slot in [0, 1, 5461, 5462, 10922, 10923, SLOTS - 1, queue_slot("mail")]:
        assert node.cluster("keyslot", f"x{{{slot_tag(slot)}}}y") == slot
    with pytest.raises(ValueError, match="0..16383"):
        slot_tag(SLOTS)


def test_the_global_keys_have_a_slot_of_their_own(env):
    store = env.store
    assert store.keys.prefix == store.base_keys.cluster_global().prefix
    store.lead(instance="a", now=env.clock(), ttl=timedelta(seconds=5))
    assert store.client.get(store.global_keys.leader()).decode().startswith("a|")


def test_scripts_come_back_after_a_script_flush_on_every_node(env, local_redis_cluster):
    job = env.jobs.enqueue(Work())
    for port in local_redis_cluster.ports:
        node_client(local_redis_cluster, port).script_flush()
    assert env.jobs.step().outcomes() == {job.id: "completed"}


def test_a_key_prefix_with_a_brace_is_refused(env, settings):
    with pytest.raises(ConfigurationError, match="hash tag"):
        RedisClusterStore(env.store.client, key_prefix="app{x}:")
    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "KEY_PREFIX": "app{x}:"}
    from anole_jobs.checks import check_settings

    found = [m for m in check_settings() if m.id == "anole_jobs.E017"]
    assert len(found) == 1 and "brace" in found[0].msg
    assert isinstance(found[0], checks.Error)


def test_a_cluster_database_other_than_0_is_refused(env, settings):
    from anole_jobs.checks import check_settings

    cache = settings.CACHES["jobs_cluster"]
    settings.CACHES = {
        **settings.CACHES,
        "jobs_cluster": {**cache, "LOCATION": cache["LOCATION"].rsplit("/", 1)[0] + "/2"},
    }
    found = [m for m in check_settings() if m.id == "anole_jobs.E017"]
    assert len(found) == 1 and "database 2" in found[0].msg


def test_the_eviction_check_reads_every_master(env, local_redis_cluster, settings):
    from anole_jobs.stores.redis import check_redis_eviction

    assert check_redis_eviction("jobs_cluster") == []
    evicting = node_client(local_redis_cluster, local_redis_cluster.ports[2])
    evicting.config_set("maxmemory-policy", "allkeys-lru")
    try:
        (warning,) = check_redis_eviction("jobs_cluster")
    finally:
        evicting.config_set("maxmemory-policy", "noeviction")
    assert warning.id == "anole_jobs.W002"
    assert f"127.0.0.1:{local_redis_cluster.ports[2]} ('allkeys-lru')" in warning.msg


def test_a_lost_connection_names_the_cluster(env, local_redis_cluster):
    from anole_jobs.stores.redis.cluster import LazyRedisCluster
    from anole_jobs.stores.redis.unavailable import address

    # Before the first command a client knows the node it starts from (the store's client is
    # shared within the process, so a fresh one shows it); then every master.
    start = f"127.0.0.1:{local_redis_cluster.ports[0]}"
    assert address(LazyRedisCluster(f"redis://{start}/0", {})) == f"the Redis Cluster at {start}"
    env.jobs.counts()
    text = address(env.store.client)
    assert text.startswith("the Redis Cluster at ")
    assert all(f"127.0.0.1:{port}" in text for port in local_redis_cluster.ports)


def test_opening_does_not_connect_and_a_cluster_down_is_store_unavailable(env, settings):
    from anole_jobs import conf
    from anole_jobs.errors import StoreUnavailable
    from anole_jobs.stores import open_store
    from tests.support.network import free_port

    port = free_port()  # nothing listens there
    settings.CACHES = {
        **settings.CACHES,
        "cluster_down": {
            **settings.CACHES["jobs_cluster"],
            "LOCATION": f"redis://127.0.0.1:{port}/0",
        },
    }
    store = open_store(conf.parse({"STORE": {"redis": "cluster_down"}, "KEY_PREFIX": "down:"}))
    assert isinstance(store, RedisClusterStore)
    with pytest.raises(StoreUnavailable) as caught:
        store.counts()
    assert f"the Redis Cluster at 127.0.0.1:{port}" in str(caught.value)


def test_a_slot_the_cluster_cannot_serve_is_store_unavailable(env, monkeypatch):
    from redis.exceptions import ClusterDownError, SlotNotCoveredError

    from anole_jobs.errors import StoreUnavailable

    env.jobs.enqueue(Work())
    client = env.store.client.client()

    def down(*args, **kwargs):
        raise ClusterDownError("CLUSTERDOWN The cluster is down")

    monkeypatch.setattr(client, "evalsha", down)
    with pytest.raises(
        StoreUnavailable, match="^enqueue failed: .*; the job was not stored"
    ) as caught:
        env.jobs.enqueue(Work())
    assert "CLUSTERDOWN: the Redis Cluster does not serve every slot" in str(caught.value)

    monkeypatch.undo()

    def uncovered(*args, **kwargs):
        raise SlotNotCoveredError("slot 5 is not covered")

    monkeypatch.setattr(client, "hgetall", uncovered)
    job = env.jobs.list()[0]
    with pytest.raises(StoreUnavailable, match="HGETALL"):
        env.store.get(job.id)


def test_staging_takes_the_slots_in_turn(env, local_redis_cluster):
    first, second = list(queues_on_distinct_masters(local_redis_cluster, 2))
    for queue in (first, second):
        for _ in range(2):
            env.jobs.enqueue(Work(), queue=NewQueue(queue), delay=timedelta(seconds=5))
    env.clock.advance(timedelta(seconds=6))
    now = env.clock()
    # A limit of one job per call: the second call starts at the other slot.
    assert env.store.stage(now=now, limit=1) + env.store.stage(now=now, limit=1) == 2
    counts = env.jobs.counts()
    assert counts[first].get("available") == counts[second].get("available") == 1


def test_a_unique_key_holds_within_one_slot(env, local_redis_cluster):
    from anole_jobs import Unique

    first, second = list(queues_on_distinct_masters(local_redis_cluster, 2))
    unique = Unique(key="report-42")
    one = env.jobs.enqueue(Work(), queue=NewQueue(first), unique=unique)
    again = env.jobs.enqueue(Work(), queue=NewQueue(first), unique=unique)
    assert (one.inserted, again.inserted, again.id) == (True, False, one.id)
    # Another slot does not see the key (docs/deployment.md: a unique key holds within a slot).
    elsewhere = env.jobs.enqueue(Work(), queue=NewQueue(second), unique=unique)
    assert elsewhere.inserted and elsewhere.id != one.id
    # Queues under one hash tag share a slot, so a key holds across them.
    tagged = env.jobs.enqueue(Work(), queue=NewQueue("{t}a"), unique=Unique(key="k"))
    assert not env.jobs.enqueue(Work(), queue=NewQueue("{t}b"), unique=Unique(key="k")).inserted
    assert tagged.inserted


def test_cache_objects_of_one_cluster_share_one_client(env, settings):
    """Django makes a cache object per thread and per settings change; each must not open a
    cluster client of its own (connections to every master, never closed)."""
    from anole_jobs.stores.redis.cluster import ClusterConnectionFactory

    # Options of this test's own (a socket timeout no other cache has), so closing its
    # client below leaves the one the store uses alone.
    options = {**settings.CACHES["jobs_cluster"].get("OPTIONS", {}), "SOCKET_TIMEOUT": 7.25}
    location = settings.CACHES["jobs_cluster"]["LOCATION"]
    first = ClusterConnectionFactory(options).connect(location)
    assert ClusterConnectionFactory(dict(options)).connect(location) is first
    ClusterConnectionFactory(options).disconnect(first)
    assert ClusterConnectionFactory(options).connect(location) is not first


NODES = (
    "e7d1 127.0.0.1:7000@17000 master,fail - 1700 1699 1 disconnected 0-5460\n"
    "a1b2 127.0.0.1:7001@17001 myself,master - 0 0 2 connected 5461-10922\n"
    "c3d4 127.0.0.1:7002@17002 master - 0 1700 3 connected 10923-16383\n"
    "f5f6 127.0.0.1:7003@17003 slave e7d1 0 1700 1 connected\n"
)


def test_an_error_names_the_slots_without_a_master_and_the_node_that_failed(env):
    from redis.exceptions import ConnectionError as RedisConnectionError

    from anole_jobs.stores.redis.unavailable import masterless_slots, what_happened

    assert masterless_slots(NODES) == "slots 0-5460 have no master (127.0.0.1:7000 failed)"
    healthy = NODES.replace("master,fail", "master").replace("disconnected", "connected")
    assert masterless_slots(healthy) == ""
    refused = RedisConnectionError("Error 111 connecting to 127.0.0.1:7000. Connection refused.")
    refused.__cause__ = ConnectionRefusedError()
    happened, never_sent = what_happened(refused, "the Redis Cluster at 127.0.0.1:7000, 7001")
    assert happened == "connection refused to 127.0.0.1:7000 (a node of the Redis Cluster)"
    assert never_sent


def test_a_healthy_cluster_reports_no_slot_without_a_master(env, local_redis_cluster):
    from anole_jobs.stores.redis.unavailable import cluster_state

    env.jobs.counts()  # connected
    assert cluster_state(env.store.client) == ""
