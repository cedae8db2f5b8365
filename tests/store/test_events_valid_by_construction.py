"""Events the recorder builds are valid by construction, and the embedded store does not check
them again: a third of an Event's cost, eight Events per queued Job. What the recorder cannot
vouch for is checked as any write."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from storekit import configmap, small_registry

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.meta import validate_metadata
from kubehpc.api.registry import Registry
from kubehpc.api.schema import FieldValidation
from kubehpc.controllers.scheduling.apply import record_event
from kubehpc.store.client import ListOptions, WriteOptions
from kubehpc.store.events import CHECKED_EVENT_WRITE, EVENT_WRITE, EventRecorder, event_name, event_write
from kubehpc.store.store import Store

Obj = dict[str, Any]


def refusing_event_checks(calls: list[str]) -> Registry:
    """The small registry, with an Event validator that notes each call and refuses every Event."""

    def refuse(obj: Obj, mode: FieldValidation, /, *, unchanged: frozenset[str] = frozenset()) -> list[str]:
        calls.append(obj["metadata"].get("name") or obj["metadata"].get("generateName"))
        raise Invalid("Event refused by the test's validator")

    out = Registry()
    for rt in small_registry():
        if rt.kind == "Event":
            rt = dataclasses.replace(
                rt, versions=tuple(dataclasses.replace(v, validate=refuse) for v in rt.versions)
            )
        out.register(rt)
    return out


@pytest.fixture
def calls() -> list[str]:
    return []


@pytest.fixture
def refusing_store(calls: list[str]) -> Iterator[Store]:
    s = Store(refusing_event_checks(calls), None)
    yield s
    s.close()


@pytest.fixture
def core_store() -> Iterator[Store]:
    s = Store(build_registry(("kubehpc.api.kinds.core",)), None)
    yield s
    s.close()


def fully_validated(store: Store, event: Obj) -> None:
    """The checks the store skipped, run on what it kept: they raise if any fails."""
    rt, vs = store.registry.for_kind("v1", "Event")
    validate_metadata(event, namespaced=rt.namespaced, mode=FieldValidation.STRICT)
    vs.validate(event, FieldValidation.STRICT)


def test_an_event_the_recorder_vouches_for_is_not_checked_again(
    refusing_store: Store, calls: list[str]
) -> None:
    cm = refusing_store.create(configmap("c"))
    assert EventRecorder(refusing_store, "test").record(cm, "Normal", "Created", "made it") is not None
    assert calls == []


def test_an_event_created_by_any_other_writer_is_checked(refusing_store: Store, calls: list[str]) -> None:
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "X"}
    with pytest.raises(Invalid):
        refusing_store.create(event)
    assert calls == ["e"]


def test_valid_by_construction_is_honoured_for_events_only(refusing_store: Store) -> None:
    trusted = WriteOptions(valid_by_construction=True)
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "spec": "not an object"}
    with pytest.raises(Invalid):
        refusing_store.create(bad, trusted)


def test_an_event_about_a_name_that_is_no_subdomain_is_checked_and_refused(refusing_store: Store) -> None:
    # Not stored: a caller may hand the recorder any object; the store then judges the Event.
    odd = configmap("Not_A_Name")
    assert EventRecorder(refusing_store, "test").record(odd, "Normal", "Created", "made it") is None
    assert refusing_store.list("v1", "Event").items == []


@pytest.mark.parametrize(
    ("ref", "type_", "reason", "message"),
    [
        ({"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": 7}, "Normal", "R", "m"),
        ({"kind": "Pod", "apiVersion": "v1", "name": "p"}, "Info", "R", "m"),
        ({"kind": "Pod", "apiVersion": "v1", "name": "p"}, "Normal", None, "m"),
        ({"kind": "Pod", "apiVersion": "v1", "name": "p"}, "Normal", "R", b"m"),
        ({"kind": "Pod", "apiVersion": "v1", "name": "-p"}, "Normal", "R", "m"),
        ({"kind": "Pod", "apiVersion": "v1", "name": ""}, "Normal", "R", "m"),
    ],
    ids=[
        "uid-not-a-string",
        "unknown-type",
        "reason-not-a-string",
        "message-not-a-string",
        "bad-name",
        "no-name",
    ],
)
def test_the_recorder_vouches_only_for_strings_a_known_type_and_valid_names(
    ref: Obj, type_: str, reason: Any, message: Any
) -> None:
    assert event_write(ref, "default", type_, reason, message) is CHECKED_EVENT_WRITE


def test_the_recorder_does_not_vouch_for_a_namespace_that_is_no_label() -> None:
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "p", "namespace": "Team_A"}
    assert event_write(ref, "Team_A", "Normal", "R", "m") is CHECKED_EVENT_WRITE
    assert event_write({**ref, "namespace": "team-a"}, "team-a", "Normal", "R", "m") is EVENT_WRITE


def test_a_name_cut_to_fit_never_ends_in_a_dash_or_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 0x1234)  # suffix ".1234": the cut falls at 248
    for name in ("a" + "-b" * 126, "a" + ".b" * 126, "ab" + "-" * 3 + "c" * 248):
        cut = event_name(name[:253])
        prefix, _, suffix = cut.rpartition(".")
        assert suffix == "1234" and len(cut) <= 253
        assert prefix[-1].isalnum()


@pytest.mark.parametrize(
    "name",
    ["c", "a" + "-b" * 126, "x" * 253, "web-0.svc", "a.b-c.d"],
    ids=["short", "cut-at-a-dash", "longest", "dotted", "mixed"],
)
def test_every_event_the_recorder_stores_passes_full_validation(core_store: Store, name: str) -> None:
    cm = core_store.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}
    )
    recorder = EventRecorder(core_store, "job-controller", host="node-1")
    assert (
        recorder.record(cm, "Warning", "BackOff", "Back-off restarting failed container ünïcode") is not None
    )
    node = core_store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    assert recorder.record(node, "Normal", "NodeReady", "ready") is not None  # cluster-scoped: default
    kept = core_store.list("v1", "Event", ListOptions(read_only=True)).items
    assert len(kept) == 2
    for event in kept:
        fully_validated(core_store, event)


def test_the_schedulers_events_pass_full_validation(core_store: Store) -> None:
    pod = core_store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p" * 253, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
    )
    record_event(core_store, pod, "Normal", "Scheduled", "Successfully assigned default/p to n", time.time())
    kept = core_store.list("v1", "Event", ListOptions(read_only=True)).items
    assert [e["reason"] for e in kept] == ["Scheduled"]
    fully_validated(core_store, kept[0])
