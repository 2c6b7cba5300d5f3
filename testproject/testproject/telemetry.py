"""Traces for the test project: every request (opentelemetry-instrumentation-django) and every
job run (anole_jobs' `process <queue>` spans) go to an exporter.

- ``OTEL_EXPORTER_OTLP_ENDPOINT`` set (e.g. ``http://127.0.0.1:4318``): OTLP over HTTP, to a
  collector, Jaeger or Tempo (needs ``opentelemetry-exporter-otlp-proto-http``);
- otherwise one line per span on stderr (the console exporter, compact);
- ``TRACES=off``: none.

Without the OpenTelemetry SDK installed nothing is set up; the app runs the same.
"""

from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger("testproject")


def one_line(span: object) -> str:
    """`span` as one readable line: name, ids, the trace it links to, outcome."""
    context = span.get_span_context()  # type: ignore[attr-defined]
    links = [f"{link.context.trace_id:032x}" for link in span.links]  # type: ignore[attr-defined]
    attributes = dict(span.attributes or {})  # type: ignore[attr-defined]
    outcome = (
        attributes.get("anole.job.outcome")
        or attributes.get("http.status_code")
        or attributes.get("http.response.status_code")
    )
    return (
        f"span {span.name!r} trace={context.trace_id:032x} span={context.span_id:016x}"  # type: ignore[attr-defined]
        f"{' links=' + ','.join(links) if links else ''} -> {outcome}\n"
    )


def setup_tracing() -> None:
    if os.environ.get("TRACES", "").lower() == "off":
        return
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError:
        return
    if isinstance(trace.get_tracer_provider(), TracerProvider):
        return  # already set up (ready() runs once per process, but be safe)
    provider = TracerProvider(resource=Resource.create({"service.name": "anole-testproject"}))
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        exporter = ConsoleSpanExporter(out=sys.stderr, formatter=one_line)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    try:
        from opentelemetry.instrumentation.django import DjangoInstrumentor
    except ImportError:
        logger.info("opentelemetry-instrumentation-django is not installed: no request spans")
        return
    DjangoInstrumentor().instrument()
