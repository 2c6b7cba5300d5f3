"""Trace context (docs/observability.md): what a job carries from its enqueuer, and each run's
span.

`inject_context` stores the enqueuer's context in a job's meta at enqueue. `start_run_span`
opens the span of one attempt: `process <queue>`, kind CONSUMER, a new trace of its own,
*linked* (not parented) to the stored context, so a job that runs an hour later, or retries
for a day, does not stretch the enqueuer's trace. The attempt pipeline calls it before the
handler, makes the span current while the handler runs (`RunSpan.activate`), and ends it once
the outcome is final (`RunSpan.end`).

OpenTelemetry is optional (the `tracing` extra). Without it, or with `TRACING=False`, runs
open no span, but request headers and the running job's stored context are still carried to
the jobs it enqueues.

Leaf module: imports nothing from the app but `conf` (for the settings type).
"""

from __future__ import annotations

import contextvars
import logging
import re
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anole_jobs.conf import Settings

logger = logging.getLogger("anole_jobs.tracing")

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
except ImportError:  # the `tracing` extra is optional
    trace = None  # type: ignore[assignment]
    otel_context = None  # type: ignore[assignment]

TRACEPARENT_RE = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
INSTALL_HINT = 'install the tracing extra: pip install "/path/to/anole_jobs[tracing]"'
TRACER_NAME = "anole_jobs"
#: Outcomes whose cancel is not a failure: their span carries no error and no ERROR status.
NOT_FAILURES = frozenset({"completed", "snoozed", "interrupted", "lost"})

#: The (traceparent, tracestate) of the run executing in this context, if any.
current_run_context: contextvars.ContextVar[tuple[str, str | None] | None] = contextvars.ContextVar(
    "anole_jobs_run_context", default=None
)


def available() -> bool:
    """True when the OpenTelemetry API can be imported."""
    return trace is not None


def status(settings: Settings) -> str | None:
    """Why run spans are off for `settings`, or None when they are on."""
    if not settings.tracing:
        return "TRACING is False"
    if trace is None:
        return f"opentelemetry-api is not installed ({INSTALL_HINT})"
    return None


# -- enqueue side: the enqueuer's context goes into the job's meta -----------------------------
def _otel_context() -> tuple[str, str | None] | None:
    if trace is None:
        return None
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    flags = int(span_context.trace_flags)
    parent = f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-{flags:02x}"
    state = span_context.trace_state.to_header() if span_context.trace_state else None
    return parent, state or None


def _request_context(request: object | None) -> tuple[str, str | None] | None:
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    parent = headers.get("traceparent")
    if not isinstance(parent, str) or not TRACEPARENT_RE.match(parent.strip().lower()):
        return None
    state = headers.get("tracestate")
    return parent.strip().lower(), state.strip() if isinstance(state, str) and state else None


def inject_context(meta: dict[str, Any], request: object | None) -> None:
    """Put the enqueuer's trace context in `meta`, unless `meta` already sets a traceparent.

    Order: the current OpenTelemetry span (inside a run, that run's span); else the running
    job's carried context; else `request`'s `traceparent`/`tracestate` headers.
    """
    if "traceparent" in meta:
        return
    context = _otel_context() or current_run_context.get() or _request_context(request)
    if context is None:
        return
    meta["traceparent"] = context[0]
    if context[1]:
        meta["tracestate"] = context[1]


# -- run side: one span per attempt, linked to the carried context ----------------------------
class RunSpan:
    """One attempt's span. This base class records nothing: it is what runs get when tracing
    is off, OpenTelemetry is missing, no tracer provider is set, or `sample_all=False` skips
    the run. It still makes the job's stored context current, so jobs enqueued by the handler
    carry it on (flags as they were).

    `activate()` returns the span itself as the context manager of the handler's `with`
    block (entered once per run): no other object is made per run for it."""

    __slots__ = ("_carried", "_run_token", "span_id", "trace_id")

    def __init__(self, carried: tuple[str, str | None] | None = None) -> None:
        self._carried = carried
        self._run_token: contextvars.Token[tuple[str, str | None] | None] | None = None
        #: The run span's ids as hex (32 and 16 digits), None when no span is recorded.
        self.trace_id: str | None = None
        self.span_id: str | None = None

    def activate(self) -> AbstractContextManager[None]:
        """Make this run current while its handler runs (in the handler's thread)."""
        return self

    def __enter__(self) -> None:
        self._run_token = current_run_context.set(self._carried)

    def __exit__(self, *exc_info: object) -> None:
        assert self._run_token is not None
        current_run_context.reset(self._run_token)

    def end(self, outcome: str, error_type: str | None) -> None:
        """Record the final outcome; called once, after the fenced write decided it."""


class _RecordedRunSpan(RunSpan):
    __slots__ = ("_ended", "_otel_token", "_provider", "_span")

    def __init__(
        self, span: Any, carried: tuple[str, str | None] | None, provider: _Provider
    ) -> None:
        self._carried = carried
        self._run_token = None
        self._span = span
        self._provider = provider
        self._ended = False
        self._otel_token: Any = None
        # A SpanContext is a tuple: (trace_id, span_id, is_remote, flags, state, is_valid).
        span_context = span.get_span_context()
        if span_context[5]:
            self.trace_id = f"{span_context[0]:032x}"
            self.span_id = f"{span_context[1]:016x}"
        else:
            self.trace_id = self.span_id = None

    def __enter__(self) -> None:
        # The run's own span is what jobs enqueued by the handler carry; the stored
        # context stays in `current_run_context` for a span the sampler did not record.
        assert trace is not None and otel_context is not None
        self._run_token = current_run_context.set(self._carried)
        self._otel_token = otel_context.attach(trace.set_span_in_context(self._span))

    def __exit__(self, *exc_info: object) -> None:
        assert otel_context is not None and self._run_token is not None
        otel_context.detach(self._otel_token)
        current_run_context.reset(self._run_token)

    def end(self, outcome: str, error_type: str | None) -> None:
        assert trace is not None
        if self._ended:  # once per run; a second call (a stray duplicate) changes nothing
            return
        self._ended = True
        span = self._span
        span.set_attribute("anole.job.outcome", outcome)
        if error_type and outcome not in NOT_FAILURES:
            span.set_attribute("error.type", error_type)
            span.set_status(trace.Status(trace.StatusCode.ERROR))
        if self._provider.shut_down():
            dropped.add()
            return
        try:
            span.end()
        except Exception:  # noqa: BLE001 - a tracing failure must never reach the job
            dropped.add()


class DroppedSpans:
    """Counts run spans that ended after the tracer provider shut down (a drain that outlasts
    the app's exporter): they are dropped, logged once, and never raise into the runtime."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def add(self) -> None:
        with self._lock:
            self.count += 1
            first = self.count == 1
        if first:
            logger.warning(
                "a run's span ended after the tracer provider shut down; it is dropped "
                "(tracing.dropped.count counts them)"
            )


dropped = DroppedSpans()


class _Provider:
    """What runs need from one global tracer provider, looked up once for it: its tracer
    (an SDK `get_tracer` builds a new tracer each call: too slow per run), whether it records
    at all, the span name of each queue, and where its span processors keep their shut-down
    flags."""

    __slots__ = ("_checked", "_flags", "_multi", "names", "provider", "tracer", "unset")

    def __init__(self, provider: object) -> None:
        assert trace is not None
        self.provider = provider
        # No provider set yet (a proxy), or the API's no-op one: spans would record nothing,
        # so runs skip them and their context switches. A provider set later is seen at once.
        recording = not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))
        self.tracer: Any = (
            trace.get_tracer(TRACER_NAME, tracer_provider=provider) if recording else None  # type: ignore[arg-type]
        )
        self.names: dict[str, str] = {}
        #: True for the API's proxy while no provider is set (see `_provider`).
        self.unset = False
        self._multi = getattr(provider, "_active_span_processor", None)
        self._checked: object = None
        self._flags: tuple[tuple[object, object], ...] = ()

    def shut_down(self) -> bool:
        """Whether the SDK provider's span processors have all shut down. The OpenTelemetry API
        has no public flag for it; the SDK keeps one per processor (a `BatchSpanProcessor`
        from SDK 1.28 on, in its inner batch processor)."""
        processors = getattr(self._multi, "_span_processors", None)
        if processors is not self._checked:  # the SDK replaces the tuple when one is added
            self._checked = processors
            self._flags = tuple(
                (processor, getattr(processor, "_batch_processor", None))
                for processor in processors or ()
            )
        if not self._flags:
            return False
        for processor, inner in self._flags:
            if (
                getattr(processor, "_shutdown", False) is not True
                and getattr(inner, "_shutdown", False) is not True
            ):
                return False
        return True


_provider_cache: _Provider | None = None
#: Whether the API keeps its global provider where `_provider` reads it (else it asks the API).
_GLOBAL_READABLE = trace is not None and hasattr(trace, "_TRACER_PROVIDER")


def _provider() -> _Provider:
    """The current global provider's `_Provider`, kept while that provider stays the same.

    Read from the API's global without `get_tracer_provider()`'s environment lookup on every
    run. While none is set, the API answers with its proxy unless the environment names a
    provider (`OTEL_PYTHON_TRACER_PROVIDER`, which it then loads and sets at once): asked once,
    that answer stands until a provider is set, which is seen at the next run."""
    global _provider_cache
    assert trace is not None
    cached = _provider_cache
    provider = trace._TRACER_PROVIDER if _GLOBAL_READABLE else None  # noqa: SLF001
    if provider is None:
        if _GLOBAL_READABLE and cached is not None and cached.unset:
            return cached
        provider = trace.get_tracer_provider()
    if cached is not None and cached.provider is provider:
        return cached
    cached = _provider_cache = _Provider(provider)
    cached.unset = _GLOBAL_READABLE and trace._TRACER_PROVIDER is None  # noqa: SLF001
    return cached


def _stored_context(meta: object) -> tuple[str, str | None] | None:
    # A stored row's meta is not trusted to be an object: a malformed one carries no context
    # (and the run goes on to be discarded for its own reasons), never an error here.
    if type(meta) is not dict and not isinstance(meta, Mapping):
        return None
    parent = meta.get("traceparent")
    if parent is None or not isinstance(parent, str) or not TRACEPARENT_RE.match(parent):
        return None
    state = meta.get("tracestate")
    return parent, state if isinstance(state, str) and state else None


#: The links to the enqueuers' contexts parsed lately (None: an all-zero id, no link): the
#: jobs of one batch, or of one handler's enqueues, carry the same context. Bounded: emptied
#: when full. A link is shared by the spans that take it: it holds only the enqueuer's span
#: context (immutable) and no attributes (the SDK gives each span's links an empty,
#: immutable set of them).
_links: dict[tuple[str, str | None], Any] = {}
LINKS_MAX = 256
_NO_LINK = object()


def _link(carried: tuple[str, str | None]) -> Any:
    link = _links.get(carried, _NO_LINK)
    if link is _NO_LINK:
        assert trace is not None
        parent, state = carried  # checked: 00-<32 hex>-<16 hex>-<2 hex>
        flags = _FLAGS.get(parent[53:])
        span_context = trace.SpanContext(
            int(parent[3:35], 16),
            int(parent[36:52], 16),
            True,  # remote
            flags if flags is not None else trace.TraceFlags(int(parent[53:], 16)),
            trace.TraceState.from_header([state]) if state else None,
        )
        link = trace.Link(span_context) if span_context.is_valid else None
        if len(_links) >= LINKS_MAX:
            _links.clear()
        _links[carried] = link
    return link


def _sampled(carried: tuple[str, str | None] | None) -> bool:
    return carried is not None and int(carried[0][-2:], 16) & 0x01 == 0x01


def start_run_span(
    *,
    settings: Settings,
    queue: str,
    kind: str,
    job_id: int,
    attempt: int,
    max_attempts: int,
    meta: Mapping[str, Any],
) -> RunSpan:
    """Open the span of one attempt; see the module docstring."""
    carried = _stored_context(meta)
    if trace is None or not settings.tracing:
        return RunSpan(carried)
    if not settings.sample_all and not _sampled(carried):
        # Recorded only when the enqueuer's context was sampled (no context: not recorded).
        return RunSpan(carried)
    provider = _provider()
    if provider.tracer is None:
        return RunSpan(carried)
    link = _link(carried) if carried is not None else None
    name = provider.names.get(queue)
    if name is None:
        name = provider.names[queue] = f"process {queue}"
    span = provider.tracer.start_span(
        name,
        context=_EMPTY,  # a trace of its own, whatever is current
        kind=_CONSUMER,
        links=(link,) if link is not None else None,
        attributes={
            "messaging.system": "anole",
            "messaging.destination.name": queue,
            "messaging.operation.type": "process",
            "messaging.message.id": str(job_id),
            "anole.job.kind": kind,
            "anole.job.attempt": attempt,
            "anole.job.max_attempts": max_attempts,
        },
    )
    return _RecordedRunSpan(span, carried, provider)


if otel_context is not None and trace is not None:
    _EMPTY = otel_context.Context()  # never changed: one for every run
    _CONSUMER = trace.SpanKind.CONSUMER
    _FLAGS = {"00": trace.TraceFlags(0), "01": trace.TraceFlags(1)}
