"""The instrumented store wrapper: one STORE_CALL event per store call, from the seam only."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from anole_jobs import events
from anole_jobs.errors import StoreUnavailable
from anole_jobs.stores.base import Store
from anole_jobs.stores.instrumented import InstrumentedStore, instrument
from anole_jobs.stores.memory import MemoryStore
from tests.sampleapp.jobs import Work

STORES_DIR = Path(__file__).resolve().parents[2] / "anole_jobs" / "stores"


def store_calls(bus: events.EventBus) -> tuple[list[dict[str, Any]], Any]:
    calls: list[dict[str, Any]] = []

    def listen(event: events.Event) -> None:
        if event.name == events.STORE_CALL:
            calls.append(dict(event.fields))

    return calls, bus.subscribe(listen)


def test_the_service_reports_each_store_call_once(env):
    service = env.jobs.service
    assert isinstance(service.store, InstrumentedStore)
    calls, unsubscribe = store_calls(service.bus)
    try:
        job_id = env.jobs.enqueue(Work()).id
        env.jobs.get(job_id)
        env.jobs.counts()
    finally:
        unsubscribe()
    assert [call["method"] for call in calls if call["method"] != "wake"] == [
        "insert",
        "get",
        "counts",
    ]
    assert all(call["ok"] is True and call["seconds"] >= 0 for call in calls)


def test_a_failed_call_is_reported_not_ok_and_still_raises(monkeypatch):
    bus = events.EventBus()
    inner = MemoryStore()
    ticks = iter([10.0, 10.25])
    store = instrument(inner, bus=bus, timer=lambda: next(ticks))
    calls, _ = store_calls(bus)

    def broken(job_id: int) -> None:
        raise StoreUnavailable("down")

    monkeypatch.setattr(inner, "get", broken)
    with pytest.raises(StoreUnavailable):
        store.get(1)
    assert calls == [{"method": "get", "seconds": 0.25, "ok": False}]


def test_nothing_is_timed_or_emitted_when_nobody_listens():
    def timer() -> float:
        raise AssertionError("the timer is read only when someone listens")

    store = instrument(MemoryStore(), bus=events.EventBus(), timer=timer)
    assert store.counts() == {}
    assert store.get(1) is None


def test_wrapping_twice_keeps_one_wrapper_and_the_stores_hub():
    bus = events.EventBus()
    inner = MemoryStore()
    store = instrument(inner, bus=bus, timer=float)
    assert instrument(store, bus=bus, timer=float) is store
    assert store.wakeups is inner.wakeups
    assert (store.name, store.atomic_alias, store.capabilities) == (
        inner.name,
        inner.atomic_alias,
        inner.capabilities,
    )


def test_every_contract_method_is_written_out():
    """The fallback delegate is a merge safety net; each method should be explicit."""
    abstract = {
        name for name, value in vars(Store).items() if getattr(value, "__isabstractmethod__", 0)
    }
    generated = {
        name for name in abstract if vars(InstrumentedStore)[name].__qualname__.startswith("_")
    }
    assert generated == set()


def test_no_store_module_emits_events_itself():
    """Only the wrapper speaks on the bus: a store that imported `events` would be a second
    source of the same telemetry."""
    offenders = []
    for path in STORES_DIR.rglob("*.py"):
        if path.name == "instrumented.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            if any(name.startswith("anole_jobs.events") for name in names):
                offenders.append(str(path.relative_to(STORES_DIR)))
    assert offenders == []
