"""The runtime's shared sessions: a small pool of Django connections to the store's database.

Django gives every thread its own connection, so a worker process held one session per
thread that touched the store (a dispatcher per queue, the completer, the heartbeat, the
maintenance loop): 13 for nine queues. The runtime's threads now borrow one of at most `size`
connections for the length of each store call (`borrow`, re-entrant): the borrowed wrapper is
put in the thread's ``connections[alias]`` while the call runs, so the store's SQL, its
``transaction.atomic`` blocks and Django's error handling work on it as on the thread's own.
A call that fails leaves a broken connection closed (the next borrower reconnects).

Handlers and requests are not concerned: their threads keep Django's own connections (an
enqueue joins their transaction as always).

Each session is named (PostgreSQL's ``application_name``): ``anole_jobs:worker:<worker id>``
once the runtime named the store's sessions, ``anole_jobs:worker:<host>:<pid>`` before.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import socket
import threading
import time
from types import TracebackType
from typing import Any

from django.db import connections

logger = logging.getLogger("anole_jobs.stores.postgres")

#: PostgreSQL keeps the first 63 bytes of an application_name.
NAME_MAX = 63
#: Seconds a session may sit idle in the pool before it is checked (one round trip) as it is
#: lent: a server restart, a proxy or a firewall may have closed it meanwhile, and a store
#: call that meets a dead session would report an outage that has already ended.
IDLE_CHECK_SECONDS = 5.0


def session_name(role: str, label: str | None) -> str:
    """``anole_jobs:<role>:<label>`` (the label defaults to host:pid), cut to what the server
    keeps."""
    if label is None:
        label = f"{socket.gethostname().split('.')[0]}:{os.getpid()}"
    return f"anole_jobs:{role}:{label}"[:NAME_MAX]


class SessionPool:
    """Up to `size` connections of `alias` (Django's `DatabaseWrapper`s, shared between
    threads), each lent to one thread at a time."""

    def __init__(self, alias: str, size: int) -> None:
        self.alias = alias
        self.size = size
        self.label: str | None = None
        self._cond = threading.Condition(threading.Lock())
        self._free: list[Any] = []
        self._made = 0
        self._local = threading.local()
        #: Borrows so far, and those that waited for a session another thread held.
        self.lent = 0
        self.waited = 0

    def name(self, label: str) -> None:
        """Name the sessions after `label` (a worker id): the idle ones are closed now, one
        lent now when it is given back, and the next borrowers open them under the name."""
        with self._cond:
            self.label = label
            idle, self._free = self._free, []
            self._made -= len(idle)
            self._cond.notify_all()
        for wrapper in idle:
            self._close(wrapper)

    def _new(self) -> Any:
        current = connections[self.alias]
        settings = copy.deepcopy(current.settings_dict)
        options = dict(settings.get("OPTIONS") or {})
        if current.vendor == "postgresql":
            options["application_name"] = session_name("worker", self.label)
        settings["OPTIONS"] = options
        wrapper: Any = type(current)(settings, self.alias)
        wrapper.anole_label = self.label
        wrapper.inc_thread_sharing()  # lent to one thread at a time, any thread
        return wrapper

    def _take(self) -> Any:
        with self._cond:
            self.lent += 1
            waited = False
            while True:
                if self._free:
                    wrapper = self._free.pop()
                    break
                if self._made < self.size:
                    self._made += 1
                    wrapper = None
                    break
                if not waited:
                    waited = True
                    self.waited += 1
                self._cond.wait()
        if wrapper is not None:
            # Real elapsed time, not the runtime's clock (a store imports no runtime module,
            # and a fake clock must not decide whether a socket is still alive).
            idle = time.monotonic() - getattr(wrapper, "anole_idle_since", 0.0)  # noqa: TID251
            if idle >= IDLE_CHECK_SECONDS:
                self._check(wrapper)
            return wrapper
        try:
            return self._new()
        except BaseException:
            with self._cond:
                self._made -= 1
                self._cond.notify()
            raise

    def _check(self, wrapper: Any) -> None:
        """Close `wrapper` if its server no longer answers on it (it reconnects on its next
        query): after an outage, the first call on an old session finds a fresh one."""
        try:
            if wrapper.connection is not None and not wrapper.is_usable():
                self._close(wrapper)
        except Exception:  # noqa: BLE001 - a session that cannot be checked is closed
            self._close(wrapper)

    def _give(self, wrapper: Any) -> None:
        with self._cond:
            renamed = wrapper.anole_label != self.label
            if renamed:
                self._made -= 1
            else:
                wrapper.anole_idle_since = time.monotonic()  # noqa: TID251 - see _take
                self._free.append(wrapper)
            self._cond.notify()
        if renamed:
            self._close(wrapper)

    def borrow(self) -> _Borrow:
        """Within the block, this thread's ``connections[alias]`` is a shared session."""
        return _Borrow(self)

    def _settle(self, wrapper: Any, failed: bool) -> None:
        """Leave the session as a next borrower expects it: no transaction open, and closed
        when it broke (Django's rule for a connection after an error)."""
        try:
            if wrapper.connection is None:
                return
            if wrapper.in_atomic_block or not wrapper.get_autocommit():
                # A call never leaves a transaction open; if one did, it ends here.
                wrapper.close()
                return
            if failed and wrapper.errors_occurred and not wrapper.is_usable():
                wrapper.close()
                # The server or the way to it went away: the idle sessions went with it.
                self.close()
            elif failed:
                wrapper.errors_occurred = False
        except Exception:  # noqa: BLE001 - closing is the way back to a clean session
            logger.debug("a shared session failed its clean-up; closing it", exc_info=True)
            self._close(wrapper)

    @staticmethod
    def _close(wrapper: Any) -> None:
        with contextlib.suppress(Exception):
            wrapper.close()

    def close(self) -> None:
        """Close the idle sessions (one lent now stays usable until given back)."""
        with self._cond:
            idle, self._free = self._free, []
            self._made -= len(idle)
        for wrapper in idle:
            self._close(wrapper)

    def open_count(self) -> int:
        """Sessions connected now (for tests and diagnostics)."""
        with self._cond:
            return sum(1 for w in self._free if w.connection is not None) + (
                self._made - len(self._free)
            )


class _Borrow:
    """`SessionPool.borrow`'s block (a class, not a generator: it runs on every store call of
    the runtime's threads)."""

    __slots__ = ("pool", "wrapper", "storage", "previous")

    def __init__(self, pool: SessionPool) -> None:
        self.pool = pool
        self.wrapper: Any = None

    def __enter__(self) -> None:
        pool = self.pool
        if getattr(pool._local, "held", None) is not None:
            return  # re-entrant: the outer block lent it already
        wrapper = pool._take()
        handler = connections._connections  # type: ignore[attr-defined] # its thread-local
        # asgiref's Local looks for an event loop on every access: once is enough here.
        get_storage = getattr(handler, "_get_storage", None)
        storage = get_storage() if get_storage is not None else handler
        self.previous = getattr(storage, pool.alias, None)
        setattr(storage, pool.alias, wrapper)
        self.storage = storage
        self.wrapper = wrapper
        pool._local.held = wrapper

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        wrapper = self.wrapper
        if wrapper is None:
            return
        pool = self.pool
        pool._local.held = None
        self.wrapper = None
        if self.previous is None:
            with contextlib.suppress(AttributeError):
                delattr(self.storage, pool.alias)
        else:
            setattr(self.storage, pool.alias, self.previous)
        self.previous = self.storage = None
        pool._settle(wrapper, kind is not None)
        pool._give(wrapper)
