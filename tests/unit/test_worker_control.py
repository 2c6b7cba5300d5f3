"""The worker's control watch: it reads its own request each round and acts once per action;
"stop" drains through the process when `runjobs` gave it one, and quiets a runtime without."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from anole_jobs.stores.workers import WorkerControl
from anole_jobs.worker.control import CONTROL_POLL, ControlWatch

AT = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)


def watch(requests):
    store = SimpleNamespace(worker_control=lambda worker_id: requests.get(worker_id))
    calls: list[str] = []
    control = ControlWatch(
        SimpleNamespace(store=store), "w1", on_quiet=lambda: calls.append("quiet") or 2
    )
    return control, calls


def test_nothing_asked_does_nothing_and_polls_under_a_second():
    control, calls = watch({})
    assert control.run_once() == CONTROL_POLL <= 0.5
    assert calls == [] and not control.quiet


def test_quiet_acts_once_and_stop_then_drains_through_the_process():
    requests = {"w1": WorkerControl(action="quiet", by="ops", at=AT, surface="dashboard")}
    control, calls = watch(requests)
    drains: list[str] = []
    control.on_stop = drains.append
    control.run_once()
    control.run_once()
    assert calls == ["quiet"] and drains == []
    requests["w1"] = WorkerControl(action="stop", by="cli", at=AT, surface="cli")
    control.run_once()
    control.run_once()
    assert drains == ["a stop request from cli (cli)"] and calls == ["quiet"]


def test_stop_without_a_process_quiets_the_runtime():
    control, calls = watch({"w1": WorkerControl(action="stop", by="ops", at=AT)})
    control.run_once()
    control.run_once()
    assert calls == ["quiet"] and control.quiet
