"""In-process wake-ups shared by every store: a worker waiting for work in some queues is
woken at once by an enqueue in this process. Stores with cross-process wake-ups (PostgreSQL
LISTEN/NOTIFY, Redis pub/sub) feed the same `WakeupHub` from their listener thread.
"""

from __future__ import annotations

import threading
from collections.abc import Collection


class Subscription:
    """One waiter's view: which of its queues were woken since it last waited."""

    def __init__(self, hub: WakeupHub, queues: Collection[str]) -> None:
        self._hub = hub
        self.queues = frozenset(queues)
        self._pending: set[str] = set()

    def wait(self, timeout: float) -> set[str]:
        """Block until one of the queues is woken or `timeout` seconds pass; return the woken
        queues (empty on timeout). Wake-ups that came while not waiting are not lost."""
        with self._hub._cond:
            if not self._pending:
                self._hub._cond.wait_for(lambda: bool(self._pending), timeout)
            woken, self._pending = self._pending, set()
            return woken

    def close(self) -> None:
        self._hub._remove(self)


class WakeupHub:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._subscriptions: list[Subscription] = []

    def subscribe(self, queues: Collection[str]) -> Subscription:
        subscription = Subscription(self, queues)
        with self._cond:
            self._subscriptions.append(subscription)
            self._cond.notify_all()  # for `wait_for_subscribers`
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        with self._cond:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)
            self._cond.notify_all()

    def wait_for_subscribers(self, timeout: float) -> bool:
        """Block until someone is subscribed, or `timeout` seconds pass (tests start a waiter
        in a thread, then act once it waits)."""
        with self._cond:
            return self._cond.wait_for(lambda: bool(self._subscriptions), timeout)

    def has_subscribers(self) -> bool:
        """Whether anyone waits (read without the lock: a waiter subscribes before it looks,
        so one that subscribed after this read finds the write done)."""
        return bool(self._subscriptions)

    def wake(self, queues: Collection[str]) -> None:
        """Wake the waiters of `queues` (all waiters when `queues` is empty)."""
        with self._cond:
            for subscription in self._subscriptions:
                hit = subscription.queues & set(queues) if queues else subscription.queues
                if hit:
                    subscription._pending |= hit
            self._cond.notify_all()
