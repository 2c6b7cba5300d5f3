"""In-process wake-ups shared by every store: a worker waiting for work in some queues is
woken at once by an enqueue in this process. Stores with cross-process wake-ups (PostgreSQL
LISTEN/NOTIFY, Redis pub/sub) feed the same `WakeupHub` from their listener thread.

A wake-up may also announce the highest priority among the jobs it is about (`wake` given a
``{queue: priority}`` mapping): a worker pool that holds jobs claimed ahead at a lower
priority claims the announced job at once instead of at its next batch (worker/queue.py). A
wake-up without one (maintenance, a retry, an older process) only wakes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Mapping
from typing import Any, TypeGuard

from anole_jobs.kinds import PRIORITY_MAX, PRIORITY_MIN


class Subscription:
    """One waiter's view: which of its queues were woken since it last waited."""

    def __init__(self, hub: WakeupHub, queues: Collection[str]) -> None:
        self._hub = hub
        self.queues = frozenset(queues)
        self._pending: set[str] = set()
        self._top: int | None = None

    def wait(self, timeout: float) -> set[str]:
        """Block until one of the queues is woken or `timeout` seconds pass; return the woken
        queues (empty on timeout). Wake-ups that came while not waiting are not lost."""
        return self.wait_announced(timeout)[0]

    def wait_announced(self, timeout: float) -> tuple[set[str], int | None]:
        """`wait`, and the highest priority the wake-ups it returns announced (None when
        none announced one)."""
        with self._hub._cond:
            if not self._pending:
                self._hub._cond.wait_for(lambda: bool(self._pending), timeout)
            woken, self._pending = self._pending, set()
            top, self._top = self._top, None
            return woken, top

    def close(self) -> None:
        self._hub._remove(self)


#: The name a `subscribe_all` subscription returns for a wake-up of every name.
EVERY_NAME = ""


class _EveryName(frozenset[str]):
    """The names of a `subscribe_all` subscription: any name a wake-up names is one of them
    (and a wake-up of every name gives `EVERY_NAME`)."""

    def __and__(self, other: Any) -> set[str]:  # type: ignore[override]
        return set(other)


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

    def subscribe_all(self) -> Subscription:
        """A subscription that every wake-up wakes, whatever it names: its `wait` returns the
        names woken (`EVERY_NAME` among them for a wake-up of every name)."""
        subscription = Subscription(self, ())
        subscription.queues = _EveryName((EVERY_NAME,))
        with self._cond:
            self._subscriptions.append(subscription)
            self._cond.notify_all()
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
        """Wake the waiters of `queues` (all waiters when `queues` is empty). A mapping
        ``{queue: priority}`` also announces the highest priority of the new jobs of each."""
        tops = queues if isinstance(queues, Mapping) else None
        wanted = set(queues)
        with self._cond:
            for subscription in self._subscriptions:
                hit = subscription.queues & wanted if wanted else subscription.queues
                if not hit:
                    continue
                subscription._pending |= hit
                if tops is not None:
                    top = max(tops[queue] for queue in hit)
                    if subscription._top is None or top > subscription._top:
                        subscription._top = top
            self._cond.notify_all()


def announce(tops: dict[str, int], queue: str, priority: int) -> None:
    """Add a new available job of `queue` at `priority` to the `{queue: top priority}` an
    insert wakes (what `WakeupHub.wake` announces)."""
    top = tops.get(queue)
    if top is None or priority > top:
        tops[queue] = priority


# -- PostgreSQL NOTIFY payloads --------------------------------------------------------------
# A plain payload is a queue name ("" for every queue). An insert of a job above the default
# priority also sends `priority_payload`, a JSON object, beside the plain one: a listener of an
# older version wakes nobody for it (no queue has that name) and still hears the plain one.


def priority_payload(queue: str, priority: int) -> str:
    return json.dumps({"queue": queue, "priority": priority}, separators=(",", ":"))


def deliver_payload(hub: WakeupHub, payload: str) -> None:
    """Wake `hub` for one NOTIFY payload: a queue name, "" for every queue, or a
    `priority_payload` (one that does not decode as one is a queue name)."""
    if not payload:
        hub.wake(())
        return
    if payload.startswith("{"):
        announced = decode_priority(payload)
        if announced is not None:
            hub.wake({announced[0]: announced[1]})
            return
    hub.wake((payload,))


def decode_priority(payload: str) -> tuple[str, int] | None:
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    queue, priority = value.get("queue"), value.get("priority")
    if not isinstance(queue, str) or not queue or not valid_priority(priority):
        return None
    return queue, priority


def valid_priority(value: object) -> TypeGuard[int]:
    """An int priority in the range a job may have (from a message another process sent)."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and PRIORITY_MIN <= value <= PRIORITY_MAX
    )
