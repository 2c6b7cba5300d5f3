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
    instrumentor = DjangoInstrumentor()
    instrumentor.instrument()
    use_wsgi_path(instrumentor)


def use_wsgi_path(instrumentor: object) -> None:
    """Put `WsgiPathMiddleware` where the instrumentor put its own middleware."""
    from django.conf import settings

    name = instrumentor._opentelemetry_middleware  # type: ignore[attr-defined]
    middleware = list(settings.MIDDLEWARE)
    if name in middleware:
        middleware[middleware.index(name)] = "testproject.telemetry.WsgiPathMiddleware"
        settings.MIDDLEWARE = middleware


def _wsgi_form(path: str) -> str:
    """A path as a WSGI server hands it over: its UTF-8 bytes read as Latin-1."""
    return path.encode("utf-8", "surrogateescape").decode("latin-1")


try:
    from opentelemetry.instrumentation.django.middleware.otel_middleware import (
        _DjangoMiddleware,
    )
except ImportError:  # pragma: no cover - without the instrumentation, no request spans
    pass
else:

    class WsgiPathMiddleware(_DjangoMiddleware):  # type: ignore[misc]
        """The instrumentation's middleware, reading the request's path in its WSGI form.

        Django replaces ``PATH_INFO`` in ``request.META`` with the decoded path (``/€``),
        which the instrumentation quotes as Latin-1 to build the span's URL: any path with a
        character outside Latin-1 raised, and the request answered 500."""

        def process_request(self, request: object) -> None:
            meta = request.META  # type: ignore[attr-defined]
            decoded = {key: meta[key] for key in ("PATH_INFO", "SCRIPT_NAME") if key in meta}
            meta.update({key: _wsgi_form(value) for key, value in decoded.items()})
            try:
                super().process_request(request)
            finally:
                meta.update(decoded)
