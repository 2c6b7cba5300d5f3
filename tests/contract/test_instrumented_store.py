"""The instrumented store wrapper: one STORE_CALL event per store call, from the seam only."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

from anole_jobs import events
from anole_jobs.errors import StoreUnavailable
from anole_jobs.stores import instrumented
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
    assert (store.name, store.atomic_alias) == (inner.name, inner.atomic_alias)


def public_contract() -> set[str]:
    """Every public name of `Store`, written out independently of the wrapper's own list."""
    return {name for name in (*vars(Store), *Store.__annotations__) if not name.startswith("_")}


def test_the_wrapper_covers_the_whole_public_contract():
    """Each public method (abstract or optional), property and attribute of `Store` is one the
    wrapper forwards: a method added to the contract later cannot skip the wrapped store."""
    covered = (
        set(instrumented.CONTRACT_METHODS)
        | set(instrumented.CONTRACT_PROPERTIES)
        | set(instrumented.CONTRACT_ATTRIBUTES)
    )
    assert covered == public_contract()
    assert {"update_meta", "queued_counts", "lowest_id_below", "wake"} <= covered
    assert "wakeups" in vars(InstrumentedStore)
    for name in instrumented.CONTRACT_METHODS:
        assert vars(InstrumentedStore)[name].__qualname__ == f"InstrumentedStore.{name}"


class Recorder(Store):
    """A store whose every contract method records its call and returns a marker."""

    name = "recorder"
    atomic_alias = "recorded-alias"

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []


def _recording(name: str) -> Any:
    def call(self: Recorder, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((name, args, kwargs))
        return f"result of {name}"

    return call


for _name in instrumented.CONTRACT_METHODS:
    setattr(Recorder, _name, _recording(_name))
Recorder.__abstractmethods__ = frozenset()


@pytest.mark.parametrize("listening", [False, True], ids=["quiet", "listening"])
@pytest.mark.parametrize("method", sorted(instrumented.CONTRACT_METHODS))
def test_every_contract_method_reaches_the_wrapped_store_once(method, listening):
    """Whether or not someone listens, the wrapped store sees each call exactly once, with its
    arguments, and its result comes back (a wake sent twice would wake every worker twice);
    each timed call is reported once when someone listens."""
    bus = events.EventBus()
    inner = Recorder()  # type: ignore[abstract]
    store = instrument(inner, bus=bus, timer=float)
    parameters = list(inspect.signature(getattr(Store, method)).parameters.values())[1:]
    args = tuple(f"<{p.name}>" for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD)
    kwargs = {p.name: f"<{p.name}>" for p in parameters if p.kind is p.KEYWORD_ONLY}
    calls, unsubscribe = store_calls(bus) if listening else ([], lambda: None)
    try:
        result = getattr(store, method)(*args, **kwargs)
    finally:
        unsubscribe()
    assert result == f"result of {method}"
    assert inner.calls == [(method, args, kwargs)]
    timed = listening and method not in instrumented.UNTIMED
    assert [call["method"] for call in calls] == ([method] if timed else [])


def test_an_omitted_default_is_the_contracts():
    inner = Recorder()  # type: ignore[abstract]
    store = instrument(inner, bus=events.EventBus(), timer=float)
    store.stage(now="<now>")  # type: ignore[arg-type]
    assert inner.calls == [("stage", (), {"now": "<now>", "limit": 10_000})]


def test_the_contracts_attributes_are_the_wrapped_stores():
    inner = Recorder()  # type: ignore[abstract]
    store = instrument(inner, bus=events.EventBus(), timer=float)
    assert {name: getattr(store, name) for name in instrumented.CONTRACT_ATTRIBUTES} == {
        "atomic_alias": "recorded-alias",
        "name": "recorder",
        "finished_poll": 1.0,  # the contract's default: Recorder does not set it
        # The capabilities: the contract's defaults, as Recorder sets none.
        "supports_transactions": False,
        "supports_cross_process_wakeups": False,
        "supports_other_processes": True,
        "unique_across_queues": True,
        "leadership_lapses": True,
        "shares_sessions": False,
        "queues_fail_apart": False,
    }


def test_a_runtime_threads_calls_borrow_a_shared_session_and_others_do_not():
    """On a store that shares sessions, each call made within `sharing_store_sessions` (the
    runtime's threads) runs inside the store's `shared_session`; a call outside (a handler's,
    a request's) runs on the thread's own connection, as always."""
    import contextlib

    from anole_jobs.background import sharing_store_sessions

    class Sharing(MemoryStore):
        shares_sessions = True

        def __init__(self) -> None:
            super().__init__()
            self.inside: list[bool] = []
            self.depth = 0

        @contextlib.contextmanager
        def shared_session(self):
            self.depth += 1
            try:
                yield
            finally:
                self.depth -= 1

        def get(self, job_id):
            self.inside.append(self.depth > 0)
            return super().get(job_id)

    inner = Sharing()
    store = instrument(inner, bus=events.EventBus(), timer=float)
    store.get(1)
    with sharing_store_sessions():
        store.get(1)
        with sharing_store_sessions():
            store.get(1)
        store.get(1)
    store.get(1)
    assert inner.inside == [False, True, True, True, False]


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
