"""Trace context (R33, R34): what a job carries from its enqueuer, and each run's span.

`inject_context` stores the enqueuer's context in a job's meta; the executor opens the run's
span. OpenTelemetry is optional (the `tracing` extra): without it, request headers and the
running job's context are still carried.
"""

from __future__ import annotations

import contextvars
import re
from typing import Any

TRACEPARENT_RE = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")

#: The (traceparent, tracestate) of the run executing in this context, if any.
current_run_context: contextvars.ContextVar[tuple[str, str | None] | None] = contextvars.ContextVar(
    "anole_jobs_run_context", default=None
)


def _otel_context() -> tuple[str, str | None] | None:
    try:
        from opentelemetry import trace
    except ImportError:
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

    Order: the current OpenTelemetry span; else the running job's span; else `request`'s
    `traceparent`/`tracestate` headers (R33).
    """
    if "traceparent" in meta:
        return
    context = _otel_context() or current_run_context.get() or _request_context(request)
    if context is None:
        return
    meta["traceparent"] = context[0]
    if context[1]:
        meta["tracestate"] = context[1]


class RunSpan:
    """One attempt's span. This no-op stands in until OpenTelemetry spans are built: it has
    no ids, `activate()` makes nothing current and `end()` records nothing."""

    trace_id: str | None = None
    span_id: str | None = None

    def activate(self) -> Any:
        """A context manager making the span current while the handler runs (in the
        handler's thread or async context); the no-op is its own, doing nothing."""
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def end(self, outcome: str, error_type: str | None) -> None:
        """Called once, when the run's outcome is final (after its fenced write)."""


def start_run_span(
    *,
    settings: Any,
    queue: str,
    kind: str,
    job_id: int,
    attempt: int,
    max_attempts: int,
    meta: Any,
) -> RunSpan:
    """The span of one attempt (R34); a no-op here."""
    return RunSpan()
