"""What anole_jobs adds to a run's span beyond the OpenTelemetry SDK's own span.

Four configurations, each in a process of its own (a global tracer provider is set once per
process), all working N no-op jobs with `jobs.step()` on the memory store:

- `off`: no tracer provider set.
- `sdk`: an SDK `TracerProvider` with a span processor (`--processor simple|batch`) and an
  exporter that drops what it gets; every run recorded (`sample_all`).
- `raw`: the same provider, and a loop that makes N spans as the runs do -- the same name,
  kind, empty parent context, one link, the same seven attributes, the outcome attribute,
  `end()` -- and nothing else.
- `inline`: the same provider with `TRACING=False`, and the handler makes that same raw span:
  the SDK's span as it costs inside a run (a bigger heap, colder caches than the bare loop).

What anole_jobs adds per run is (sdk - off) - raw, or sdk - inline: reading the stored
context and parsing it into a link, making the span current while the handler runs, the
checks around `end()`, and whatever else the run path does because a provider is set.

    .venv/bin/python bench/trace_cost.py                      # CPU µs, interleaved
    .venv/bin/python bench/trace_cost.py --callgrind          # instructions too
    .venv/bin/python bench/trace_cost.py --trees /tmp/before,.   # an A/B of two code trees

Each job carries a `traceparent` of its own in its meta (`--same-parent`: one for all, as an
`enqueue_many` batch has; `--tracestate` adds a `tracestate`). Metrics are off and the run log
is at WARNING, so the figures are the tracing alone. The jobs are enqueued before the counted
part; the counted part is the `jobs.step()` loop (or the raw loop), after a warm-up round.

CPU µs per job move with the other work on the machine; instruction counts (`--callgrind`:
each configuration again under `valgrind --tool=callgrind`, counting only the measured round)
repeat to well under 1%. Python under valgrind counts several times the instructions it runs
natively per µs; the µs beside an instruction count convert it at the rate of the SDK's span
measured the same way (instructions ÷ CPU µs of `raw`, and of `inline` - `off`).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
if "--tree" in sys.argv:  # a child measuring another code tree (an A/B)
    sys.path.insert(0, sys.argv[sys.argv.index("--tree") + 1])
else:
    sys.path.insert(0, str(HERE))

CONFIGS = ("off", "sdk", "raw", "inline")
TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
STATE = "vendor=abc,other=1"


def traceparent(i: int) -> str:
    """A sampled traceparent, its span id different for each `i`."""
    return f"00-{TRACE_ID:032x}-{0xB7AD6B7169203331 + i:016x}-01"


def child(options: argparse.Namespace) -> None:
    """One configuration in this process: prints `cpu_us_per_job=<median>`."""
    import django
    from django.conf import settings

    settings.configure(
        SECRET_KEY="bench",
        USE_TZ=True,
        INSTALLED_APPS=["anole_jobs"],
        DATABASES={},
        ANOLE_JOBS={"STORE": "memory"},
        LOGGING_CONFIG=None,
    )
    django.setup()

    from anole_jobs import conf, jobs, kind

    @kind("bench.trace.noop", attempts=1)
    @dataclass
    class Noop:
        n: int = 0

    if options.config != "off":
        install_provider(options.processor)
    raw_span = raw_span_maker(options)

    @jobs.handler(Noop)
    def noop(job: Any, args: Noop) -> None:
        if raw_span is not None:
            raw_span(job.id)
        return None

    def meta(i: int) -> dict[str, str]:
        meta = {"traceparent": traceparent(0 if options.same_parent else i)}
        if options.tracestate:
            meta["tracestate"] = STATE
        return meta

    def step_round(n: int) -> float:
        settings.ANOLE_JOBS = {
            "STORE": "memory",
            "RUN": "manual",
            "QUEUES": {"default": {"concurrency": 10}},
            "METRICS": False,
            "TRACING": {"sample_all": True} if options.config == "sdk" else False,
        }
        conf.reset()  # a new service and a new, empty memory store
        if options.same_parent:
            for i in range(0, n, 500):
                jobs.enqueue_many([Noop(j) for j in range(i, min(n, i + 500))], meta=meta(0))
        else:
            for i in range(n):
                jobs.enqueue(Noop(i), meta=meta(i))
        cpu = time.process_time()
        ran = 0
        while ran < n:
            ran += len(jobs.step().runs)
        return time.process_time() - cpu

    def raw_round(n: int) -> float:
        assert raw_span is not None
        cpu = time.process_time()
        for i in range(n):
            raw_span(i)
        return time.process_time() - cpu

    work = raw_round if options.config == "raw" else step_round
    figures = []
    for index in range(options.rounds + 1):
        if index == 1 and options.count:
            callgrind("--instr=on")
        used = work(options.jobs)
        if index == options.rounds and options.count:
            callgrind("--instr=off")
        if index:  # the first round warms up (imports, caches)
            figures.append(used / options.jobs * 1e6)
    print(f"cpu_us_per_job={statistics.median(figures):.2f}", flush=True)


def raw_span_maker(options: argparse.Namespace) -> Any:
    """A function that makes and ends one span as a run's, with nothing around it."""
    if options.config not in ("raw", "inline"):
        return None
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    tracer = trace.get_tracer("anole_jobs")
    carried = trace.SpanContext(
        trace_id=TRACE_ID,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=trace.TraceFlags(1),
        trace_state=trace.TraceState.from_header([STATE]) if options.tracestate else None,
    )
    links = [trace.Link(carried)]
    empty = otel_context.Context()
    consumer = trace.SpanKind.CONSUMER

    def raw_span(job_id: int) -> None:
        span = tracer.start_span(
            "process default",
            context=empty,
            kind=consumer,
            links=links,
            attributes={
                "messaging.system": "anole",
                "messaging.destination.name": "default",
                "messaging.operation.type": "process",
                "messaging.message.id": str(job_id),
                "anole.job.kind": "bench.trace.noop",
                "anole.job.attempt": 1,
                "anole.job.max_attempts": 1,
            },
        )
        span.set_attribute("anole.job.outcome", "completed")
        span.end()

    return raw_span


def install_provider(processor: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Dropping(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    wrap = SimpleSpanProcessor if processor == "simple" else BatchSpanProcessor
    provider.add_span_processor(wrap(Dropping()))
    trace.set_tracer_provider(provider)


def callgrind(command: str) -> None:
    subprocess.run(
        ["callgrind_control", command, str(os.getpid())], check=True, capture_output=True
    )


def run_child(
    options: argparse.Namespace, tree: str, config: str, *, count: bool
) -> tuple[float, int]:
    """One configuration of one tree in a new process: (CPU µs per job, instructions or 0)."""
    args = [sys.executable, __file__, "--tree", tree, "--config", config]
    args += ["--jobs", str(options.jobs), "--processor", options.processor]
    args += ["--tracestate"] if options.tracestate else []
    args += ["--same-parent"] if options.same_parent else []
    out_file = ""
    if count:
        handle, out_file = tempfile.mkstemp(prefix="anole_trace_cost_", suffix=".cg")
        os.close(handle)
        args = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out_file}",
            *args,
            "--rounds",
            "1",
            "--count",
        ]
    else:
        args += ["--rounds", str(options.rounds)]
    done = subprocess.run(args, check=True, capture_output=True, text=True)
    match = re.search(r"cpu_us_per_job=([0-9.]+)", done.stdout)
    assert match, done.stdout + done.stderr
    instructions = 0
    if count:
        with open(out_file) as cg:
            for line in cg:
                if line.startswith("totals:"):
                    instructions = int(line.split()[1])
        os.unlink(out_file)
    return float(match.group(1)), instructions


def report(
    options: argparse.Namespace, cpu: dict[str, list[float]], ins: dict[str, list[int]]
) -> None:
    n = options.jobs
    for config in CONFIGS:
        line = f"  {config:6} CPU µs/job {statistics.median(cpu[config]):7.2f} ("
        line += ", ".join(f"{c:.1f}" for c in cpu[config]) + ")"
        if ins[config]:
            line += f"   instructions/job {statistics.median(ins[config]) / n:8.0f} ("
            line += ", ".join(f"{i / n:.0f}" for i in ins[config]) + ")"
        print(line)
    off, sdk, raw, inline = (statistics.median(cpu[c]) for c in CONFIGS)
    print(
        f"  CPU µs per run: tracing adds {sdk - off:.2f}; the SDK's span {raw:.2f} alone, "
        f"{inline - off:.2f} in a run; anole_jobs {sdk - off - raw:.2f} beyond the span alone, "
        f"{sdk - inline:.2f} beyond the span in a run"
    )
    if ins["off"]:
        i_off, i_sdk, i_raw, i_inline = (statistics.median(ins[c]) / n for c in CONFIGS)
        alone, in_run = i_sdk - i_off - i_raw, i_sdk - i_inline
        print(
            f"  instructions per run: tracing adds {i_sdk - i_off:.0f}; the SDK's span "
            f"{i_raw:.0f} alone, {i_inline - i_off:.0f} in a run; anole_jobs {alone:.0f} beyond "
            f"the span alone, {in_run:.0f} beyond the span in a run"
        )
        rates = (i_raw / raw if raw > 0 else 0.0, (i_inline - i_off) / (inline - off or 1))
        if min(rates) > 0:
            print(
                f"  anole_jobs in µs at the SDK span's instructions per µs ({rates[0]:.0f} alone,"
                f" {rates[1]:.0f} in a run): {alone / rates[0]:.2f} to {in_run / rates[1]:.2f} µs"
            )


def parent(options: argparse.Namespace) -> None:
    trees = [str(Path(t).resolve()) for t in options.trees.split(",")]
    cpu = {t: {c: [] for c in CONFIGS} for t in trees}
    ins: dict[str, dict[str, list[int]]] = {t: {c: [] for c in CONFIGS} for t in trees}
    for _ in range(options.pairs):
        for config in CONFIGS:  # interleaved: a noisy neighbour hits each alike
            for tree in trees:
                cpu[tree][config].append(run_child(options, tree, config, count=False)[0])
                if options.callgrind:
                    ins[tree][config].append(run_child(options, tree, config, count=True)[1])
    from importlib.metadata import version

    print(
        f"tracing cost -- {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, Python "
        f"{sys.version.split()[0]}, opentelemetry-sdk {version('opentelemetry-sdk')}, "
        f"{options.processor} span processor, {options.jobs} jobs per round, "
        f"{options.pairs} interleaved runs of each ({options.rounds} rounds each for CPU time), "
        + ("one traceparent for all" if options.same_parent else "a traceparent per job")
        + (", with tracestate" if options.tracestate else "")
    )
    for tree in trees:
        print(tree)
        report(options, cpu[tree], ins[tree])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=CONFIGS, help="run one configuration in-process")
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--trees", default=str(HERE), help="code trees to compare (a,b)")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=3, help="interleaved runs of each")
    parser.add_argument("--processor", choices=("simple", "batch"), default="simple")
    parser.add_argument("--tracestate", action="store_true", help="a tracestate in each meta")
    parser.add_argument("--same-parent", action="store_true", help="one traceparent for all")
    parser.add_argument("--callgrind", action="store_true", help="count instructions too")
    parser.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.config:
        child(options)
    else:
        parent(options)


if __name__ == "__main__":
    main()
