"""The scheduler's Events are named as client-go's recorder names them: the pod's name, a dot and
the time in hexadecimal nanoseconds (no search for a free generated name on the server); a name
already taken falls back to a generated one."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from kubehpc.api.kinds import build_registry
from kubehpc.controllers.scheduling.apply import record_event
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


POD = {"metadata": {"name": "train-0", "namespace": "default", "uid": "u-1", "resourceVersion": "7"}}


def events(store: Store) -> list[str]:
    return [e["metadata"]["name"] for e in store.list("v1", "Event", ListOptions(namespace="default")).items]


def test_a_scheduled_event_is_named_after_the_pod_and_the_time_in_nanoseconds(store: Store) -> None:
    record_event(store, POD, "Normal", "Scheduled", "Successfully assigned default/train-0 to n", 0.0)
    [name] = events(store)
    assert re.fullmatch(r"train-0\.[0-9a-f]+", name)


def test_an_event_name_already_taken_falls_back_to_a_generated_name(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "time_ns", lambda: 1)  # both events get the name train-0.1
    record_event(store, POD, "Normal", "Scheduled", "first", 0.0)
    record_event(store, POD, "Normal", "Scheduled", "second", 0.0)
    names = events(store)
    assert len(names) == 2 and "train-0.1" in names
    assert all(n.startswith("train-0.") for n in names)
