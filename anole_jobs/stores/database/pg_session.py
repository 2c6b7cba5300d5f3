"""PostgreSQL's dedicated connections: the leader's advisory lock and the LISTEN thread.

Both need a session of their own, outside Django's per-thread connections: an advisory lock
lives as long as its session (a terminated backend frees it, and the old leader notices
at its next re-check), and LISTEN needs a connection that nothing else uses.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from django.db import connections

from anole_jobs.background import BackgroundThread, health

logger = logging.getLogger("anole_jobs.stores.postgres")


def connect_params(alias: str) -> dict[str, Any]:
    """psycopg.connect() keyword arguments for Django's `alias` (its test DB under tests)."""
    params = dict(connections[alias].get_connection_params())
    # Django's own cursor classes and adapters are not wanted on a raw session.
    for key in ("cursor_factory", "context", "prepare_threshold", "server_side_binding"):
        params.pop(key, None)
    params.setdefault("connect_timeout", 5)
    return params


def lock_key(prefix: str) -> int:
    """A signed 64-bit advisory-lock key derived from the table prefix."""
    digest = hashlib.sha256(f"{prefix}leader".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class AdvisoryLeadership:
    """One dedicated session per instance; the instance leads while its session holds the lock.

    `hold` re-checks on every call (it is called before each leader duty): a session that was
    terminated, or that no longer holds the lock, stops leading at once and then competes
    again on a fresh session.
    """

    def __init__(self, alias: str, prefix: str) -> None:
        self.alias = alias
        self.key = lock_key(prefix)
        self._lock = threading.Lock()
        self._sessions: dict[str, Any] = {}
        self._holding: set[str] = set()

    def hold(self, instance: str) -> bool:
        import psycopg

        with self._lock:
            session = self._sessions.get(instance)
            try:
                if session is None or session.closed:
                    session = psycopg.connect(**connect_params(self.alias), autocommit=True)
                    self._sessions[instance] = session
                    self._holding.discard(instance)
                if instance in self._holding:
                    # A bigint key shows in pg_locks as classid (high 32 bits), objid (low).
                    row = session.execute(
                        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'"
                        " AND pid = pg_backend_pid() AND granted AND objsubid = 1"
                        " AND classid::text::bigint = %s AND objid::text::bigint = %s)",
                        [(self.key >> 32) & 0xFFFFFFFF, self.key & 0xFFFFFFFF],
                    ).fetchone()
                    if row and row[0]:
                        return True
                    self._holding.discard(instance)
                row = session.execute("SELECT pg_try_advisory_lock(%s)", [self.key]).fetchone()
                if row and row[0]:
                    self._holding.add(instance)
                    return True
                return False
            except psycopg.Error as exc:
                # Not counted as an outage here: the maintenance loop's next store call is.
                health.failed(exc, where=f"leader session of {instance} (not leading)", failures=1)
                self._holding.discard(instance)
                self._drop(instance)
                return False

    def release(self, instance: str) -> None:
        with self._lock:
            session = self._sessions.get(instance)
            if instance in self._holding and session is not None and not session.closed:
                # Unlock explicitly: a closed session's backend frees its locks only as it
                # exits, a moment later, and a successor trying at once would miss it.
                with contextlib.suppress(Exception):
                    session.execute("SELECT pg_advisory_unlock(%s)", [self.key])
            self._holding.discard(instance)
            self._drop(instance)

    def close(self) -> None:
        for instance in list(self._sessions):
            self.release(instance)

    def session_pid(self, instance: str) -> int | None:
        """The backend pid of `instance`'s session (tests terminate it)."""
        session = self._sessions.get(instance)
        return None if session is None or session.closed else int(session.info.backend_pid)

    def _drop(self, instance: str) -> None:
        session = self._sessions.pop(instance, None)
        if session is not None:
            with contextlib.suppress(Exception):  # it is going away either way
                session.close()


class Listener(BackgroundThread):
    """LISTEN on `channel` in a thread; each notification's payload (a queue name, or "" for
    every queue) goes to `deliver`. One round is one session's life; a lost session is opened
    again with the runtime's back-off, and polling covers the gap."""

    name = "anole-pg-listen"
    label = "PostgreSQL LISTEN session"

    def __init__(self, alias: str, channel: str, deliver: Callable[[list[str]], None]) -> None:
        super().__init__()
        self.alias = alias
        self.channel = channel
        self.deliver = deliver
        self._connected = threading.Event()
        self._session: Any = None

    def wait_connected(self, timeout: float) -> bool:
        return self._connected.wait(timeout)

    def wake(self) -> None:
        session = self._session
        if session is not None:
            with contextlib.suppress(Exception):
                session.cancel_safe()

    def run_once(self) -> float:
        import psycopg
        from psycopg import sql

        try:
            with psycopg.connect(**connect_params(self.alias), autocommit=True) as session:
                self._session = session
                session.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                self.recovered()
                # Work may have been missed while (re)connecting: wake everyone once
                # (before `connected`, so a waiter on it has seen this wake-up).
                self.deliver([])
                self._connected.set()
                while not self.stopping:
                    for notify in session.notifies(timeout=1.0):
                        self.deliver([notify.payload] if notify.payload else [])
        except Exception:
            if self.stopping:
                return 0.0  # cancelled by `stop`
            raise
        finally:
            self._connected.clear()
            self._session = None
        return 0.0
