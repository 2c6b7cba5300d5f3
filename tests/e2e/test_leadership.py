"""Leadership across `runjobs` instances: one leader; another takes over when it stops,
dies, or (PostgreSQL) loses the connection that holds its advisory lock.

Each instance logs ``instance <host:pid:…> is now leader`` / ``is no longer leader`` (INFO,
logger ``anole_jobs.maintenance``); the tests read those lines from each process's output.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest

from tests.e2e.conftest import Backend, wait_until

pytestmark = pytest.mark.e2e

LEADS = "is now leader"
STOPPED_LEADING = "is no longer leader"
LEASE = "1"


def test_leadership_moves_when_the_leader_stops_or_dies(backend: Backend) -> None:
    first = backend.spawn(LEASE=LEASE)
    first.wait_output(LEADS)
    second = backend.spawn(LEASE=LEASE)
    second.wait_ready()
    assert LEADS not in second.output(), "two leaders at once"
    # A leader that stops resigns: the follower takes over at its next maintenance tick.
    first.signal()
    assert first.wait(timeout=10) == 0
    second.wait_output(LEADS, timeout=5)
    # A leader killed outright holds its leadership until it lapses (one LEASE), no longer.
    third = backend.spawn(LEASE=LEASE)
    third.wait_ready()
    assert LEADS not in third.output(), "two leaders at once"
    second.proc.send_signal(signal.SIGKILL)
    assert second.wait(timeout=10) == -signal.SIGKILL
    third.wait_output(LEADS, timeout=10)
    third.signal()
    assert third.wait(timeout=10) == 0


def advisory_holders(pg: Any) -> list[int]:
    """Backend pids holding an advisory lock in the test database."""
    rows = pg.execute(
        "SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
        " WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()"
    ).fetchall()
    return [pid for (pid,) in rows]


@pytest.mark.needs("postgres")
def test_a_terminated_leader_connection_hands_leadership_over(pg_backend: Backend) -> None:
    backend = pg_backend
    first = backend.spawn(LEASE="2")
    first.wait_output(LEADS)
    (lock_pid,) = wait_until(
        lambda: advisory_holders(backend.pg), "the leader's advisory lock in pg_locks", 5
    )
    second = backend.spawn(LEASE="2")
    second.wait_ready()
    assert LEADS not in second.output(), "two leaders at once"
    # Kill the backend that holds the lock: PostgreSQL frees it at once.
    assert backend.pg.execute("SELECT pg_terminate_backend(%s)", [lock_pid]).fetchone()[0]
    second.wait_output(LEADS, timeout=10)
    # The old leader notices at its next re-check (within one lease) and stops leading.
    first.wait_output(STOPPED_LEADING, timeout=10)
    holders = wait_until(
        lambda: [pid for pid in advisory_holders(backend.pg) if pid != lock_pid],
        "the new leader's advisory lock",
        5,
    )
    assert len(holders) == 1
    assert first.output().count(LEADS) == 1, "the old leader took leadership back"
    for worker in (first, second):
        worker.signal()
        assert worker.wait(timeout=10) == 0
