"""A small in-process event bus: the runtime says what happened, listeners (metrics, logs,
tests) decide what to do with it. Leaf module.

Listeners run synchronously in the emitting thread and must be quick; an exception in a
listener is logged and never reaches the job it describes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("anole_jobs.events")

# Event names (the `name` of an `Event`).
ENQUEUED = "enqueued"  # queue, kind, inserted (bool), count (jobs of the batch alike)
RUN_STARTED = "run_started"  # queue, kind, job_id, attempt
RUN_FINISHED = "run_finished"  # queue, kind, job_id, attempt, max_attempts, outcome, seconds,
#   saved (bool), error_type (str | None); emitted only by worker/outcomes.py
RESCUED = "rescued"  # queue, kind, job_id, state
STAGED = "staged"  # count
PRUNED = "pruned"  # count
LEADERSHIP = "leadership"  # leader (bool)
CRON_ENQUEUED = "cron_enqueued"  # name, job_id
QUEUED_GAUGE = "queued_gauge"  # counts {queue: {state: n}}
STORE_CALL = "store_call"  # method, seconds, ok


@dataclass(frozen=True)
class Event:
    name: str
    fields: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]


Listener = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Read freely (an empty tuple means nobody listens); change it only through subscribe.
        self.listeners: tuple[Listener, ...] = ()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add `listener`; returns a function that removes it."""
        with self._lock:
            self.listeners = (*self.listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                self.listeners = tuple(item for item in self.listeners if item is not listener)

        return unsubscribe

    @property
    def listening(self) -> bool:
        """Whether anyone listens: emitters with costly fields skip building them when not."""
        return bool(self.listeners)

    def emit(self, name: str, /, **fields: Any) -> None:
        # Positional-only: CRON_ENQUEUED carries a field called `name`.
        listeners = self.listeners
        if not listeners:
            return
        event = Event(name, fields)
        for listener in listeners:
            try:
                listener(event)
            except Exception:
                logger.exception("anole_jobs event listener %r failed on %s", listener, name)


#: The process-wide bus.
bus = EventBus()
