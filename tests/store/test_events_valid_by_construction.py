"""Events the recorder builds are valid by construction, and the embedded store does not check
them again: a third of an Event's cost, eight Events per queued Job. What the recorder cannot
vouch for is checked as any write."""

from __future__ import annotations

import dataclasses
import enum
import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
from storekit import TreePatchMeta, configmap, small_registry

from kubehpc.api.errors import Invalid
from kubehpc.api.kinds import build_registry
from kubehpc.api.meta import validate_metadata
from kubehpc.api.names import is_dns1123_subdomain
from kubehpc.api.registry import Registry, ResourceType, VersionSpec
from kubehpc.api.schema import FieldValidation
from kubehpc.controllers.scheduling.apply import record_event
from kubehpc.store.client import ListOptions, WriteOptions
from kubehpc.store.events import CHECKED_EVENT_WRITE, EventRecorder, event_name, event_write
from kubehpc.store.store import Store

Obj = dict[str, Any]


class EventType(enum.StrEnum):
    NORMAL = "Normal"


class Name(str):
    """A str subclass: equal to its text, and refused by the schema, which takes str alone."""


def refusing_event_checks(calls: list[str]) -> Registry:
    """The small registry, with Event validators (core v1 and events.k8s.io) that note each
    call and refuse every Event."""

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
    out.register(
        ResourceType(
            "events.k8s.io",
            "Event",
            "events",
            True,
            (VersionSpec("v1", refuse, None, TreePatchMeta()),),
            "v1",
        )
    )
    return out


@pytest.fixture
def ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """time.time_ns from 0x1234 on, one tick a call: event names end in four hexadecimal
    digits (so a long name is cut at 248) and never clash."""
    ticks = itertools.count(0x1234)
    monkeypatch.setattr(time, "time_ns", lambda: next(ticks))


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


def test_valid_by_construction_is_honoured_for_core_events_only(
    refusing_store: Store, calls: list[str]
) -> None:
    trusted = WriteOptions(valid_by_construction=True)
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "spec": "not an object"}
    with pytest.raises(Invalid):
        refusing_store.create(bad, trusted)
    other_group = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"}}
    with pytest.raises(Invalid):
        refusing_store.create(other_group, trusted)
    assert calls == ["e"]


def test_an_event_named_afresh_after_a_clash_is_checked(
    refusing_store: Store, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 0x1234)  # both Events get the name c.1234
    cm = refusing_store.create(configmap("c"))
    recorder = EventRecorder(refusing_store, "test")
    assert recorder.record(cm, "Normal", "First", "one") is not None  # vouched for
    assert recorder.record(cm, "Normal", "Second", "two") is None  # generateName: checked, refused
    assert len(calls) == 1 and calls[0].startswith("c.") and calls[0] != "c.1234"


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
        ({"kind": "Pod", "apiVersion": "v1", "name": "p"}, EventType.NORMAL, "R", "m"),
        ({"kind": "Pod", "apiVersion": "v1", "name": Name("p")}, "Normal", "R", "m"),
        ({"kind": "Pod", "apiVersion": "v1", "name": "p"}, "Normal", Name("R"), "m"),
    ],
    ids=[
        "uid-not-a-string",
        "unknown-type",
        "reason-not-a-string",
        "message-not-a-string",
        "bad-name",
        "no-name",
        "type-a-str-enum",
        "name-a-str-subclass",
        "reason-a-str-subclass",
    ],
)
def test_the_recorder_vouches_only_for_strings_a_known_type_and_valid_names(
    ref: Obj, type_: str, reason: Any, message: Any
) -> None:
    assert event_write(ref, "default", type_, reason, message) is CHECKED_EVENT_WRITE


def test_the_recorder_does_not_vouch_for_a_namespace_that_is_no_label() -> None:
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "p", "namespace": "Team_A"}
    assert event_write(ref, "Team_A", "Normal", "R", "m") is CHECKED_EVENT_WRITE
    assert event_write({**ref, "namespace": "team-a"}, "team-a", "Normal", "R", "m").valid_by_construction


def test_a_recorder_is_made_with_str_component_and_host(refusing_store: Store) -> None:
    with pytest.raises(TypeError):
        EventRecorder(refusing_store, Name("controller"))
    with pytest.raises(TypeError):
        EventRecorder(refusing_store, "controller", host=7)  # type: ignore[arg-type]


def test_a_name_cut_to_fit_stays_a_subdomain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 0x1234)  # suffix ".1234": the cut falls at 248
    for name in ("a" + "-b" * 126, "a" + ".b" * 126, "a" * 246 + "--" + "b" * 5):
        assert len(name) == 253 and is_dns1123_subdomain(name)
        cut = event_name(name)
        prefix, _, suffix = cut.rpartition(".")
        assert suffix == "1234" and len(prefix) < 248  # cut at 248, then back to a letter
        assert is_dns1123_subdomain(cut)


NAMES = ["c", "a" + "-b" * 126, "x" * 253, "web-0.svc", "a.b-c.d"]
NAME_IDS = ["short", "cut-at-a-dash", "longest", "dotted", "mixed"]


@pytest.mark.usefixtures("ticking_clock")
@pytest.mark.parametrize("name", NAMES, ids=NAME_IDS)
def test_the_recorder_vouches_for_events_about_any_valid_name(
    refusing_store: Store, calls: list[str], name: str
) -> None:
    cm = refusing_store.create(configmap(name))
    assert EventRecorder(refusing_store, "test").record(cm, "Normal", "Created", "made it") is not None
    assert calls == []


@pytest.mark.usefixtures("ticking_clock")
@pytest.mark.parametrize("name", NAMES, ids=NAME_IDS)
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


def pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.mark.usefixtures("ticking_clock")
def test_the_schedulers_events_pass_full_validation(core_store: Store) -> None:
    stored = core_store.create(pod("p" * 253))
    record_event(
        core_store, stored, "Normal", "Scheduled", "Successfully assigned default/p to n", time.time()
    )
    kept = core_store.list("v1", "Event", ListOptions(read_only=True)).items
    assert [e["reason"] for e in kept] == ["Scheduled"]
    fully_validated(core_store, kept[0])


def test_the_scheduler_vouches_for_its_events_and_not_for_a_bad_name(
    refusing_store: Store, calls: list[str]
) -> None:
    stored = refusing_store.create(pod("p"))
    record_event(refusing_store, stored, "Normal", "Scheduled", "assigned", time.time())
    assert calls == []
    errors: list[Exception] = []
    record_event(
        refusing_store, pod("Not_A_Name"), "Normal", "Scheduled", "assigned", time.time(), errors.append
    )
    assert len(errors) == 1 and len(calls) <= 1  # refused: by the metadata checks or the validator
    assert [e["reason"] for e in refusing_store.list("v1", "Event").items] == ["Scheduled"]


def test_a_scheduler_event_named_afresh_after_a_clash_is_checked(
    refusing_store: Store, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 0x1234)  # both Events get the name p.1234
    stored = refusing_store.create(pod("p"))
    errors: list[Exception] = []
    record_event(refusing_store, stored, "Normal", "Scheduled", "assigned", time.time(), errors.append)
    record_event(refusing_store, stored, "Normal", "Pulled", "pulled", time.time(), errors.append)
    assert len(errors) == 1 and len(calls) == 1 and calls[0].startswith("p.") and calls[0] != "p.1234"
