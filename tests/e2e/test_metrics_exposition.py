"""Metrics served by real `runjobs` processes: `--metrics-port` scraped over HTTP (the default
registry, so beside prometheus-client's own process metrics, or a private one), and two
processes aggregated by prometheus-client's multiprocess mode (the leader gauge sums to one
leader across them, and moves with leadership)."""

from __future__ import annotations

import os
import re
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.conftest import Backend, Worker, wait_until

pytestmark = pytest.mark.e2e

SERVING = re.compile(r"serving metrics at http://[^:]+:(\d+)/metrics")
LEADS = "is now leader"


def metrics_port(worker: Worker) -> int:
    output = worker.wait_output("serving metrics at")
    match = SERVING.search(output)
    assert match, output
    return int(match.group(1))


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        assert answer.status == 200
        return answer.read().decode()


def sample(text: str, series: str) -> float | None:
    """The value of one exact series line (name and labels as exposed), or None."""
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name == series:
            return float(value)
    return None


def scrape_until(port: int, series: str, value: float, what: str) -> str:
    """Scrape until `series` reads `value` (events land just after the store write)."""

    def check() -> str | None:
        text = scrape(port)
        return text if sample(text, series) == value else None

    text: str = wait_until(check, what, 10)
    return text


COMPLETED = 'anole_jobs_finished_total{kind="e2e.noop",outcome="completed",queue="default"}'


def test_runjobs_serves_its_metrics_on_the_metrics_port(sqlite_backend: Backend) -> None:
    worker = sqlite_backend.spawn("--metrics-port", "0", "--metrics-addr", "127.0.0.1")
    port = metrics_port(worker)
    worker.wait_output(LEADS)
    ids = sqlite_backend.enqueue("e2e.noop", count=3)
    sqlite_backend.wait_state(ids, "completed")
    text = scrape_until(port, COMPLETED, 3, "3 completed runs in the scrape")
    assert sample(text, "anole_jobs_leader") == 1
    assert sample(text, 'anole_jobs_enqueued_total{kind="e2e.noop",queue="default"}') is None
    assert sample(text, 'anole_jobs_run_seconds_count{kind="e2e.noop",queue="default"}') == 3
    assert sample(text, 'anole_jobs_running{queue="default"}') == 0
    # The metrics are in prometheus-client's default registry, beside its own.
    assert "python_info{" in text


def test_two_processes_in_multiprocess_mode(sqlite_backend: Backend, tmp_path: Path) -> None:
    directory = tmp_path / "prometheus"
    directory.mkdir()
    sqlite_backend.env["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    first = sqlite_backend.spawn("--metrics-port", "0", "--metrics-addr", "127.0.0.1")
    first.wait_output(LEADS)
    second = sqlite_backend.spawn("--metrics-port", "0", "--metrics-addr", "127.0.0.1")
    ports = metrics_port(first), metrics_port(second)
    ids = sqlite_backend.enqueue("e2e.noop", count=20)
    sqlite_backend.wait_state(ids, "completed")
    for port in ports:
        # Either process serves the sum of both, and one leader, not two.
        text = scrape_until(port, COMPLETED, 20, "20 completed runs summed over both processes")
        assert sample(text, "anole_jobs_leader") == 1
    assert len(list(directory.glob("*.db"))) >= 2, "each process writes its own files"
    # The leader stops (resigning, its live gauges dropped); the other takes over.
    first.signal()
    assert first.wait(timeout=15) == 0
    second.wait_output(LEADS, timeout=10)
    text = scrape_until(ports[1], "anole_jobs_leader", 1, "the second process leading")
    assert sample(text, COMPLETED) == 20  # counters outlive the process that counted them


def test_without_prometheus_client_and_opentelemetry_runjobs_says_what_is_off(
    sqlite_backend: Backend, tmp_path: Path
) -> None:
    # A `sitecustomize` that makes both imports fail, as if the extras were not installed.
    shim = tmp_path / "no-extras"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import sys\n"
        "for name in ('prometheus_client', 'opentelemetry'):\n"
        "    sys.modules[name] = None\n"
    )
    sqlite_backend.env["PYTHONPATH"] = os.pathsep.join(
        [str(shim), sqlite_backend.env.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    worker = sqlite_backend.spawn()
    worker.wait_ready()
    ids = sqlite_backend.enqueue("e2e.noop", count=2)
    sqlite_backend.wait_state(ids, "completed")
    output = worker.output()
    metrics_off = "runjobs: metrics off: prometheus-client is not installed"
    tracing_off = "runjobs: tracing off: opentelemetry-api is not installed"
    assert output.count(metrics_off) == 1, output
    assert output.count(tracing_off) == 1, output
    assert "Traceback" not in output
    refused = sqlite_backend.run_command("runjobs", "--metrics-port", "0")
    assert refused.returncode != 0
    assert "--metrics-port needs metrics on" in refused.stderr
