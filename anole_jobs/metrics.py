"""Prometheus metrics (docs/observability.md), fed by the event bus.

The runtime and the service say what happened on `events.bus`; `MetricsListener` turns those
events into prometheus-client metrics. No store and no worker imports this module: with
`METRICS` off, or without prometheus-client installed, nothing subscribes and an event costs
one empty-tuple check.

Where the metrics live is ``METRICS_REGISTRY``: by default prometheus-client's global
`REGISTRY`, where a project's own ``/metrics`` (django-prometheus, or prometheus-client's
`generate_latest()` / `make_wsgi_app()`) already looks, so the metrics show with no code;
``"private"`` keeps them in a registry of their own (`private_registry()`). Each registry gets
its metrics once per process (`listener_for`), however often settings change: registering a
name twice in one registry is an error in prometheus-client. The app registers them when
Django starts (`apps.ready`), so a web process's ``/metrics`` shows them before any job runs.

Under prometheus-client's multiprocess mode (`PROMETHEUS_MULTIPROC_DIR` set before the first
import of prometheus-client) every process writes its values to that directory and
`exposition_registry()` reads them all.

Leaf module: imports only `events` and `conf` from the app.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from anole_jobs import events
from anole_jobs.conf import Settings, raw_settings, read_settings

logger = logging.getLogger("anole_jobs.metrics")

try:
    import prometheus_client
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
except ImportError:  # the `metrics` extra is optional
    prometheus_client = None  # type: ignore[assignment]

#: Distinct values a `kind` or `name` label takes in one process; later ones read `other`.
LABEL_CAP = 256
OTHER = "other"
#: Run times span milliseconds to the default 15-minute timeout and beyond.
RUN_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)
INSTALL_HINT = 'install the metrics extra: pip install "/path/to/anole_jobs[metrics]"'
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def available() -> bool:
    """True when prometheus-client can be imported."""
    return prometheus_client is not None


def multiprocess_dir() -> str | None:
    """The multiprocess directory prometheus-client writes to, if multiprocess mode is on."""
    return os.environ.get(MULTIPROC_ENV) or os.environ.get(MULTIPROC_ENV.lower()) or None


class LabelCap:
    """Caps the distinct values of each label name, process-wide: a kind per customer or a
    cron entry per tenant must not grow the scrape without bound (high-cardinality series
    are what takes a Prometheus server down)."""

    def __init__(self, cap: int = LABEL_CAP) -> None:
        self.cap = cap
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def __call__(self, label: str, value: str) -> str:
        seen = self._seen.get(label)
        if seen is not None and value in seen:  # the hot path takes no lock
            return value
        with self._lock:
            seen = self._seen.setdefault(label, set())
            if value in seen:
                return value
            if len(seen) >= self.cap:
                return OTHER
            seen.add(value)
            return value


class MetricsListener:
    """An event-bus listener that keeps anole_jobs' metrics (docs/observability.md) in
    `registry`."""

    def __init__(self, registry: Any, *, cap: int = LABEL_CAP) -> None:
        if prometheus_client is None:
            raise RuntimeError(f"prometheus-client is not installed ({INSTALL_HINT})")
        self.registry = registry
        self.cap = LabelCap(cap)
        by_kind = ["queue", "kind"]
        self.enqueued = Counter(
            "anole_jobs_enqueued_total", "Jobs inserted", by_kind, registry=registry
        )
        self.duplicates = Counter(
            "anole_jobs_duplicates_total",
            "Enqueues that returned an existing unique job instead of inserting",
            by_kind,
            registry=registry,
        )
        self.finished = Counter(
            "anole_jobs_finished_total",
            "Runs that ended, by outcome",
            [*by_kind, "outcome"],
            registry=registry,
        )
        self.run_seconds = Histogram(
            "anole_jobs_run_seconds",
            "How long runs took, from the handler's start to its outcome",
            by_kind,
            buckets=RUN_SECONDS_BUCKETS,
            registry=registry,
        )
        self.running = Gauge(
            "anole_jobs_running",
            "Runs in progress in this process",
            ["queue"],
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.queued = Gauge(
            "anole_jobs_queued",
            "Jobs in the store by queue and state, as the leader last counted them",
            ["queue", "state"],
            multiprocess_mode="livemostrecent",
            registry=registry,
        )
        self.held = Gauge(
            "anole_jobs_held",
            "Available jobs the queue's limits hold back, as the leader last counted them",
            ["queue"],
            multiprocess_mode="livemostrecent",
            registry=registry,
        )
        self.queue_latency = Gauge(
            "anole_jobs_queue_latency_seconds",
            "How long the queue's oldest available job has waited since it became available "
            "(0 for none), as the leader last read it: what autoscalers scale on",
            ["queue"],
            multiprocess_mode="livemostrecent",
            registry=registry,
        )
        self.rescued = Counter(
            "anole_jobs_rescued_total",
            "Jobs put back after their lease lapsed",
            by_kind,
            registry=registry,
        )
        self.unsaved = Counter(
            "anole_jobs_outcome_unsaved_total",
            "Runs that finished but whose outcome could not be written (they run again)",
            by_kind,
            registry=registry,
        )
        self.leader = Gauge(
            "anole_jobs_leader",
            "1 while an instance of this process is the leader",
            multiprocess_mode="livesum",
            registry=registry,
        )
        self.cron_enqueued = Counter(
            "anole_cron_enqueued_total",
            "Jobs enqueued by cron ticks",
            ["name"],
            registry=registry,
        )
        # Children by label values: prometheus-client's `labels()` validates and locks on every
        # call, which is most of a listener's cost per event.
        self._children: dict[tuple[object, ...], Any] = {}
        self._finished_children: dict[tuple[object, object, object], tuple[Any, ...]] = {}
        self._running_runs: dict[tuple[object, object], bool] = {}  # runs seen starting
        #: The running gauge's child of each queue, as the function that adds to it.
        self._running_children: dict[object, Callable[[float], None]] = {}
        self._queued_keys: set[tuple[str, str]] = set()
        self._leaders: set[str] = set()
        self._leaders_lock = threading.Lock()
        self._queued_lock = threading.Lock()
        self._handlers: dict[str, Callable[[events.Event], None]] = {
            events.ENQUEUED: self._enqueued,
            events.RUN_STARTED: self._run_started,
            events.RUNS_FINISHED: self._runs_finished,
            events.RESCUED: self._rescued,
            events.LEADERSHIP: self._leadership,
            events.CRON_ENQUEUED: self._cron_enqueued,
            events.QUEUED_GAUGE: self._queued_gauge,
            events.HELD_GAUGE: self._held_gauge,
            events.LATENCY_GAUGE: self._latency_gauge,
        }

    def __call__(self, event: events.Event) -> None:
        handler = self._handlers.get(event.name)
        if handler is not None:
            handler(event)

    def _child(self, metric: Any, *values: str) -> Any:
        key = (id(metric), *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def _kind(self, fields: dict[str, Any]) -> tuple[str, str]:
        return str(fields["queue"]), self.cap("kind", str(fields["kind"]))

    def _enqueued(self, event: events.Event) -> None:
        counter = self.enqueued if event.fields.get("inserted", True) else self.duplicates
        self._child(counter, *self._kind(event.fields)).inc(event.fields.get("count", 1))

    def _run_started(self, event: events.Event) -> None:
        fields = event.fields
        queue = fields["queue"]
        increment = self._running_children.get(queue)
        if increment is None:
            increment = self._running_children[queue] = _incrementer(
                self._child(self.running, str(queue))
            )
        self._running_runs[(fields["job_id"], fields["attempt"])] = True
        increment(1)

    def _runs_finished(self, event: events.Event) -> None:
        """The runs one write recorded (`RUNS_FINISHED`): each metric updated once per
        batch with what the batch adds, rather than once per run."""
        finished: dict[tuple[object, object, object], list[Any]] = {}
        running_runs = self._running_runs
        # A FinishedRun unpacked at once: cheaper than reading its fields one by one.
        for queue, kind, job_id, attempt, _, outcome, seconds, saved, _ in event["runs"]:
            key = (queue, kind, outcome)
            entry = finished.get(key)
            if entry is None:
                entry = finished[key] = [0, 0, 0, []]  # runs, seen starting, unsaved, seconds
            entry[0] += 1
            # Only a run seen starting is taken off the gauge: it never goes below zero.
            if running_runs.pop((job_id, attempt), None) is not None:
                entry[1] += 1
            # A fenced write that was refused is a `lost` run, not an unsaved one: only a
            # write that could not be made at all (the store failed past its patience) is.
            if saved is False and outcome != "lost":
                entry[2] += 1
            if seconds is not None:
                entry[3].append(seconds)
        for key, (runs, started, unsaved, seconds) in finished.items():
            children = self._finished_children.get(key)
            if children is None:
                queue, kind = str(key[0]), self.cap("kind", str(key[1]))
                children = self._finished_children[key] = (
                    self._child(self.finished, queue, kind, str(key[2])),
                    self._child(self.run_seconds, queue, kind),
                    self._child(self.running, queue),
                    self._child(self.unsaved, queue, kind),
                )
            finished_child, run_seconds, running, unsaved_child = children
            finished_child.inc(runs)
            if started:
                running.dec(started)
            if unsaved:
                unsaved_child.inc(unsaved)
            if seconds:
                _observe_all(run_seconds, seconds)

    def _rescued(self, event: events.Event) -> None:
        self._child(self.rescued, *self._kind(event.fields)).inc()

    def _leadership(self, event: events.Event) -> None:
        # The instances of this process that lead (a runtime's, jobs.step()'s): the gauge is 1
        # while any does. Set, not counted up and down, so that it never reads more than 1.
        instance = str(event.fields.get("instance", ""))
        with self._leaders_lock:
            if event["leader"]:
                self._leaders.add(instance)
            else:
                self._leaders.discard(instance)
            self.leader.set(1 if self._leaders else 0)

    def _cron_enqueued(self, event: events.Event) -> None:
        self._child(self.cron_enqueued, self.cap("name", str(event["name"]))).inc()

    def _queued_gauge(self, event: events.Event) -> None:
        counts: dict[str, dict[str, int]] = event["counts"]
        with self._queued_lock:
            current = {
                (queue, state): n for queue, states in counts.items() for state, n in states.items()
            }
            # A queue/state that emptied since the last count reads 0, not its old value.
            for key in self._queued_keys - current.keys():
                self.queued.labels(*key).set(0)
            for key, n in current.items():
                self.queued.labels(*key).set(n)
            self._queued_keys |= current.keys()

    def _held_gauge(self, event: events.Event) -> None:
        for queue, n in event["held"].items():
            self._child(self.held, str(queue)).set(n)

    def _latency_gauge(self, event: events.Event) -> None:
        for queue, seconds in event["latency"].items():
            self._child(self.queue_latency, str(queue)).set(seconds)


def _incrementer(child: Any) -> Callable[[float], None]:
    """What `child.inc` does, without its check that the labels are set (a child has them) and
    its call to the value: the value's own `inc` (prometheus-client keeps it in `_value`, a
    locked value or, in multiprocess mode, one written to the process's file). A client
    without it: `child.inc`."""
    value = getattr(child, "_value", None)
    inc = getattr(value, "inc", None)
    return inc if callable(inc) else child.inc


def _observe_all(histogram: Any, amounts: list[float]) -> None:
    """`histogram.observe(amount)` for each amount, with one update per bucket touched
    (prometheus-client's own buckets, as `observe` finds them: the first bound at or above
    the amount). A histogram without them (another client version) observes one by one."""
    bounds = getattr(histogram, "_upper_bounds", None)
    buckets = getattr(histogram, "_buckets", None)
    total = getattr(histogram, "_sum", None)
    if bounds is None or buckets is None or total is None or len(bounds) != len(buckets):
        for amount in amounts:
            histogram.observe(amount)
        return
    hits: dict[int, int] = {}
    for amount in amounts:
        if amount != amount:  # NaN: `observe` counts it in no bucket
            continue
        index = bisect.bisect_left(bounds, amount)
        hits[index] = hits.get(index, 0) + 1
    total.inc(sum(amounts))
    for index, count in hits.items():
        if index < len(buckets):
            buckets[index].inc(count)


#: The metrics of each registry, made once per process (see the module docstring).
_listeners: dict[str, MetricsListener] = {}
_private: Any = None
_setup_lock = threading.Lock()


def private_registry() -> Any:
    """The registry of anole_jobs' own, used with ``METRICS_REGISTRY="private"``."""
    global _private
    if prometheus_client is None:
        raise RuntimeError(f"prometheus-client is not installed ({INSTALL_HINT})")
    with _setup_lock:
        if _private is None:
            _private = CollectorRegistry(auto_describe=True)
        return _private


def _registry_named(name: str) -> Any:
    return prometheus_client.REGISTRY if name == "default" else private_registry()


def _drop_stale(registry: Any) -> None:
    """Unregister `anole_jobs` collectors an earlier copy of this module left in `registry`
    (a reloaded module), so registering ours again is not a duplicate."""
    names = getattr(registry, "_names_to_collectors", None)
    if not isinstance(names, dict):
        return
    stale = {
        collector
        for name, collector in list(names.items())
        if name.startswith(("anole_jobs_", "anole_cron_"))
    }
    for collector in stale:
        registry.unregister(collector)
    if stale:
        logger.info("replaced the anole_jobs metrics an earlier import registered")


def listener_for(settings: Settings) -> MetricsListener | None:
    """The listener keeping the metrics in the registry `settings` choose, made (and its
    metrics registered) on first use; None when metrics are off for `settings`."""
    if status(settings) is not None:
        return None
    name = settings.metrics_registry
    listener = _listeners.get(name)
    if listener is not None:
        return listener
    registry = _registry_named(name)
    with _setup_lock:
        listener = _listeners.get(name)
        if listener is None:
            _drop_stale(registry)
            listener = _listeners[name] = MetricsListener(registry)
    return listener


def register(settings: Settings) -> Any:
    """Register the metrics where `settings` say (idempotent); returns that registry, or None
    when metrics are off."""
    listener = listener_for(settings)
    return None if listener is None else listener.registry


def current_registry() -> Any:
    """The registry the configured settings keep the metrics in (registering them if needed;
    None when metrics are off)."""
    return register(read_settings())


def status(settings: Settings) -> str | None:
    """Why metrics are off for `settings`, or None when they are on."""
    if not settings.metrics:
        return "METRICS is False"
    if prometheus_client is None:
        return f"prometheus-client is not installed ({INSTALL_HINT})"
    return None


def explicitly_enabled() -> bool:
    """True when the project's settings ask for metrics in so many words (METRICS=True)."""
    raw = raw_settings()
    return isinstance(raw, dict) and raw.get("METRICS") is True


def observe(bus: events.EventBus, settings: Settings) -> Callable[[], None]:
    """Subscribe the app's metrics to `bus` when `settings` turn them on; returns the
    function that unsubscribes (a no-op when nothing was subscribed)."""
    listener = listener_for(settings)
    if listener is None:
        return _nothing
    # Each handler subscribed to its own event: an emit calls it directly, not through the
    # listener's dispatch by name (one call less for each run started).
    undo = [bus.subscribe(handler, name) for name, handler in listener._handlers.items()]

    def unsubscribe() -> None:
        for one in undo:
            one()

    return unsubscribe


def _nothing() -> None:
    return None


def exposition_registry() -> Any:
    """The registry to serve: the one the metrics live in (``METRICS_REGISTRY``), or, in
    multiprocess mode, one that reads every process's files."""
    if prometheus_client is None:
        raise RuntimeError(f"prometheus-client is not installed ({INSTALL_HINT})")
    if multiprocess_dir() is None:
        settings = read_settings()
        return register(settings) or _registry_named(settings.metrics_registry)
    from prometheus_client import multiprocess

    collecting = CollectorRegistry()
    multiprocess.MultiProcessCollector(collecting)
    return collecting


def render() -> tuple[bytes, str]:
    """The text exposition of the metrics and its content type."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return generate_latest(exposition_registry()), CONTENT_TYPE_LATEST


def serve(port: int, addr: str = "0.0.0.0") -> tuple[str, int]:
    """Serve `/metrics` over HTTP from a daemon thread; returns the address and the port
    (useful with port 0, which lets the system choose)."""
    if prometheus_client is None:
        raise RuntimeError(f"prometheus-client is not installed ({INSTALL_HINT})")
    server, _thread = prometheus_client.start_http_server(
        port, addr=addr, registry=exposition_registry()
    )
    return str(server.server_address[0]), int(server.server_port)


def process_exited(pid: int | None = None) -> None:
    """In multiprocess mode, drop the live gauges of process `pid` (default: this one), so
    a stopped worker no longer counts as running jobs or leading."""
    if prometheus_client is None or multiprocess_dir() is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(os.getpid() if pid is None else pid)
