"""Cross-process wake-ups for the Redis store: PUBLISH on enqueue, a listener thread that feeds
the store's in-process `WakeupHub` from SUBSCRIBE.

Pub/sub is fire-and-forget: a message published while the listener is reconnecting is lost.
That is acceptable because workers also poll; to shorten the gap, every (re)subscription wakes
every local waiter once, so they look for work that may have arrived while deaf.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Collection
from typing import Any

from anole_jobs.background import BackgroundThread
from anole_jobs.stores.wakeups import WakeupHub, valid_priority

logger = logging.getLogger("anole_jobs.stores.redis")

#: How long one `get_message` blocks, so `stop()` is noticed promptly.
POLL_SECONDS = 0.25
#: After this many quiet polls (about 30 s) the listener PINGs; when that many more pass with
#: no answer, the connection is presumed half-open (a dropped NAT entry, a dead peer that sent
#: no RST) and replaced. Counting polls instead of reading a clock keeps stores clock-free.
PING_AFTER_POLLS = 120


def encode(sender: str, queues: Collection[str]) -> str:
    return json.dumps({"from": sender, "queues": sorted(queues)}, separators=(",", ":"))


class Listener(BackgroundThread):
    """A daemon thread subscribed to `channel` on a dedicated connection of `client`'s pool.

    Messages from `sender` (this store) are skipped: it already woke its own hub in-process.
    One round is one subscription's life; on any error the pub/sub connection is dropped and
    opened again after the runtime's back-off, and the outage is reported to the process's
    store health (one line when it starts, one when it ends).
    """

    label = "Redis wake-up listener"

    def __init__(self, client: Any, channel: str, hub: WakeupHub, sender: str) -> None:
        super().__init__(name=f"anole-jobs-redis-listener:{channel}")
        self._client = client
        self.channel = channel
        self._hub = hub
        self._sender = sender
        #: Set while subscribed (tests wait on it before publishing).
        self.subscribed = threading.Event()
        #: How many times the channel was (re)subscribed.
        self.subscriptions = 0
        self.pubsub: Any = None

    def stop(self, timeout: float = 2.0) -> bool:
        return super().stop(timeout)

    def on_exit(self) -> None:
        self.subscribed.clear()

    def run_once(self) -> float:
        try:
            self.pubsub = self._client.pubsub()
            self.pubsub.subscribe(self.channel)
            quiet = 0
            while not self.stopping:
                message = self.pubsub.get_message(timeout=POLL_SECONDS)
                if message is None:
                    quiet += 1
                    if quiet == PING_AFTER_POLLS:
                        self.pubsub.ping()
                    elif quiet >= 2 * PING_AFTER_POLLS:
                        raise ConnectionError("no answer to PING on the pub/sub connection")
                    continue
                quiet = 0
                if message["type"] == "subscribe":
                    self._on_subscribed()
                    self.recovered()
                elif message["type"] == "message":
                    self._deliver(message["data"])
        except Exception:  # any failure means: reconnect later
            self.subscribed.clear()
            raise
        finally:
            self._close_pubsub()
        return 0.0

    def _close_pubsub(self) -> None:
        pubsub, self.pubsub = self.pubsub, None
        if pubsub is not None:
            try:
                pubsub.close()
            except Exception:  # the connection is being dropped anyway
                logger.debug("closing the Redis pub/sub connection failed", exc_info=True)

    def _on_subscribed(self) -> None:
        self.subscriptions += 1
        # Messages published while we were not subscribed are lost: wake everyone once.
        self._hub.wake(())
        self.subscribed.set()

    def _deliver(self, data: bytes | str) -> None:
        try:
            payload = json.loads(data)
            queues = [str(queue) for queue in payload["queues"]]
            sender = payload.get("from")
            top = payload.get("top")
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring a malformed wake-up message on %s: %r", self.channel, data)
            return
        if sender == self._sender:
            return
        if (
            queues
            and isinstance(top, dict)
            and all(valid_priority(top.get(queue)) for queue in queues)
        ):
            # The priorities announced (from a sender that has them; an older one has none).
            self._hub.wake({queue: top[queue] for queue in queues})
        else:  # no queues: wake every waiter, as `WakeupHub.wake` does
            self._hub.wake(queues)
