"""The event bus: listeners subscribe by event name, and an event nobody listens to is never
built."""

from __future__ import annotations

import logging

import pytest

from anole_jobs import events


def test_a_listener_gets_only_the_events_it_subscribed_to():
    bus = events.EventBus()
    seen: list[events.Event] = []
    bus.subscribe(seen.append, events.STAGED, events.PRUNED)
    bus.emit(events.STAGED, count=2)
    bus.emit(events.STORE_CALL, method="get", seconds=0.1, ok=True)
    bus.emit(events.PRUNED, count=3)
    assert [(event.name, event["count"]) for event in seen] == [("staged", 2), ("pruned", 3)]


def test_a_listener_without_names_gets_every_event():
    bus = events.EventBus()
    seen: list[str] = []
    bus.subscribe(lambda event: seen.append(event.name))
    for name in events.NAMES:
        bus.emit(name)
    assert seen == list(events.NAMES)


def test_no_event_is_built_for_a_name_nobody_listens_to(monkeypatch):
    bus = events.EventBus()
    bus.subscribe(lambda event: None, events.RUN_FINISHED)
    built: list[str] = []
    real_event = events.Event

    def counting(name: str, fields: dict[str, object]) -> events.Event:
        built.append(name)
        return real_event(name, fields)

    monkeypatch.setattr(events, "Event", counting)
    bus.emit(events.RUN_STARTED, queue="q", kind="k", job_id=1, attempt=1)
    assert (bus.listens_to(events.RUN_STARTED), built) == (False, [])
    bus.emit(events.RUN_FINISHED, queue="q")
    assert (bus.listens_to(events.RUN_FINISHED), built) == (True, ["run_finished"])


def test_unsubscribing_removes_the_listener_from_every_name_it_had():
    bus = events.EventBus()
    kept: list[events.Event] = []
    gone: list[events.Event] = []
    stay = bus.subscribe(kept.append, events.STAGED)
    leave = bus.subscribe(gone.append, events.STAGED, events.PRUNED)
    assert bus.listeners == (kept.append, gone.append)
    leave()
    bus.emit(events.STAGED)
    bus.emit(events.PRUNED)
    assert bus.listeners == (kept.append,)
    assert not bus.listens_to(events.PRUNED)
    assert ([event.name for event in kept], gone) == (["staged"], [])
    stay()
    assert bus.by_name == {}


def test_a_misspelled_event_name_is_refused_with_the_closest_name():
    bus = events.EventBus()
    expected = "no event is named 'run_finish'; did you mean 'run_finished'"
    with pytest.raises(ValueError, match=expected):
        bus.subscribe(lambda event: None, "run_finish")
    assert bus.by_name == {}


def test_a_failing_listener_is_logged_and_the_others_still_hear(caplog):
    bus = events.EventBus()
    seen: list[str] = []

    def broken(event: events.Event) -> None:
        raise RuntimeError("boom")

    bus.subscribe(broken, events.STAGED)
    bus.subscribe(lambda event: seen.append(event.name), events.STAGED)
    with caplog.at_level(logging.ERROR, logger="anole_jobs.events"):
        bus.emit(events.STAGED, count=1)
    assert seen == ["staged"]
    assert "failed on staged" in caplog.text


def test_an_event_reads_its_fields_compares_and_prints_by_value():
    event = events.Event(events.STAGED, {"count": 2})
    assert event.name == "staged" and event["count"] == 2 and event.fields == {"count": 2}
    assert event == events.Event("staged", {"count": 2})
    assert event != events.Event("staged", {"count": 3})
    assert event != events.Event("pruned", {"count": 2})
    assert event != ("staged", {"count": 2})
    assert repr(event) == "Event(name='staged', fields={'count': 2})"
    assert events.Event(events.PRUNED).fields == {}
    with pytest.raises(KeyError):
        event["missing"]
    with pytest.raises(TypeError):  # its fields are a dict: not hashable, as before
        hash(event)
