"""PostgreSQL's dedicated connections: the leader's advisory lock and the LISTEN thread.

Both need a session of their own, outside Django's per-thread connections and the runtime's
shared sessions (`sessions.py`): an advisory lock lives as long as its session (a terminated
backend frees it, and the old leader notices at its next re-check), and LISTEN needs a
connection that nothing else uses. One LISTEN session per process carries every channel the
process listens on (new work, finished jobs).

Both connect to `DIRECT_DATABASE` when the settings give one (an alias or a DSN: a direct
connection, past a transaction pooler), else to the store's own alias. Their sessions are
named ``anole_jobs:listener:<label>`` and ``anole_jobs:leader:<label>``.
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
from anole_jobs.stores.database.sessions import session_name

logger = logging.getLogger("anole_jobs.stores.postgres")


def connect_params(alias: str) -> dict[str, Any]:
    """psycopg.connect() keyword arguments for Django's `alias` (its test DB under tests)."""
    params = dict(connections[alias].get_connection_params())
    # Django's own cursor classes and adapters are not wanted on a raw session.
    for key in ("cursor_factory", "context", "prepare_threshold", "server_side_binding"):
        params.pop(key, None)
    params.setdefault("connect_timeout", 5)
    return params


def direct_params(source: str, name: str) -> dict[str, Any]:
    """psycopg.connect() keyword arguments for `source`, a Django alias or a libpq DSN, with
    the session's `application_name`."""
    if source in connections:
        params = connect_params(source)
    else:
        from psycopg.conninfo import conninfo_to_dict

        params = dict(conninfo_to_dict(source))
        params.setdefault("connect_timeout", 5)
    params["application_name"] = name
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
        self.alias = alias  # or a DSN (DIRECT_DATABASE)
        self.label: str | None = None
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
                    params = direct_params(self.alias, session_name("leader", self.label))
                    session = psycopg.connect(**params, autocommit=True)
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
    """LISTEN on its channels in a thread; each notification's payload goes to its channel's
    `deliver` (a list of payloads; none after a (re)connection, when work may have been
    missed). One round is one session's life; a lost session is opened again with the
    runtime's back-off, and polling covers the gap. `add` listens on one more channel."""

    name = "anole-pg-listen"
    label = "PostgreSQL LISTEN session"
    #: Seconds between looks for a channel added meanwhile (notifications wake it at once).
    LOOK = 0.25

    def __init__(self, alias: str, channel: str, deliver: Callable[[list[str]], None]) -> None:
        super().__init__()
        self.alias = alias  # or a DSN (DIRECT_DATABASE)
        self.session_label: str | None = None
        self._channels: dict[str, Callable[[list[str]], None]] = {channel: deliver}
        self._channels_lock = threading.Lock()
        self._connected = threading.Event()
        self._session: Any = None

    @property
    def channel(self) -> str:
        return next(iter(self._channels))

    def add(self, channel: str, deliver: Callable[[list[str]], None]) -> None:
        """Listen on `channel` too (within `LOOK` seconds; its waiters poll until then)."""
        with self._channels_lock:
            self._channels.setdefault(channel, deliver)

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

        params = direct_params(self.alias, session_name("listener", self.session_label))
        try:
            with psycopg.connect(**params, autocommit=True) as session:
                self._session = session
                listening: set[str] = set()

                def listen_new() -> None:
                    with self._channels_lock:
                        new = [c for c in self._channels if c not in listening]
                    for channel in new:
                        session.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                        listening.add(channel)
                    # Work may have been missed while (re)connecting: wake everyone once.
                    for channel in new:
                        self._channels[channel]([])

                listen_new()
                self.recovered()
                self._connected.set()  # after the wake-ups: a waiter on it has seen them
                while not self.stopping:
                    for notify in session.notifies(timeout=self.LOOK):
                        deliver = self._channels.get(notify.channel)
                        if deliver is not None:
                            deliver([notify.payload] if notify.payload else [])
                    if len(listening) != len(self._channels):
                        listen_new()
        except Exception:
            if self.stopping:
                return 0.0  # cancelled by `stop`
            raise
        finally:
            self._connected.clear()
            self._session = None
        return 0.0
