"""PostgreSQL's dedicated sessions: LISTEN/NOTIFY wake-ups across stores (processes), and
reconnection after the listener's backend is terminated."""

from __future__ import annotations

import pytest
from django.db import connections

from anole_jobs.conf import parse
from anole_jobs.stores.database import open_database_store

pytestmark = [
    pytest.mark.needs("postgres"),
    pytest.mark.django_db(databases=["default", "pg"], transaction=True),
]


def two_stores():
    settings = parse({"STORE": {"database": "pg"}, "RUN": "manual"})
    return open_database_store("pg", settings), open_database_store("pg", settings)


def test_a_notify_from_another_store_wakes_a_subscriber():
    listening, sending = two_stores()
    try:
        subscription = listening.subscribe(["mail"])
        assert listening._listener.wait_connected(10)
        subscription.wait(0)  # the reconnect wake-up every listener gives on connecting
        sending.send_notify(["default"])
        sending.send_notify(["mail"])
        assert subscription.wait(10) == {"mail"}
    finally:
        listening.close()


def test_an_enqueue_above_the_default_priority_announces_it_to_other_processes(settings):
    from anole_jobs import jobs
    from tests.sampleapp.jobs import Work

    settings.ANOLE_JOBS = {"STORE": {"database": "pg"}, "RUN": "manual"}
    listening, _ = two_stores()
    try:
        subscription = listening.subscribe(["default"])
        assert listening._listener.wait_connected(10)
        subscription.wait(0)
        jobs.enqueue(Work(), priority=80)
        # The plain wake-up and the one announcing the priority come as two notifications.
        woken, top = subscription.wait_announced(10)
        if top is None:
            woken, top = subscription.wait_announced(10)
        assert (woken, top) == ({"default"}, 80)
        jobs.enqueue(Work())  # the default priority: only the plain wake-up, as before
        assert subscription.wait_announced(10) == ({"default"}, None)
        assert subscription.wait_announced(0.3) == (set(), None)
    finally:
        listening.close()
        jobs.reset()


@pytest.mark.parametrize(
    ("payload", "woken", "top"),
    [
        ("mail", {"mail"}, None),
        ('{"queue":"mail","priority":5}', {"mail"}, 5),
        ('{"queue":"mail","priority":500}', set(), None),  # not a priority: a queue's name
        ('{"queue":"mail"', set(), None),
        ("", {"mail", "default"}, None),
    ],
)
def test_a_notification_payload_wakes_its_queue_and_announces_a_valid_priority(payload, woken, top):
    from anole_jobs.stores.wakeups import WakeupHub, deliver_payload

    hub = WakeupHub()
    subscription = hub.subscribe(["mail", "default"])
    deliver_payload(hub, payload)
    assert subscription.wait_announced(0) == (woken, top)


def test_the_listener_reconnects_after_its_backend_is_terminated():
    listening, sending = two_stores()
    try:
        subscription = listening.subscribe(["default"])
        listener = listening._listener
        assert listener.wait_connected(10)
        subscription.wait(0)
        pid = listener._session.info.backend_pid
        with connections["pg"].cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        # On reconnecting it wakes everyone once (work may have been missed), then listens.
        assert subscription.wait(15) == {"default"}
        assert listener.wait_connected(15)
        assert listener._session.info.backend_pid != pid
        sending.send_notify(["default"])
        assert subscription.wait(10) == {"default"}
    finally:
        listening.close()


def test_an_enqueue_notifies_only_when_its_transaction_commits(settings):
    from django.db import transaction

    from anole_jobs import jobs
    from tests.sampleapp.jobs import Work

    settings.ANOLE_JOBS = {"STORE": {"database": "pg"}, "RUN": "manual"}
    listening, _ = two_stores()
    try:
        subscription = listening.subscribe(["default"])
        assert listening._listener.wait_connected(10)
        subscription.wait(0)
        with transaction.atomic(using="pg"):
            jobs.enqueue(Work())
            assert subscription.wait(0.3) == set()
        assert subscription.wait(10) == {"default"}
    finally:
        listening.close()
        jobs.reset()


def test_a_claim_relaxes_its_own_commit_and_nothing_else():
    """A claim outside the caller's transaction commits without waiting for the WAL flush, in
    the same statement (no extra round trip) and for that transaction only: the session's
    later writes, and a claim inside the caller's transaction, stay durable."""
    from datetime import UTC, datetime, timedelta

    from django.db import transaction
    from django.test.utils import CaptureQueriesContext

    store, _ = two_stores()
    now = datetime(2030, 1, 1, tzinfo=UTC)
    connection = connections["pg"]

    def setting():
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            return cursor.fetchone()[0]

    claim = {"queue": "default", "kinds": None, "limit": 1, "now": now, "worker": "w"}
    try:
        with CaptureQueriesContext(connection) as queries:
            store.claim(**claim, lease_until=now + timedelta(seconds=30))
        (statement,) = [q["sql"] for q in queries]
        assert "set_config('synchronous_commit', 'off', true)" in statement
        assert setting() == "on"  # enqueues and outcomes on this connection stay durable
        with transaction.atomic(using="pg"):
            with CaptureQueriesContext(connection) as queries:
                store.claim(**claim, lease_until=now + timedelta(seconds=30))
            assert "synchronous_commit" not in queries[0]["sql"]
            assert setting() == "on"
    finally:
        store.close()


# -- the runtime's shared sessions -----------------------------------------------------------------
def backend_of_this_thread() -> tuple[int, str]:
    with connections["pg"].cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid(), current_setting('application_name')")
        pid, name = cursor.fetchone()
    return int(pid), str(name)


def test_the_runtime_threads_share_at_most_pool_size_named_sessions():
    import threading

    store = open_database_store("pg", parse({"STORE": {"database": "pg"}, "RUN": "manual"}))
    store.name_sessions("host:123:abcdef")
    seen: set[tuple[int, str]] = set()
    inside = peak = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal inside, peak
        for _ in range(20):
            with store.shared_session():
                with lock:
                    inside += 1
                    peak = max(peak, inside)
                with store.shared_session():  # re-entrant: the same session
                    found = backend_of_this_thread()
                with lock:
                    seen.add(found)
                    inside -= 1

    try:
        threads = [threading.Thread(target=work) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert peak <= 2 and len({pid for pid, _ in seen}) <= 2, seen
        assert {name for _, name in seen} == {"anole_jobs:worker:host:123:abcdef"}
        # Outside a borrow the thread has its own connection, as always.
        assert backend_of_this_thread()[0] not in {pid for pid, _ in seen}
    finally:
        store.close()


def test_a_shared_session_whose_backend_died_is_opened_again():
    from django.db import OperationalError

    store = open_database_store(
        "pg", parse({"STORE": {"database": "pg"}, "RUN": "manual", "POOL_SIZE": 1})
    )
    try:
        with store.shared_session():
            pid, _ = backend_of_this_thread()
        with connections["pg"].cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(OperationalError), store.shared_session():
            backend_of_this_thread()
        with store.shared_session():
            again, _ = backend_of_this_thread()
        assert again != pid
    finally:
        store.close()


def test_a_session_that_died_while_idle_is_replaced_before_a_call_meets_it(monkeypatch):
    """After an outage (a server restart, a proxy that dropped its connections), the first
    store call on an old session must not fail: the pool checks a session that sat idle
    before it lends it, so the runtime does not report a second outage that has ended."""
    from anole_jobs.stores.database import sessions

    monkeypatch.setattr(sessions, "IDLE_CHECK_SECONDS", 0.0)
    store = open_database_store(
        "pg", parse({"STORE": {"database": "pg"}, "RUN": "manual", "POOL_SIZE": 1})
    )
    try:
        with store.shared_session():
            pid, _ = backend_of_this_thread()
        with connections["pg"].cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        with store.shared_session():
            again, _ = backend_of_this_thread()  # no error: a fresh session
        assert again != pid
    finally:
        store.close()


def test_a_broken_session_takes_the_idle_ones_with_it():
    """A call that finds its session broken closes the pool's idle sessions too: they went
    through the same server or proxy."""
    import threading

    from django.db import OperationalError

    store = open_database_store(
        "pg", parse({"STORE": {"database": "pg"}, "RUN": "manual", "POOL_SIZE": 2})
    )
    try:
        both = threading.Barrier(2)
        pids: list[int] = []

        def hold() -> None:
            with store.shared_session():
                pids.append(backend_of_this_thread()[0])
                both.wait(10)

        threads = [threading.Thread(target=hold) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert len(set(pids)) == 2
        with connections["pg"].cursor() as cursor:
            for pid in pids:
                cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(OperationalError), store.shared_session():
            backend_of_this_thread()  # pid's session was broken: the pool closes both
        assert store.sessions.open_count() == 0
    finally:
        store.close()


def test_pool_size_0_leaves_each_thread_its_own_connection():
    store = open_database_store(
        "pg", parse({"STORE": {"database": "pg"}, "RUN": "manual", "POOL_SIZE": 0})
    )
    try:
        assert not store.shares_sessions
        mine = backend_of_this_thread()[0]
        with store.shared_session():
            assert backend_of_this_thread()[0] == mine
    finally:
        store.close()
