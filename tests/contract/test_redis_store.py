"""Redis-specific store tests: script reloading, dropped connections, pub/sub wake-ups, atomicity
under threads, round trips, bounded claims and the key layout. `test_redis_model.py` checks the
store against the memory store (the reference implementation).

Each test uses a KEY_PREFIX of its own and deletes its keys afterwards. Nothing sleeps: threads
are awaited through events and `Subscription.wait` with timeouts.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured
from redis.backoff import NoBackoff
from redis.client import PubSub
from redis.retry import Retry

from anole_jobs.conf import parse
from anole_jobs.core import ListFilter
from anole_jobs.errors import StoreUnavailable
from anole_jobs.stores import redis as redis_package
from anole_jobs.stores.base import Finish, Rescued, RunRef
from anole_jobs.stores.redis import check_redis_eviction, open_redis_store
from anole_jobs.stores.redis import listener as listener_module
from anole_jobs.stores.redis.keys import LUA, parse_time_key, time_key
from anole_jobs.stores.redis.store import RedisStore, _sources, _used_definitions
from anole_jobs.testing.contract import race
from tests.contract.redis_support import (
    LEASE,
    T0,
    URL,
    URL_DB1,
    WAIT,
    claim,
    delete_keys,
    new_job,
)
from tests.support.redis_server import RedisServer, require_redis_server

pytestmark = pytest.mark.needs("redis")


def kill_connection(connection: Any) -> bool:
    """CLIENT KILL one client connection, found by its local address; False when the server
    no longer knows it (a socket it closed before, not reopened yet)."""
    sock = getattr(connection, "_sock", None)
    if sock is None:
        return False
    host, port = sock.getsockname()[:2]
    try:
        redis.Redis.from_url(URL).client_kill(f"{host}:{port}")
    except redis.ResponseError as exc:
        if "No such client" not in str(exc):
            raise
        return False
    return True


def count_commands(store: RedisStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the commands `store`'s client sends from now on (one per round trip)."""
    calls: list[str] = []
    execute = store.client.execute_command

    def counting(*args: Any, **options: Any) -> Any:
        calls.append(args[0])
        return execute(*args, **options)

    monkeypatch.setattr(store.client, "execute_command", counting)
    return calls


@pytest.fixture
def prefix() -> str:
    return f"anole-test:{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def make_store(settings: Any, prefix: str) -> Iterator[Callable[..., RedisStore]]:
    settings.CACHES = {
        **settings.CACHES,
        "jobs": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": URL},
        "jobs1": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": URL_DB1},
    }
    made: list[RedisStore] = []

    def make(alias: str = "jobs", key_prefix: str | None = None) -> RedisStore:
        config = {"STORE": {"redis": alias}, "KEY_PREFIX": key_prefix or prefix, "RUN": "manual"}
        store = open_redis_store(alias, parse(config))
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
    delete_keys(prefix, *{store.keys.prefix for store in made})


@pytest.fixture
def store(make_store: Callable[..., RedisStore]) -> RedisStore:
    return make_store()


# -- configuration ---------------------------------------------------------------------------


def test_open_refuses_a_cache_that_is_not_django_redis(settings: Any) -> None:
    settings.CACHES = {"local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    config = parse({"STORE": "memory"})
    with pytest.raises(ImproperlyConfigured, match="needs django-redis"):
        open_redis_store("local", config)
    with pytest.raises(ImproperlyConfigured, match="not in CACHES"):
        open_redis_store("missing", config)


def test_eviction_check_is_silent_on_noeviction_and_warns_otherwise(
    make_store: Callable[..., RedisStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_store()  # installs the CACHES entry
    policy = redis.Redis.from_url(URL).config_get("maxmemory-policy")["maxmemory-policy"]
    expected = [] if policy == "noeviction" else ["anole_jobs.W002"]
    assert [m.id for m in check_redis_eviction("jobs")] == expected

    class Evicting:
        evalsha = connection_pool = None

        def info(self, section: str) -> dict[str, str]:
            return {"maxmemory_policy": "allkeys-lru"}

    monkeypatch.setattr(redis_package, "_redis_client", lambda alias: Evicting())
    (message,) = check_redis_eviction("jobs")
    assert message.id == "anole_jobs.W002" and "allkeys-lru" in message.msg


def test_an_unreachable_server_raises_store_unavailable(prefix: str) -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, retry=Retry(NoBackoff(), 0))
    with pytest.raises(StoreUnavailable):
        RedisStore(dead, key_prefix=prefix).insert([new_job()])


# -- layout ----------------------------------------------------------------------------------


def test_lua_and_python_build_the_same_key_names(store: RedisStore) -> None:
    keys = store.keys
    script = LUA + (
        "return {K_next_id(), K_job('7'), K_av('a:b', 'c'), K_av('a', 'b:c'), K_ak('q'),"
        " K_waiting(), K_running(), K_fin('dead'), K_st('available'), K_all(), K_queue('q'),"
        " K_kind('k'), K_u('x'), K_counts(), K_leader(), K_cron(), K_paused(), pid(42),"
        " member_id('0042'),"
        " K_av('é', 'k')}"
    )
    got = [value.decode() for value in store.client.eval(script, 0, keys.prefix)]
    assert got == [
        keys.next_id(),
        keys.job(7),
        keys.available("a:b", "c"),
        keys.available("a", "b:c"),
        keys.available_kinds("q"),
        keys.waiting(),
        keys.running(),
        keys.finished("dead"),
        keys.by_state("available"),
        keys.all(),
        keys.by_queue("q"),
        keys.by_kind("k"),
        keys.unique("x"),
        keys.counts(),
        keys.leader(),
        keys.cron(),
        keys.paused(),
        "0000000000000000042",
        "42",
        keys.available("é", "k"),  # Lua's # counts bytes, as len(queue.encode()) does
    ]
    assert keys.available("a:b", "c") != keys.available("a", "b:c")


def test_time_keys_round_trip_and_sort_like_the_times() -> None:
    moments = [
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        T0,
        T0 + timedelta(microseconds=1),
        datetime(2300, 1, 1, 0, 0, 0, 1, tzinfo=UTC),  # past 2**53 microseconds of epoch
        datetime.max.replace(tzinfo=UTC),
    ]
    encoded = [time_key(m) for m in moments]
    assert [parse_time_key(k) for k in encoded] == moments
    assert sorted(encoded) == encoded and len({len(k) for k in encoded}) == 1
    with pytest.raises(ValueError):
        time_key(datetime(2030, 1, 1))  # noqa: DTZ001 - naive on purpose


def test_claim_order_is_exact_to_the_microsecond_and_ties_go_by_id(store: RedisStore) -> None:
    early = datetime(1960, 5, 5, tzinfo=UTC)
    jobs = [
        new_job(scheduled_at=T0 + timedelta(microseconds=1)),
        new_job(scheduled_at=T0, kind="other"),
        new_job(scheduled_at=T0),
        new_job(scheduled_at=early, priority=-5),
        new_job(scheduled_at=T0 + timedelta(days=1), priority=5),
        new_job(scheduled_at=early),
    ]
    ids = [r.id for r in store.insert(jobs)]
    order = [c.record.id for c in claim(store)]
    assert order == [ids[4], ids[5], ids[1], ids[2], ids[0], ids[3]]


def test_ids_beyond_32_bits_keep_their_digits(store: RedisStore) -> None:
    store.client.set(store.keys.next_id(), 10**12)
    (inserted,) = store.insert([new_job()])
    assert inserted.id == 10**12 + 1
    (claimed,) = claim(store)
    assert claimed.run == RunRef(10**12 + 1, 1, 1)
    assert store.finish([Finish(run=claimed.run, state="completed", at=T0)]) == [True]
    assert [r.id for r in store.list(ListFilter(state="completed"))] == [10**12 + 1]


def test_index_entries_of_vanished_job_hashes_are_dropped_not_fatal(store: RedisStore) -> None:
    # What an eviction (maxmemory-policy other than noeviction, W002) would leave behind.
    ids = [r.id for r in store.insert([new_job(), new_job(), new_job(), new_job()])]
    scheduled = store.insert([new_job(state="scheduled", scheduled_at=T0 + LEASE)])[0].id
    running, finished, *_ = claim(store, limit=2)
    store.finish([Finish(run=finished.run, state="completed", at=T0)])
    for job_id in (ids[2], scheduled, running.record.id, finished.record.id):
        store.client.delete(store.keys.job(job_id))
    later = T0 + 2 * LEASE
    assert [c.record.id for c in claim(store, now=later)] == [ids[3]]
    assert store.stage(now=later) == 0
    assert store.rescue(now=later + 2 * LEASE) == [
        Rescued(id=ids[3], kind="k", queue="q", state="available")
    ]
    assert store.prune(now=later, horizons={"completed": timedelta(0)}) == 0
    for key in (store.keys.waiting(), store.keys.finished("completed")):
        assert store.client.zcard(key) == 0
    assert store.client.zcard(store.keys.available("q", "k")) == 1  # ids[3], rescued


# -- scripts and connections -----------------------------------------------------------------


@pytest.fixture
def owned_store(settings: Any, prefix: str) -> Iterator[RedisStore]:
    """A store on a `redis-server` of the test's own: for what must not be done to the shared
    server (SCRIPT FLUSH drops every client's scripts, not just this store's)."""
    require_redis_server()
    server = RedisServer()
    server.start()
    settings.CACHES = {
        **settings.CACHES,
        "owned": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": server.url},
    }
    store = open_redis_store("owned", parse({"STORE": {"redis": "owned"}, "KEY_PREFIX": prefix}))
    yield store
    store.close()
    server.kill()


def test_script_flush_at_run_time_is_survived(
    owned_store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = owned_store
    first = store.insert([new_job()])[0]
    store.client.script_flush()
    calls = count_commands(store, monkeypatch)
    (claimed,) = claim(store)
    assert claimed.record.id == first.id
    assert calls == ["EVALSHA", "SCRIPT LOAD", "EVALSHA"]
    store.client.script_flush()
    assert store.finish([Finish(run=claimed.run, state="completed", at=T0)]) == [True]
    assert store.get(first.id).state == "completed"  # type: ignore[union-attr]


def test_killed_connections_are_replaced_and_calls_recover(store: RedisStore) -> None:
    first = store.insert([new_job()])[0]
    pool = store.client.connection_pool
    connections = [*pool._available_connections, *pool._in_use_connections]
    assert sum(kill_connection(c) for c in connections) >= 1
    assert store.get(first.id) is not None
    second = store.insert([new_job()])[0]
    claimed = claim(store)
    assert [c.record.id for c in claimed] == [first.id, second.id]
    connections = [*pool._available_connections, *pool._in_use_connections]
    # Mid-run: between the claim and the completions.
    assert sum(kill_connection(c) for c in connections) >= 1
    assert store.finish([Finish(run=c.run, state="completed", at=T0) for c in claimed]) == [
        True,
        True,
    ]
    assert store.counts() == {"q": {"completed": 2}}


def test_a_script_gets_only_the_prelude_definitions_it_uses() -> None:
    prelude = (
        "-- about a\n"
        "local function a() return b() end\n"
        "local function b()\n"
        "  return C\n"
        "end\n"
        "local C, D = {x = 1}, 2\n"
        "local E = {unused_field = true} -- names in comments: unused_comment\n"
        "local function unused_field() return 1 end\n"
        "local function unused_comment() end\n"
        "local late  -- declared here, defined below\n"
        "local function uses_late() return late() end\n"
        "late = function() return D end\n"
        "redis.call('PING')\n"
        "local function z() return 'z' end\n"
    )
    kept = _used_definitions(prelude, "return a() + uses_late() + t.z + E -- b() unused_comment")
    assert kept == (
        "-- about a\n"
        "local function a() return b() end\n"
        "local function b()\n"
        "  return C\n"
        "end\n"
        "local C, D = {x = 1}, 2\n"
        "local E = {unused_field = true} -- names in comments: unused_comment\n"
        "local late  -- declared here, defined below\n"
        "local function uses_late() return late() end\n"
        "late = function() return D end\n"
        "redis.call('PING')\n"
    )
    assert _used_definitions(prelude, "return 1") == "redis.call('PING')\n"
    # Every script still has what it uses of the prelude (the contract tests run them all);
    # the single insert no longer builds the workflow or statistics helpers.
    sources = _sources()
    assert "local function wf_settle" in sources["finish"][0]
    assert "local function wf_settle" not in sources["insert_single"][0]
    assert "local function flush" not in sources["insert_single"][0]


def dump_keys(store: RedisStore) -> dict[str, Any]:
    """Every key of `store`'s prefix with its type and content (the prefix cut off the names,
    and written as "P:" in the members that name a key)."""
    client, prefix = store.client, store.keys.prefix
    found: dict[str, Any] = {}
    for raw in client.scan_iter(match=store.keys.pattern(), count=1000):
        key = raw.decode()
        kind = client.type(raw).decode()
        if kind == "hash":
            value: Any = {k.decode(): v.decode() for k, v in client.hgetall(raw).items()}
        elif kind == "zset":
            value = [
                (m.decode().replace(prefix, "P:"), s)
                for m, s in client.zrange(raw, 0, -1, withscores=True)
            ]
        elif kind == "set":
            value = sorted(m.decode() for m in client.smembers(raw))
        else:
            value = client.get(raw).decode()
        found[key[len(prefix) :]] = (kind, value)
    return found


def test_one_job_alone_is_written_as_a_batch_writes_it(
    make_store: Callable[..., RedisStore],
) -> None:
    """`jobs.enqueue` goes through a script of its own (insert_single.lua): every key it
    writes, in every state a job is inserted in and with unique keys, must be what the batch
    script writes for the same jobs, and a held unique key must answer the same."""
    alone = make_store(key_prefix=f"anole-test:{uuid.uuid4().hex[:12]}:")
    batch = make_store(key_prefix=f"anole-test:{uuid.uuid4().hex[:12]}:")
    later = T0 + timedelta(hours=1)
    jobs = [
        new_job(),
        new_job(kind="other", queue="q:2", priority=-7, meta={"m": "é"}, args={"s": "x\ty"}),
        new_job(state="scheduled", scheduled_at=later, priority=3),
        new_job(state="retrying", scheduled_at=later, max_attempts=9),
        new_job(unique_key="live-key"),
        new_job(unique_key="any-key", unique_scope="any", queue="q2"),
    ]
    singles = [alone.insert([job])[0] for job in jobs]
    assert singles == batch.insert(jobs)
    assert [r.id for r in singles] == [1, 2, 3, 4, 5, 6] and all(r.inserted for r in singles)
    assert dump_keys(alone) == dump_keys(batch)
    again = [new_job(unique_key="live-key", args={"n": 2}), new_job(unique_key="any-key")]
    held = [alone.insert([job])[0] for job in again]
    assert held == batch.insert(again)
    assert [(r.id, r.inserted) for r in held] == [(5, False), (6, False)]
    assert dump_keys(alone) == dump_keys(batch)
    # A job that left its key behind: both scripts drop the stale key and insert.
    for store in (alone, batch):
        (claimed,) = claim(store, kinds={"k"}, limit=1)
        store.finish([Finish(run=claimed.run, state="completed", at=T0)])
    for store in (alone, batch):
        store.cancel(5, now=T0)
    assert alone.insert([again[0]]) == batch.insert([again[0], new_job(queue="q3")])[:1]
    assert alone.insert([new_job(queue="q3")])[0].id == 8
    assert dump_keys(alone) == dump_keys(batch)


def test_insert_single_refuses_a_state_a_job_is_not_inserted_in(store: RedisStore) -> None:
    """The script checks the state before it writes anything (a Lua error does not undo the
    writes before it); the Python side refuses it first."""
    args = list(store._new_job_args(new_job()))
    args[2] = "running"
    with pytest.raises(redis.ResponseError, match="cannot be inserted in state running"):
        store._run("insert_single", json.dumps([store.channel, "x", *args]))
    assert dump_keys(store) == {}
    with pytest.raises(ValueError, match="a new job's state must be one of"):
        store.insert([new_job(state="running")])


def test_insert_of_500_jobs_is_one_round_trip(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.insert([new_job()])  # loads the script outside the count
    calls = count_commands(store, monkeypatch)
    results = store.insert([new_job(args={"i": i}) for i in range(500)])
    assert calls == ["EVALSHA"]
    assert len({r.id for r in results}) == 500 and all(r.inserted for r in results)
    calls.clear()
    claimed = claim(store, limit=300)
    assert calls == ["EVALSHA"] and len(claimed) == 300
    calls.clear()
    written = store.finish([Finish(run=c.run, state="completed", at=T0) for c in claimed])
    assert calls == ["EVALSHA"] and written == [True] * 300


def test_claim_never_reads_the_jobs_of_kinds_it_does_not_handle(store: RedisStore) -> None:
    store.insert([new_job(kind="unhandled", priority=10) for _ in range(50)])
    (mine,) = store.insert([new_job(kind="mine")])
    assert store.waiting_kinds(["q"]) == {"q": {"mine", "unhandled"}}
    # Poison the unhandled kind's sorted set: any read of it now fails with WRONGTYPE. A claim
    # for "mine" still works, so its cost cannot depend on how many unhandled jobs wait.
    unhandled = store.keys.available("q", "unhandled")
    store.client.delete(unhandled)
    store.client.set(unhandled, "poison")
    (claimed,) = claim(store, kinds={"mine", "absent"})
    assert claimed.record.id == mine.id
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        claim(store, kinds=None)  # the poison works: a claim of every kind reads that set


# -- concurrency -----------------------------------------------------------------------------


def test_concurrent_claims_from_4_connections_never_double_claim(prefix: str) -> None:
    stores = [RedisStore(redis.Redis.from_url(URL), key_prefix=prefix) for _ in range(4)]
    try:
        stores[0].insert([new_job(kind=f"k{i % 3}", args={"i": i}) for i in range(400)])

        def drain(i: int) -> list[int]:
            got: list[int] = []
            while claimed := claim(stores[i], limit=7):
                got.extend(c.record.id for c in claimed)
            return got

        per_thread = race(4, drain)
        ids = [job_id for got in per_thread for job_id in got]
        assert len(ids) == 400 and len(set(ids)) == 400
        assert all(per_thread), "every thread should have claimed something"
        assert stores[0].counts() == {"q": {"running": 400}}
    finally:
        delete_keys(prefix)


def test_8_threads_inserting_one_unique_job_insert_exactly_one(prefix: str) -> None:
    stores = [RedisStore(redis.Redis.from_url(URL), key_prefix=prefix) for _ in range(8)]
    try:
        results = race(8, lambda i: stores[i].insert([new_job(unique_key="once")])[0])
        assert sum(r.inserted for r in results) == 1
        assert len({r.id for r in results}) == 1
        assert stores[0].counts() == {"q": {"available": 1}}

        ticks = race(
            8, lambda i: stores[i].cron_advance(name="nightly", tick=T0, job=new_job(kind="cron"))
        )
        assert sum(t is not None for t in ticks) == 1
    finally:
        delete_keys(prefix)


# -- wake-ups --------------------------------------------------------------------------------


def test_a_wake_up_crosses_store_instances(make_store: Callable[..., RedisStore]) -> None:
    publisher, listener_store = make_store(), make_store()
    subscription = listener_store.subscribe(["mail", "default"])
    listener = listener_store.listener()
    assert listener is not None and listener.subscribed.wait(WAIT)
    subscription.wait(0)  # the wake-all every (re)subscription sends
    publisher.wake(["mail"])
    assert subscription.wait(WAIT) == {"mail"}
    assert listener_store.listener() is listener  # one listener per store


def test_an_insert_publishes_its_own_wake_up_in_its_script(
    make_store: Callable[..., RedisStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    publisher, watcher = make_store(), make_store()
    subscription = watcher.subscribe(["a", "b"])
    assert watcher.listener().subscribed.wait(WAIT)  # type: ignore[union-attr]
    subscription.wait(0)
    publisher.insert([new_job(queue="a", state="scheduled", scheduled_at=T0 + LEASE)])
    publisher.insert([new_job(queue="b")])  # no wake() call: the script published
    assert subscription.wait(WAIT) == {"b"}  # and the scheduled job in "a" woke nobody

    calls = count_commands(publisher, monkeypatch)
    mine = publisher.wakeups.subscribe(["a"])
    publisher.insert([new_job(queue="a")])
    assert calls == ["EVALSHA"]  # one round trip; nobody calls wake after an insert
    assert mine.wait(0) == {"a"}  # and this process's waiters were woken in-process
    publisher.wake(["a"])  # a maintenance wake-up (stage, rescue) publishes
    assert calls == ["EVALSHA", "PUBLISH"]


def test_an_insert_announces_its_top_priority_to_other_processes(
    make_store: Callable[..., RedisStore],
) -> None:
    publisher, watcher = make_store(), make_store()
    subscription = watcher.subscribe(["a", "b"])
    assert watcher.listener().subscribed.wait(WAIT)  # type: ignore[union-attr]
    subscription.wait(0)
    publisher.insert([new_job(queue="a", priority=p) for p in (3, 60, -5)])
    assert subscription.wait_announced(WAIT) == ({"a"}, 60)
    publisher.insert([new_job(queue="b", priority=-100)])
    assert subscription.wait_announced(WAIT) == ({"b"}, -100)
    publisher.wake(["a"])  # a maintenance wake-up announces nothing
    assert subscription.wait_announced(WAIT) == ({"a"}, None)


@pytest.mark.parametrize(
    "message",
    [
        '{"from":"x","queues":["a"]}',  # an older sender: no priorities
        '{"from":"x","queues":["a"],"top":{"a":"9"}}',
        '{"from":"x","queues":["a"],"top":{"a":true}}',
        '{"from":"x","queues":["a"],"top":{"a":1000}}',
        '{"from":"x","queues":["a"],"top":{"b":5}}',
        '{"from":"x","queues":["a"],"top":[5]}',
    ],
)
def test_a_wake_up_without_a_valid_priority_still_wakes_and_announces_nothing(
    make_store: Callable[..., RedisStore], message: str
) -> None:
    store = make_store()
    listener = listener_module.Listener(store.client, store.channel, store.wakeups, "me")
    subscription = store.wakeups.subscribe(["a"])
    listener._deliver(message)
    assert subscription.wait_announced(0) == ({"a"}, None)


def test_channels_differ_per_prefix_and_per_database(
    make_store: Callable[..., RedisStore], prefix: str
) -> None:
    store = make_store()
    other_prefix = make_store(key_prefix=prefix + "other:")
    other_db = make_store(alias="jobs1")
    assert other_db.db != store.db
    assert len({store.channel, other_prefix.channel, other_db.channel}) == 3

    watcher = make_store()
    subscription = watcher.subscribe(["a", "b", "c"])
    assert watcher.listener().subscribed.wait(WAIT)  # type: ignore[union-attr]
    subscription.wait(0)
    other_prefix.wake(["a"])
    other_db.wake(["b"])
    store.wake(["c"])
    # Redis delivers in publish order on one connection: a leak of "a" or "b" would show first.
    assert subscription.wait(WAIT) == {"c"}


def test_the_listener_reconnects_after_its_connection_is_killed(
    make_store: Callable[..., RedisStore],
) -> None:
    publisher, watcher = make_store(), make_store()
    subscription = watcher.subscribe(["mail"])
    listener = watcher.listener()
    assert listener is not None and listener.subscribed.wait(WAIT)
    subscription.wait(0)
    subscriptions = listener.subscriptions
    assert kill_connection(listener.pubsub.connection)
    # Re-subscribing wakes every waiter (messages sent while deaf are lost).
    assert subscription.wait(WAIT) == {"mail"}
    assert listener.subscriptions == subscriptions + 1
    publisher.wake(["mail"])
    assert subscription.wait(WAIT) == {"mail"}


@pytest.mark.parametrize("answered", [True, False])
def test_a_quiet_listener_pings_and_replaces_a_connection_that_does_not_answer(
    make_store: Callable[..., RedisStore], monkeypatch: pytest.MonkeyPatch, answered: bool
) -> None:
    # The listener gives a PING as many quiet polls to be answered as it waited before sending
    # it. Unanswered, short polls keep the test quick; answered, the PONG must come back within
    # that window even on a loaded machine (3 polls of 10 ms were missed there), so 3 x 200 ms.
    monkeypatch.setattr(listener_module, "POLL_SECONDS", 0.2 if answered else 0.01)
    monkeypatch.setattr(listener_module, "PING_AFTER_POLLS", 3)
    pings: list[int] = []
    second_ping = threading.Event()
    real_ping = PubSub.ping

    def ping(pubsub: PubSub, *args: Any) -> Any:
        subscriptions = watcher.listener().subscriptions  # type: ignore[union-attr]
        if subscriptions:  # (a ping before the SUBSCRIBE is confirmed proves nothing)
            pings.append(subscriptions)
        if len(pings) == 2:
            second_ping.set()
        return real_ping(pubsub, *args) if answered else None

    monkeypatch.setattr(PubSub, "ping", ping)
    watcher = make_store()
    watcher.subscribe(["q"])
    assert second_ping.wait(WAIT)
    # Answered: the PONG counts as traffic, so the second PING comes on the same connection.
    # Unanswered: the listener gave up on the first connection before pinging again.
    assert pings[:2] == ([1, 1] if answered else [1, 2])


def test_close_stops_the_listener(store: RedisStore) -> None:
    store.subscribe(["q"])
    listener = store.listener()
    assert listener is not None and listener.subscribed.wait(WAIT)
    store.close()
    assert not listener._thread.is_alive()
    assert store.listener() is None


def test_a_failed_publish_still_wakes_this_process(
    store: RedisStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    subscription = store.wakeups.subscribe(["q"])

    def broken(*args: Any) -> None:
        raise redis.ConnectionError("down")

    monkeypatch.setattr(store.client, "publish", broken)
    store.wake(["q"])
    assert subscription.wait(0) == {"q"}


# -- leadership ------------------------------------------------------------------------------


def test_lead_uses_set_px_and_the_clock_given(store: RedisStore) -> None:
    assert store.lead(instance="a", now=T0, ttl=LEASE)
    assert 0 < store.client.pttl(store.keys.leader()) <= 2 * LEASE.total_seconds() * 1000
    assert not store.lead(instance="b", now=T0 + LEASE - timedelta(microseconds=1), ttl=LEASE)
    assert store.lead(instance="a", now=T0 + timedelta(seconds=20), ttl=LEASE)  # extends
    assert not store.lead(instance="b", now=T0 + LEASE, ttl=LEASE)
    store.resign(instance="b")  # not the holder: nothing happens
    assert not store.lead(instance="b", now=T0 + LEASE, ttl=LEASE)
    store.resign(instance="a")
    assert store.lead(instance="b", now=T0 + LEASE, ttl=LEASE)


def test_rewrite_steps_keeps_a_step_the_run_records_meanwhile(store: RedisStore) -> None:
    """The store reads a job's steps, rewrites them in this process (`jobs reencrypt` holds
    the keys) and writes them only if they are still those read: a step the job's run records
    in between makes it read again, and that step is kept."""
    now = T0
    (job,) = store.insert([new_job()])
    (taken,) = claim(store)
    assert store.record_step(taken.run, name="a", value='"old"', at=now)
    reads: list[str] = []

    def rewrite(text: str) -> str:
        reads.append(text)
        if len(reads) == 1:  # the run records a step while the rewrite works
            assert store.record_step(taken.run, name="b", value='"old"', at=now)
        return '"new"'

    assert store.rewrite_steps(job.id, rewrite)
    state = store.durable_state(job.id)
    assert state is not None
    assert [(e.name, e.value) for e in state.steps] == [("a", "new"), ("b", "new")]
    assert len(reads) == 3  # "a" once, then "a" and "b" after the retry
