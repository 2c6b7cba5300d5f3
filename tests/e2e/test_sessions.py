"""How many PostgreSQL sessions one idle `runjobs` holds, measured from outside: the sessions
whose client sockets belong to the process (its open TCP sockets, read from /proc), as
``pg_stat_activity`` lists them, with the names they give themselves."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from tests.e2e.conftest import Backend, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.needs("postgres")]

#: Nine queues: "default", "other" and these seven.
MORE_QUEUES = ",".join(f"q{n}" for n in range(7))
BUDGET = 4


def socket_ports(pid: int) -> set[int]:
    """The local TCP ports of the sockets process `pid` has open (Linux /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def sessions_of(backend: Backend, pid: int) -> list[tuple[int, str]]:
    """(backend pid, application_name) of the sessions on the test's database whose client
    is process `pid`."""
    ports = sorted(socket_ports(pid))
    rows = backend.pg.execute(
        "SELECT pid, application_name FROM pg_stat_activity"
        " WHERE datname = current_database() AND client_port = ANY(%s) ORDER BY pid",
        [ports],
    ).fetchall()
    return [(int(p), str(name)) for p, name in rows]


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs Linux /proc")
def test_an_idle_runjobs_of_nine_queues_holds_at_most_four_named_sessions(
    pg_backend: Backend,
) -> None:
    worker = pg_backend.spawn(QUEUES=MORE_QUEUES)
    worker.wait_ready()
    # Idle: every thread has made its first store call (the listener listens, the leader
    # leads, the heartbeat recorded the worker) once the worker's row and the lock exist.
    wait_until(
        lambda: (
            pg_backend.pg.execute("SELECT count(*) FROM anole_jobs_worker").fetchone()[0]
            and pg_backend.pg.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ).fetchone()[0]
        ),
        "the worker recorded and leading",
        15,
    )
    sessions = sessions_of(pg_backend, worker.pid)
    print("sessions:", sessions)
    assert sessions, "no session found for the process"
    assert len(sessions) <= BUDGET, sessions
    # anole_jobs:<role>:<worker id>, the worker id being host:pid:suffix.
    roles = sorted(name.split(":")[1] for _pid, name in sessions)
    assert all(name.startswith("anole_jobs:") for _pid, name in sessions), sessions
    assert all(f":{worker.pid}:" in name for _pid, name in sessions), sessions
    assert roles.count("listener") == 1 and roles.count("leader") == 1, roles
    assert set(roles) == {"listener", "leader", "worker"}, roles


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs Linux /proc")
def test_a_runjobs_busy_with_async_jobs_stays_within_the_budget(pg_backend: Backend) -> None:
    """Async jobs run on the process's event loop; the runtime's calls for them (the watch
    for their cancels, progress written from the loop's threads) borrow the shared sessions
    too, so the budget holds while they run, not only when the worker is idle."""
    worker = pg_backend.spawn(QUEUES=MORE_QUEUES, CONCURRENCY="40")
    worker.wait_ready()
    ids = pg_backend.enqueue("asyncrt.hold", 30, marker=str(pg_backend.markers), seconds=4)
    pg_backend.wait_markers(30, "started", timeout=15)
    sessions = sessions_of(pg_backend, worker.pid)
    print("sessions while busy:", sessions)
    assert sessions and len(sessions) <= BUDGET, sessions
    pg_backend.wait_state(ids, "completed", timeout=30)


def redis_connections(pid: int, port: int) -> int:
    """TCP connections process `pid` has open to `port` (Linux /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            remote = int(fields[2].rsplit(":", 1)[1], 16)
            if fields[9] in inodes and remote == port and fields[3] == "01":  # ESTABLISHED
                count += 1
    return count


@pytest.mark.needs("redis")
@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs Linux /proc")
def test_an_idle_runjobs_of_nine_queues_holds_few_redis_connections(request, tmp_path) -> None:
    from urllib.parse import urlparse

    from django.conf import settings

    from tests.e2e.conftest import _backend

    backend_gen = _backend(request, "redis", tmp_path)
    backend = next(backend_gen)
    try:
        worker = backend.spawn(QUEUES=MORE_QUEUES)
        worker.wait_ready()
        port = urlparse(settings.REDIS_TEST_URL).port or 6379
        wait_until(lambda: redis_connections(worker.pid, port) >= 2, "listening", 10)
        count = redis_connections(worker.pid, port)
        print("redis connections:", count)
        assert count <= BUDGET
    finally:
        with contextlib.suppress(StopIteration):
            next(backend_gen)


# -- scale-out: the sessions a fleet needs --------------------------------------------------------
#: The fleet the budget is for: 24 `runjobs` of 4 queues on one PostgreSQL whose
#: max_connections is 100, of which superuser_reserved_connections (3) are not for them.
FLEET, FLEET_SESSIONS = 24, 100 - 3
#: What this 2-core machine runs of it for real, and the jobs they work.
RUN_PROCESSES, RUN_JOBS = 4, 2_000
FOUR_QUEUES = "q0,q1"  # with "default" and "other": four queues


@pytest.mark.chaos
@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs Linux /proc")
def test_a_fleet_of_four_queue_workers_fits_the_default_max_connections(
    pg_backend: Backend,
) -> None:
    """Four `runjobs` of four queues work 2,000 jobs (none lost) while a sampler counts each
    process's sessions from outside; the peak per process, times 24 processes, must fit
    PostgreSQL's default max_connections."""
    import threading

    import psycopg

    workers = [pg_backend.spawn(QUEUES=FOUR_QUEUES) for _ in range(RUN_PROCESSES)]
    for worker in workers:
        worker.wait_ready()
    info = pg_backend.pg.info
    sampler = psycopg.connect(
        host=info.host, port=info.port, user=info.user, dbname=info.dbname, autocommit=True
    )
    peak: dict[int, int] = {}
    total_peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal total_peak
        while not done.wait(0.05):
            counts = {}
            for worker in workers:
                ports = sorted(socket_ports(worker.pid))
                (n,) = sampler.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND client_port = ANY(%s)",
                    [ports],
                ).fetchone()
                counts[worker.pid] = int(n)
            for pid, n in counts.items():
                peak[pid] = max(peak.get(pid, 0), n)
            total_peak = max(total_peak, sum(counts.values()))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        queues = ["default", "other", "q0", "q1"]
        ids: list[int] = []
        for queue in queues:
            ids += pg_backend.enqueue("noop", RUN_JOBS // len(queues), queue=queue)
        records = pg_backend.wait_state(ids, "completed", timeout=45)
    finally:
        done.set()
        thread.join(5)
        sampler.close()
    assert len(records) == RUN_JOBS
    assert all(r["attempt"] == 1 for r in records.values()), "a job ran twice"
    per_process = max(peak.values())
    print(
        f"sessions at the peak: {total_peak} for {RUN_PROCESSES} processes (per process at"
        f" most {per_process}: {sorted(peak.values())}); {FLEET} processes need at most"
        f" {FLEET * per_process} of {FLEET_SESSIONS}"
    )
    assert per_process <= BUDGET, peak
    assert FLEET * per_process <= FLEET_SESSIONS
