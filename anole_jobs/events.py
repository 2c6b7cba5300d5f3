"""A small in-process event bus: the runtime says what happened, listeners (metrics, logs,
tests) decide what to do with it. Leaf module.

A listener subscribes to the event names it handles (or to all of them); an event is built
only when someone listens to its name, so an emit nobody listens to costs a dict lookup.
Listeners run synchronously in the emitting thread and must be quick; an exception in a
listener is logged and never reaches the job it describes.
"""

from __future__ import annotations

import difflib
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

logger = logging.getLogger("anole_jobs.events")

# Event names (the `name` of an `Event`).
ENQUEUED = "enqueued"  # queue, kind, inserted (bool), count (jobs of the batch alike)
RUN_STARTED = "run_started"  # queue, kind, job_id, attempt
RUN_FINISHED = "run_finished"  # queue, kind, job_id, attempt, max_attempts, outcome, seconds,
#   saved (bool), error_type (str | None); emitted only by worker/outcomes.py
RESCUED = "rescued"  # queue, kind, job_id, state
STAGED = "staged"  # count
PRUNED = "pruned"  # count
LEADERSHIP = "leadership"  # leader (bool), instance (its name)
CRON_ENQUEUED = "cron_enqueued"  # name, job_id
QUEUED_GAUGE = "queued_gauge"  # counts {queue: {state: n}}
HELD_GAUGE = "held_gauge"  # held {queue: n}: available jobs the queue's limits hold back
LATENCY_GAUGE = "latency_gauge"  # latency {queue: seconds its oldest available job waited}
STORE_CALL = "store_call"  # method, seconds, ok
RUNS_FINISHED = "runs_finished"  # runs: tuple of `FinishedRun`, the runs one write recorded
#   (the batch of RUN_FINISHED, emitted once per batch just before them; what metrics count)

#: Every event name; a listener subscribes to some of them (or all).
NAMES: tuple[str, ...] = (
    ENQUEUED,
    RUN_STARTED,
    RUN_FINISHED,
    RESCUED,
    STAGED,
    PRUNED,
    LEADERSHIP,
    CRON_ENQUEUED,
    QUEUED_GAUGE,
    HELD_GAUGE,
    LATENCY_GAUGE,
    STORE_CALL,
    RUNS_FINISHED,
)


class Event:
    """What happened: its `name` and its `fields` (`event["field"]` reads one). Listeners
    share it: read it, never change it. A plain class with slots: one is made per run
    started, and a frozen dataclass's `__init__` costs twice as much."""

    __slots__ = ("fields", "name")

    def __init__(self, name: str, fields: dict[str, Any] | None = None) -> None:
        self.name = name
        self.fields: dict[str, Any] = {} if fields is None else fields

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return self.name == other.name and self.fields == other.fields

    __hash__ = None  # type: ignore[assignment]  # its fields are a dict

    def __repr__(self) -> str:
        return f"Event(name={self.name!r}, fields={self.fields!r})"


Listener = Callable[[Event], None]


class FinishedRun(NamedTuple):
    """One run's end in a `RUNS_FINISHED` batch: the fields of its `RUN_FINISHED` event."""

    queue: str
    kind: str
    job_id: int
    attempt: int
    max_attempts: int
    outcome: str
    seconds: float
    saved: bool
    error_type: str | None


class EventBus:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscriptions: tuple[tuple[Listener, tuple[str, ...]], ...] = ()
        #: ``{event name: its listeners}``, only for names someone listens to. Read freely
        #: (``name in bus.by_name`` is the cheap "does anyone listen?"); it is replaced, never
        #: changed, by `subscribe` and its undo.
        self.by_name: Mapping[str, tuple[Listener, ...]] = {}

    def subscribe(self, listener: Listener, *names: str) -> Callable[[], None]:
        """Call `listener` with every event named in `names` (every event when none are given);
        returns a function that removes it. An unknown name is refused (`ValueError`), since a
        listener waiting for an event that never comes would fail silently."""
        for name in names:
            if name not in NAMES:
                close = difflib.get_close_matches(name, NAMES, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"names: {', '.join(NAMES)}"
                raise ValueError(f"no event is named {name!r}; {hint}")
        subscription = (listener, names or NAMES)
        with self._lock:
            self._subscriptions = (*self._subscriptions, subscription)
            self._index()

        def unsubscribe() -> None:
            with self._lock:
                self._subscriptions = tuple(
                    item for item in self._subscriptions if item is not subscription
                )
                self._index()

        return unsubscribe

    def _index(self) -> None:
        by_name: dict[str, tuple[Listener, ...]] = {}
        for listener, names in self._subscriptions:
            for name in names:
                by_name[name] = (*by_name.get(name, ()), listener)
        self.by_name = by_name

    @property
    def listeners(self) -> tuple[Listener, ...]:
        """Every subscribed listener, once each, in subscription order."""
        return tuple(dict.fromkeys(listener for listener, _ in self._subscriptions))

    def listens_to(self, name: str) -> bool:
        """Whether anyone listens to `name`: emitters with costly fields skip building them
        when not."""
        return name in self.by_name

    def emit(self, name: str, /, **fields: Any) -> None:
        # Positional-only: CRON_ENQUEUED carries a field called `name`.
        listeners = self.by_name.get(name)
        if listeners is None:
            return
        event = Event(name, fields)
        for listener in listeners:
            try:
                listener(event)
            except Exception:
                logger.exception("anole_jobs event listener %r failed on %s", listener, name)


#: The process-wide bus.
bus = EventBus()
