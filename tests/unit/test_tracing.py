"""Trace context at enqueue and one span per attempt (docs/observability.md), recorded by the
OpenTelemetry SDK's in-memory exporter.

Each test installs a fresh SDK `TracerProvider` as the global one (restored afterwards), with a
parent-based sampler as most projects configure it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.http import HttpRequest, JsonResponse
from django.test import Client
from django.urls import path
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from anole_jobs import jobs, tracing
from tests.sampleapp.e2e_jobs import SleepPastTimeout
from tests.sampleapp.jobs import Work
from tests.unit.obs_support import WAIT, Finished, auto, hook  # noqa: F401 - auto: a fixture

ENQUEUER_TRACE = "0af7651916cd43dd8448eb211c80319c"
ENQUEUER_SPAN = "b7ad6b7169203331"
SAMPLED = f"00-{ENQUEUER_TRACE}-{ENQUEUER_SPAN}-01"
UNSAMPLED = f"00-{ENQUEUER_TRACE}-{ENQUEUER_SPAN}-00"
STATE = "vendor=abc,other=1"


@dataclass
class Traces:
    exporter: InMemorySpanExporter
    provider: TracerProvider

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def runs(self) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith("process ")]


@pytest.fixture
def traces(monkeypatch: Any) -> Iterator[Traces]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield Traces(exporter, provider)
    provider.shutdown()


@pytest.fixture
def manual(env: Any, traces: Traces) -> Any:
    return env


def hex_ids(span: Any) -> tuple[str, str]:
    context = span if isinstance(span, trace.SpanContext) else span.get_span_context()
    return f"{context.trace_id:032x}", f"{context.span_id:016x}"


# -- the span ------------------------------------------------------------------------------
@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_a_run_is_one_consumer_span_linked_to_its_enqueuer(manual: Any, traces: Traces) -> None:
    job_id = jobs.enqueue(Work(), meta={"traceparent": SAMPLED, "tracestate": STATE}).id
    jobs.step()
    (span,) = traces.runs()
    assert span.name == "process default"
    assert span.kind is SpanKind.CONSUMER
    assert span.parent is None  # a trace of its own ...
    assert hex_ids(span)[0] != ENQUEUER_TRACE
    (link,) = span.links  # ... linked to the enqueuer's context, with its tracestate
    assert hex_ids(link.context) == (ENQUEUER_TRACE, ENQUEUER_SPAN)
    assert link.context.trace_flags.sampled
    assert link.context.trace_state.to_header() == STATE
    assert dict(span.attributes) == {
        "messaging.system": "anole",
        "messaging.destination.name": "default",
        "messaging.operation.type": "process",
        "messaging.message.id": str(job_id),
        "anole.job.kind": "test.work",
        "anole.job.attempt": 1,
        "anole.job.max_attempts": 3,
        "anole.job.outcome": "completed",
    }
    assert span.status.status_code is StatusCode.UNSET


def _outcome_span(traces: Traces, args: Any) -> ReadableSpan:
    job_id = jobs.enqueue(args).id
    jobs.step()
    (span,) = [s for s in traces.runs() if s.attributes["messaging.message.id"] == str(job_id)]
    return span


def test_outcomes_errors_and_status(manual: Any, traces: Traces) -> None:
    class Boom(Exception):
        pass

    def lose_it(job: Any, args: Any) -> None:
        jobs.cancel(job.id)

    def boom(job: Any, args: Any) -> None:
        raise Boom("no")

    expected = [
        (Work(action="fail"), "retried", "ValueError"),
        (Work(action=hook(boom)), "retried", f"{__name__}.{Boom.__qualname__}"),
        (Work(action="discard"), "dead", "Discarded"),
        (Work(action="snooze", seconds=60), "snoozed", None),
        (Work(action=hook(lose_it)), "lost", None),
        (Work(action="ok"), "completed", None),
    ]
    for args, outcome, error_type in expected:
        span = _outcome_span(traces, args)
        assert span.attributes["anole.job.outcome"] == outcome
        assert span.attributes.get("error.type") == error_type
        failed = StatusCode.ERROR if error_type else StatusCode.UNSET
        assert span.status.status_code is failed, (outcome, span.status)


def test_each_attempt_is_a_new_trace(manual: Any, traces: Traces) -> None:
    jobs.enqueue(Work(action="fail"), meta={"traceparent": SAMPLED})
    for _ in range(3):
        jobs.step()
        manual.clock.advance(24 * 3600)
    spans = sorted(traces.runs(), key=lambda s: s.attributes["anole.job.attempt"])
    assert [s.attributes["anole.job.attempt"] for s in spans] == [1, 2, 3]
    assert [s.attributes["anole.job.outcome"] for s in spans] == ["retried", "retried", "dead"]
    assert len({hex_ids(s)[0] for s in spans}) == 3
    assert all(hex_ids(s.links[0].context) == (ENQUEUER_TRACE, ENQUEUER_SPAN) for s in spans)


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_no_enqueuer_context_means_no_link(manual: Any, traces: Traces) -> None:
    job_id = jobs.enqueue(Work()).id
    assert "traceparent" not in jobs.get(job_id).meta
    jobs.step()
    (span,) = traces.runs()
    assert span.links == ()


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_the_handler_sees_its_span_and_jobs_it_enqueues_carry_it(
    manual: Any, traces: Traces
) -> None:
    seen: dict[str, Any] = {}

    def enqueue_child(job: Any, args: Any) -> None:
        seen["ids"] = (job.trace_id, job.span_id)
        seen["stored"] = job.traceparent(), job.tracestate()
        seen["child"] = jobs.enqueue(Work(tag="child")).id

    jobs.enqueue(
        Work(action=hook(enqueue_child)), meta={"traceparent": SAMPLED, "tracestate": STATE}
    )
    jobs.step()
    (span,) = traces.runs()
    assert seen["ids"] == hex_ids(span)
    assert seen["stored"] == (SAMPLED, STATE)
    child = jobs.get(seen["child"])
    trace_id, span_id = hex_ids(span)
    flags = int(span.context.trace_flags)  # sampled, and W3C level 2's random flag if set
    assert flags & 0x01
    assert child.meta["traceparent"] == f"00-{trace_id}-{span_id}-{flags:02x}"


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_a_meta_with_its_own_traceparent_is_left_alone(manual: Any, traces: Traces) -> None:
    tracer = traces.provider.get_tracer("test")
    with tracer.start_as_current_span("caller"):
        job_id = jobs.enqueue(Work(), meta={"traceparent": UNSAMPLED}).id
        other_id = jobs.enqueue(Work()).id
    assert jobs.get(job_id).meta == {"traceparent": UNSAMPLED}
    (caller,) = traces.spans("caller")
    trace_id, span_id = hex_ids(caller)
    flags = int(caller.context.trace_flags)
    assert jobs.get(other_id).meta == {"traceparent": f"00-{trace_id}-{span_id}-{flags:02x}"}


# -- sampling ------------------------------------------------------------------------------
@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_sample_all_false_records_only_runs_whose_enqueuer_was_sampled(
    manual: Any, traces: Traces
) -> None:
    manual.configure(TRACING={"sample_all": False})
    children: dict[int, int] = {}

    def enqueue_child(job: Any, args: Any) -> None:
        assert job.trace_id is None or job.traceparent() == SAMPLED
        children[job.id] = jobs.enqueue(Work(tag="child")).id

    action = hook(enqueue_child)
    sampled = jobs.enqueue(Work(action=action), meta={"traceparent": SAMPLED}).id
    unsampled = jobs.enqueue(Work(action=action), meta={"traceparent": UNSAMPLED}).id
    bare = jobs.enqueue(Work(action=action)).id
    jobs.step()
    (span,) = [s for s in traces.runs() if s.attributes["anole.job.kind"] == "test.work"]
    assert span.attributes["messaging.message.id"] == str(sampled)
    # An unsampled run passes its enqueuer's context on as it was (-00); none stays none.
    assert jobs.get(children[unsampled]).meta == {"traceparent": UNSAMPLED}
    assert "traceparent" not in jobs.get(children[bare]).meta


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_sample_all_records_unsampled_enqueuers_too(manual: Any, traces: Traces) -> None:
    jobs.enqueue(Work(), meta={"traceparent": UNSAMPLED})
    jobs.step()
    (span,) = traces.runs()
    assert not span.links[0].context.trace_flags.sampled


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_tracing_off_records_nothing_but_carries_the_context(manual: Any, traces: Traces) -> None:
    manual.configure(TRACING=False)
    seen: dict[str, Any] = {}

    def enqueue_child(job: Any, args: Any) -> None:
        seen["ids"] = (job.trace_id, job.span_id)
        seen["child"] = jobs.enqueue(Work(tag="child")).id

    jobs.enqueue(
        Work(action=hook(enqueue_child)), meta={"traceparent": SAMPLED, "tracestate": STATE}
    )
    jobs.step()
    assert traces.runs() == []
    assert seen["ids"] == (None, None)
    assert jobs.get(seen["child"]).meta == {"traceparent": SAMPLED, "tracestate": STATE}


# -- the runtime: timeouts, drains, a provider shut down -----------------------------------
def test_a_timeout_is_error_type_timeout(auto: Finished, traces: Traces) -> None:  # noqa: F811
    jobs.enqueue(SleepPastTimeout(seconds=WAIT))
    jobs.start()
    (finished,) = auto.wait(1)
    assert finished["outcome"] == "dead"
    jobs.stop()
    (span,) = traces.runs()
    assert span.attributes["error.type"] == "Timeout"
    assert span.status.status_code is StatusCode.ERROR


def test_a_drained_run_is_interrupted_without_error(auto: Finished, traces: Traces) -> None:  # noqa: F811
    started = threading.Event()
    ended = threading.Event()

    def blocks(job: Any, args: Any) -> None:
        started.set()
        try:
            job.sleep(WAIT)
        finally:
            ended.set()

    jobs.enqueue(Work(action=hook(blocks)), meta={"traceparent": SAMPLED})
    jobs.start()
    assert started.wait(WAIT)
    jobs.stop(drain=True)
    assert [e["outcome"] for e in auto.wait(1)] == ["interrupted"]
    assert ended.wait(WAIT)
    span = _wait_span(traces)
    assert span.attributes["anole.job.outcome"] == "interrupted"
    assert "error.type" not in span.attributes
    assert span.status.status_code is StatusCode.UNSET


def _wait_span(traces: Traces) -> ReadableSpan:
    # The slot thread ends the span just after the handler returns.
    done = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if traces.runs():
            break
        done.wait(0.01)
    (span,) = traces.runs()
    return span


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_a_span_ending_after_the_provider_shut_down_is_dropped_and_counted(
    manual: Any, traces: Traces
) -> None:
    def shut_down(job: Any, args: Any) -> None:
        traces.provider.shutdown()  # the app freed its exporter while the run went on

    before = tracing.dropped.count
    jobs.enqueue(Work(action=hook(shut_down)))
    report = jobs.step()
    assert [run.outcome for run in report.runs] == ["completed"]
    assert traces.runs() == []
    assert tracing.dropped.count == before + 1


# -- from a Django request -----------------------------------------------------------------
def enqueue_view(request: HttpRequest) -> JsonResponse:
    current = trace.get_current_span().get_span_context()
    job_id = jobs.enqueue(Work(tag="from a request"), request=request).id
    return JsonResponse(
        {"job": job_id, "span": f"{current.span_id:016x}", "sampled": current.trace_flags.sampled}
    )


urlpatterns = [path("enqueue", enqueue_view)]


@pytest.fixture
def instrumented(settings: Any, traces: Traces) -> Iterator[None]:
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    settings.MIDDLEWARE = list(settings.MIDDLEWARE)  # restored by the fixture afterwards
    instrumentor = DjangoInstrumentor()
    instrumentor.instrument(tracer_provider=traces.provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("env", ["memory"], indirect=True)
@pytest.mark.parametrize("sample_all", [True, False])
@pytest.mark.parametrize("flags", ["01", "00"])
def test_a_traced_request_passes_its_span_on_sampled_or_not(
    manual: Any, traces: Traces, instrumented: None, sample_all: bool, flags: str
) -> None:
    manual.configure(TRACING={"sample_all": sample_all})
    header = f"00-{ENQUEUER_TRACE}-{ENQUEUER_SPAN}-{flags}"
    answer = Client().get("/enqueue", HTTP_TRACEPARENT=header, HTTP_TRACESTATE=STATE).json()
    assert answer["sampled"] is (flags == "01")
    server_span = answer["span"]
    assert server_span != ENQUEUER_SPAN  # the request's own span, not the caller's
    meta = jobs.get(answer["job"]).meta
    assert meta == {
        "traceparent": f"00-{ENQUEUER_TRACE}-{server_span}-{flags}",
        "tracestate": STATE,
    }
    jobs.step()
    runs = traces.runs()
    if flags == "00" and not sample_all:
        assert runs == []
        return
    (run,) = runs
    assert hex_ids(run.links[0].context) == (ENQUEUER_TRACE, server_span)
    assert run.links[0].context.trace_flags.sampled is (flags == "01")
    assert run.links[0].context.trace_state.to_header() == STATE
    if flags == "01":
        (server,) = [s for s in traces.spans() if s.kind is SpanKind.SERVER]
        assert hex_ids(server) == (ENQUEUER_TRACE, server_span)


@pytest.mark.urls(__name__)
@pytest.mark.parametrize("env", ["memory"], indirect=True)
@pytest.mark.parametrize("flags", ["01", "00"])
def test_a_bare_traceparent_header_is_stored_as_it_came(
    manual: Any, traces: Traces, flags: str
) -> None:
    header = f"00-{ENQUEUER_TRACE}-{ENQUEUER_SPAN}-{flags}"
    answer = Client().get("/enqueue", HTTP_TRACEPARENT=header, HTTP_TRACESTATE=STATE).json()
    assert jobs.get(answer["job"]).meta == {"traceparent": header, "tracestate": STATE}
    jobs.step()
    (run,) = traces.runs()
    assert hex_ids(run.links[0].context) == (ENQUEUER_TRACE, ENQUEUER_SPAN)


# -- the run path's shortcuts: what is looked up once keeps each run's span right ------------
def _parent(span_id: int, flags: str = "01", trace_id: str = ENQUEUER_TRACE) -> str:
    return f"00-{trace_id}-{span_id:016x}-{flags}"


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_each_run_links_to_its_own_enqueuer_through_the_parsed_links(
    manual: Any, traces: Traces, monkeypatch: Any
) -> None:
    monkeypatch.setattr(tracing, "LINKS_MAX", 2)  # the cache empties itself along the way
    monkeypatch.setattr(tracing, "_links", {})
    batch = jobs.enqueue_many([Work(tag=str(i)) for i in range(3)], meta={"traceparent": SAMPLED})
    expected = {job.id: (ENQUEUER_SPAN, None, True) for job in batch}
    # The same parent with and without a tracestate; W3C's random flag (02) beside sampled.
    for i, (flags, state) in enumerate([("01", None), ("01", STATE), ("03", "a=1"), ("00", STATE)]):
        meta = {"traceparent": _parent(0x1000 + i // 2, flags)}
        if state:
            meta["tracestate"] = state
        job_id = jobs.enqueue(Work(tag=f"own {i}"), meta=meta).id
        expected[job_id] = (f"{0x1000 + i // 2:016x}", state, flags != "00")
    jobs.step()
    seen = {}
    for span in traces.runs():
        (link,) = span.links
        assert hex_ids(link.context)[0] == ENQUEUER_TRACE
        assert link.context.is_remote
        state = link.context.trace_state.to_header() or None
        seen[int(span.attributes["messaging.message.id"])] = (
            hex_ids(link.context)[1],
            state,
            link.context.trace_flags.sampled,
        )
        assert dict(link.attributes) == {}
    assert seen == expected
    assert len(tracing._links) <= 2


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_an_all_zero_enqueuer_context_gives_no_link_every_time(manual: Any, traces: Traces) -> None:
    zero = _parent(0x1, trace_id="0" * 32)  # well formed, but not a valid context
    for _ in range(2):  # the second run takes the parsed answer
        jobs.enqueue(Work(), meta={"traceparent": zero})
    jobs.step()
    spans = traces.runs()
    assert len(spans) == 2
    assert all(span.links == () for span in spans)


@pytest.mark.parametrize("env", ["memory"], indirect=True)
@pytest.mark.parametrize(
    "meta",
    [
        {"traceparent": "00-abc-def-01"},
        {"traceparent": 42},
        {"traceparent": SAMPLED.upper()},
        {"traceparent": SAMPLED, "tracestate": 7},
    ],
)
def test_a_malformed_stored_context_is_ignored_or_dropped_alone(
    manual: Any, traces: Traces, meta: dict[str, Any]
) -> None:
    jobs.enqueue(Work(), meta=meta)
    jobs.step()
    (span,) = traces.runs()
    if meta["traceparent"] == SAMPLED:  # only the tracestate was not text: it is left out
        (link,) = span.links
        assert hex_ids(link.context) == (ENQUEUER_TRACE, ENQUEUER_SPAN)
        assert link.context.trace_state.to_header() == ""
    else:
        assert span.links == ()
    assert span.attributes["anole.job.outcome"] == "completed"


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_a_provider_set_or_replaced_later_is_used_from_the_next_run(
    manual: Any, traces: Traces, monkeypatch: Any
) -> None:
    seen: list[tuple[str | None, str | None]] = []

    def note(job: Any, args: Any) -> None:
        seen.append((job.trace_id, job.span_id))

    action = hook(note)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)  # none set yet: no span
    jobs.enqueue(Work(action=action), meta={"traceparent": SAMPLED})
    jobs.step()
    assert seen == [(None, None)]
    assert traces.runs() == []

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", traces.provider)  # set: recorded at once
    jobs.enqueue(Work(action=action), meta={"traceparent": SAMPLED})
    jobs.step()
    (first,) = traces.runs()
    assert seen[-1] == hex_ids(first)

    other = InMemorySpanExporter()
    replaced = TracerProvider()
    replaced.add_span_processor(SimpleSpanProcessor(other))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", replaced)  # replaced: the new one records
    jobs.enqueue(Work(action=action), meta={"traceparent": SAMPLED})
    jobs.step()
    assert len(traces.runs()) == 1
    (second,) = other.get_finished_spans()
    assert second.name == "process default"
    assert seen[-1] == hex_ids(second)
    replaced.shutdown()


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_the_apis_no_op_provider_records_nothing_and_carries_the_context(
    manual: Any, traces: Traces, monkeypatch: Any
) -> None:
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", trace.NoOpTracerProvider())
    seen: dict[str, Any] = {}

    def enqueue_child(job: Any, args: Any) -> None:
        seen["ids"] = (job.trace_id, job.span_id)
        seen["child"] = jobs.enqueue(Work(tag="child")).id

    jobs.enqueue(
        Work(action=hook(enqueue_child)), meta={"traceparent": SAMPLED, "tracestate": STATE}
    )
    jobs.step()
    assert seen["ids"] == (None, None)
    assert jobs.get(seen["child"]).meta == {"traceparent": SAMPLED, "tracestate": STATE}
    assert traces.runs() == []


@pytest.mark.parametrize("env", ["memory"], indirect=True)
@pytest.mark.parametrize("action", ["ok", "fail"])
def test_the_run_is_current_only_while_its_handler_runs(
    manual: Any, traces: Traces, action: str
) -> None:
    seen: dict[str, Any] = {}

    def look(job: Any, args: Any) -> None:
        seen["current"] = trace.get_current_span()
        seen["carried"] = tracing.current_run_context.get()
        if action == "fail":
            raise ValueError("no")

    jobs.enqueue(Work(action=hook(look)), meta={"traceparent": SAMPLED})
    with traces.provider.get_tracer("test").start_as_current_span("caller") as caller:
        report = jobs.step()
        # Back in the caller's context once the run is over, whatever the handler did.
        assert trace.get_current_span() is caller
        assert tracing.current_run_context.get() is None
    assert [run.outcome for run in report.runs] == ["completed" if action == "ok" else "retried"]
    (run,) = traces.runs()
    assert seen["current"].get_span_context() == run.context
    assert seen["carried"] == (SAMPLED, None)
    assert run.parent is None  # the caller's span is no parent of the run's
    assert run.status.status_code is (StatusCode.UNSET if action == "ok" else StatusCode.ERROR)


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_a_span_is_dropped_only_once_every_processor_shut_down(manual: Any, traces: Traces) -> None:
    jobs.enqueue(Work())
    jobs.step()  # the provider's processors are looked at once here ...
    second = InMemorySpanExporter()
    added = SimpleSpanProcessor(second)
    traces.provider.add_span_processor(added)  # ... and again once one is added
    traces.provider._active_span_processor._span_processors[0].shutdown()
    before = tracing.dropped.count
    jobs.enqueue(Work())
    jobs.step()
    assert len(second.get_finished_spans()) == 1  # one processor still open: exported
    assert tracing.dropped.count == before
    added.shutdown()
    jobs.enqueue(Work())
    jobs.step()
    assert len(second.get_finished_spans()) == 1
    assert tracing.dropped.count == before + 1


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_a_cancelled_run_and_a_retry_keep_their_spans(manual: Any, traces: Traces) -> None:
    def cancel_then_fail(job: Any, args: Any) -> None:
        if job.attempt == 1:
            raise ValueError("first")
        jobs.cancel(job.id)

    job_id = jobs.enqueue(Work(action=hook(cancel_then_fail)), meta={"traceparent": SAMPLED}).id
    jobs.step()
    manual.clock.advance(24 * 3600)
    jobs.step()
    spans = sorted(traces.runs(), key=lambda s: s.attributes["anole.job.attempt"])
    assert [(s.attributes["anole.job.outcome"], s.attributes.get("error.type")) for s in spans] == [
        ("retried", "ValueError"),
        ("lost", None),
    ]
    assert [s.status.status_code for s in spans] == [StatusCode.ERROR, StatusCode.UNSET]
    assert all(s.attributes["messaging.message.id"] == str(job_id) for s in spans)
    assert all(hex_ids(s.links[0].context)[1] == ENQUEUER_SPAN for s in spans)
    assert len({hex_ids(s)[0] for s in spans}) == 2


def test_an_async_run_on_the_loop_is_one_span_per_attempt(auto: Finished, traces: Traces) -> None:  # noqa: F811
    from tests.sampleapp.async_jobs import AsyncNap

    jobs.enqueue(AsyncNap(seconds=0, fail=True), meta={"traceparent": SAMPLED})
    jobs.start()
    assert [e["outcome"] for e in auto.wait(1)] == ["retried"]
    span = _wait_span(traces)
    assert len(traces.runs()) == 1
    assert span.attributes["anole.job.kind"] == "asyncrt.nap"
    assert span.attributes["anole.job.outcome"] == "retried"
    assert span.attributes["error.type"] == "ValueError"
    assert span.status.status_code is StatusCode.ERROR
