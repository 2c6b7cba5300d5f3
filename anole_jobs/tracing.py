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
    is off, OpenTelemetry is missing, or `sample_all=False` skips the run. It still makes the
    job's stored context current, so jobs enqueued by the handler carry it on (flags as they
    were)."""

    trace_id: str | None = None
    span_id: str | None = None

    def __init__(self, carried: tuple[str, str | None] | None = None) -> None:
        self._carried = carried

    def activate(self) -> AbstractContextManager[None]:
        """Make this run current while its handler runs (in the handler's thread)."""
        return _Activation(self._carried, None)

    def end(self, outcome: str, error_type: str | None) -> None:
        """Record the final outcome; called once, after the fenced write decided it."""


class _Activation:
    """Sets the carried context (and the run's span, when one is recorded) for one `with`
    block. A plain class, not a generator: it runs once per job, on the hot path."""

    __slots__ = ("_carried", "_span", "_tokens")

    def __init__(self, carried: tuple[str, str | None] | None, span: Any) -> None:
        self._carried = carried
        self._span = span
        self._tokens: tuple[Any, Any] | None = None

    def __enter__(self) -> None:
        run_token = current_run_context.set(self._carried)
        otel_token = None
        if self._span is not None:
            assert trace is not None and otel_context is not None
            otel_token = otel_context.attach(trace.set_span_in_context(self._span))
        self._tokens = (run_token, otel_token)

    def __exit__(self, *exc_info: object) -> None:
        assert self._tokens is not None
        run_token, otel_token = self._tokens
        if otel_token is not None:
            assert otel_context is not None
            otel_context.detach(otel_token)
        current_run_context.reset(run_token)


class _RecordedRunSpan(RunSpan):
    def __init__(self, span: Any, carried: tuple[str, str | None] | None) -> None:
        super().__init__(carried)
        self._span = span
        self._ended = False
        span_context = span.get_span_context()
        if span_context.is_valid:
            self.trace_id = f"{span_context.trace_id:032x}"
            self.span_id = f"{span_context.span_id:016x}"

    def activate(self) -> AbstractContextManager[None]:
        # The run's own span is what jobs enqueued by the handler carry; the stored
        # context stays in `current_run_context` for a span the sampler did not record.
        return _Activation(self._carried, self._span)

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
        if _provider_shut_down():
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


def _provider_shut_down() -> bool:
    """Whether the SDK provider's span processors have all shut down. The OpenTelemetry API
    has no public flag for it; the SDK keeps one per processor."""
    if trace is None:
        return False
    provider = trace.get_tracer_provider()
    multi = getattr(provider, "_active_span_processor", None)
    processors = getattr(multi, "_span_processors", None)
    if not processors:
        return False
    return all(_processor_shut_down(processor) for processor in processors)


def _processor_shut_down(processor: object) -> bool:
    if getattr(processor, "_shutdown", False) is True:
        return True
    inner = getattr(processor, "_batch_processor", None)  # BatchSpanProcessor (SDK >= 1.28)
    return getattr(inner, "_shutdown", False) is True


def _stored_context(meta: object) -> tuple[str, str | None] | None:
    # A stored row's meta is not trusted to be an object: a malformed one carries no context
    # (and the run goes on to be discarded for its own reasons), never an error here.
    if not isinstance(meta, Mapping):
        return None
    parent = meta.get("traceparent")
    if not isinstance(parent, str) or not TRACEPARENT_RE.match(parent):
        return None
    state = meta.get("tracestate")
    return parent, state if isinstance(state, str) and state else None


def _link(carried: tuple[str, str | None]) -> Any:
    assert trace is not None
    _version, trace_id, span_id, flags = carried[0].split("-")
    span_context = trace.SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=trace.TraceFlags(int(flags, 16)),
        trace_state=trace.TraceState.from_header([carried[1]]) if carried[1] else None,
    )
    return trace.Link(span_context) if span_context.is_valid else None


_tracer_cache: tuple[object, Any] | None = None


def _tracer() -> Any:
    """The app's tracer from the current global provider, cached while that provider stays
    the same (an SDK `get_tracer` builds a new tracer each call: too slow per run)."""
    global _tracer_cache
    assert trace is not None
    provider = trace.get_tracer_provider()
    cached = _tracer_cache
    if cached is not None and cached[0] is provider:
        return cached[1]
    tracer = trace.get_tracer(TRACER_NAME, tracer_provider=provider)
    # A proxy provider (none set yet) hands out a proxy tracer that follows the real one.
    _tracer_cache = (provider, tracer)
    return tracer


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
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # No provider configured (yet): its tracer records nothing, so skip the no-op span
        # and its context switches; this runs once per job.
        return RunSpan(carried)
    link = _link(carried) if carried is not None else None
    assert otel_context is not None
    span = _tracer().start_span(
        f"process {queue}",
        context=otel_context.Context(),  # empty: a trace of its own, whatever is current
        kind=trace.SpanKind.CONSUMER,
        links=[link] if link is not None else None,
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
    return _RecordedRunSpan(span, carried)
