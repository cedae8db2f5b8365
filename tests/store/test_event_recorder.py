"""The event recorder: v1 Events about objects, repeats aggregated."""

from __future__ import annotations

import time
from typing import Any

from storekit import configmap

from kubehpc.store import events
from kubehpc.store.client import ListOptions
from kubehpc.store.events import EventRecorder
from kubehpc.store.store import Store


def test_an_event_names_its_object_and_source(store: Store) -> None:
    cm = store.create(configmap("c"))
    ev = EventRecorder(store, "job-controller", host="node-1").record(cm, "Normal", "Created", "made it")
    assert ev is not None
    assert ev["metadata"]["name"].startswith("c.")
    assert ev["involvedObject"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "name": "c",
        "namespace": "default",
        "uid": cm["metadata"]["uid"],
        "resourceVersion": cm["metadata"]["resourceVersion"],
    }
    assert ev["source"] == {"component": "job-controller", "host": "node-1"}
    assert ev["count"] == 1 and ev["firstTimestamp"] == ev["lastTimestamp"]


def test_a_repeated_event_increments_count_instead_of_creating_another(store: Store) -> None:
    cm = store.create(configmap("c"))
    recorder = EventRecorder(store, "test")
    for _ in range(3):
        recorder.record(cm, "Warning", "BackOff", "restarting")
    recorder.record(cm, "Warning", "BackOff", "something else")
    events = store.list("v1", "Event", ListOptions(field_selector="involvedObject.name=c")).items
    assert sorted((e["message"], e["count"]) for e in events) == [("restarting", 3), ("something else", 1)]


def test_recording_into_a_missing_namespace_fails_quietly(store: Store) -> None:
    cm = configmap("c", "nowhere")
    assert EventRecorder(store, "test").record(cm, "Normal", "X", "y") is None


def test_an_event_is_named_as_client_go_names_it(store: Store) -> None:
    cm = store.create(configmap("c"))
    ev = EventRecorder(store, "test").record(cm, "Normal", "Created", "made it")
    assert ev is not None
    name, _, stamp = ev["metadata"]["name"].partition(".")
    assert name == "c" and int(stamp, 16) > 0


def test_two_events_given_the_same_name_are_both_kept(store: Store, monkeypatch: Any) -> None:
    cm = store.create(configmap("c"))
    monkeypatch.setattr(time, "time_ns", lambda: 0x1234)
    recorder = EventRecorder(store, "test")
    recorder.record(cm, "Normal", "First", "one")
    recorder.record(cm, "Normal", "Second", "two")
    events = store.list("v1", "Event", ListOptions(field_selector="involvedObject.name=c")).items
    assert sorted(e["reason"] for e in events) == ["First", "Second"]
    assert "c.1234" in {e["metadata"]["name"] for e in events}


def test_an_event_about_an_object_with_a_long_name_has_a_valid_name(store: Store) -> None:
    cm = store.create(configmap("c" * 253))
    ev = EventRecorder(store, "test").record(cm, "Normal", "Created", "made it")
    assert ev is not None and len(ev["metadata"]["name"]) <= 253


def test_the_recorder_forgets_the_repeat_it_saw_longest_ago(store: Store, monkeypatch: Any) -> None:
    monkeypatch.setattr(events, "_CACHE_SIZE", 2)
    cm = store.create(configmap("c"))
    recorder = EventRecorder(store, "test")
    for reason in ("A", "B", "A", "C", "A", "B"):  # A seen again before C: B is the one forgotten
        recorder.record(cm, "Normal", reason, "m")
    listed = store.list("v1", "Event", ListOptions(field_selector="involvedObject.name=c")).items
    assert sorted((e["reason"], e["count"]) for e in listed) == [("A", 3), ("B", 1), ("B", 1), ("C", 1)]


def test_a_full_recorder_forgets_its_oldest_quarter_at_once(store: Store, monkeypatch: Any) -> None:
    monkeypatch.setattr(events, "_CACHE_SIZE", 8)
    cm = store.create(configmap("c"))
    recorder = EventRecorder(store, "test")
    for i in range(9):  # the ninth overflows: the three oldest go, down to three quarters
        recorder.record(cm, "Normal", f"R{i}", "m")
    for i in (2, 3):  # R2 was forgotten (a new Event); R3 still aggregates
        recorder.record(cm, "Normal", f"R{i}", "m")
    listed = store.list("v1", "Event", ListOptions(field_selector="involvedObject.name=c")).items
    counts = sorted((e["reason"], e["count"]) for e in listed if e["reason"] in ("R2", "R3"))
    assert counts == [("R2", 1), ("R2", 1), ("R3", 2)]
