"""Write-mostly kinds (Events): the store keeps their objects encoded only, so eight Events per
queued Job cost their JSON bytes in memory rather than a tree of dicts each; reads still
return the whole object."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from storekit import event, pod

from kubehpc.api.kinds import build_registry
from kubehpc.store.client import READ_ONLY_RESULT, ListOptions
from kubehpc.store.store import Store


@pytest.fixture
def store() -> Iterator[Store]:
    s = Store(build_registry(("kubehpc.api.kinds.core",)), None)
    yield s
    s.close()


def stored(store: Store, resource: str, name: str) -> Any:
    return store._objects[resource]["default"][name]


def test_the_core_event_kind_is_write_mostly_and_pods_are_not(store: Store) -> None:
    assert store.registry.for_kind("v1", "Event")[0].write_mostly
    assert not store.registry.for_kind("v1", "Pod")[0].write_mostly


def test_a_stored_event_is_kept_encoded_only(store: Store) -> None:
    store.create(event("e1"))
    assert stored(store, "events", "e1").decoded is None


def test_a_stored_pod_keeps_its_decoded_object(store: Store) -> None:
    store.create(pod("p"))
    assert stored(store, "pods", "p").decoded is not None


def test_an_event_kept_encoded_reads_back_whole(store: Store) -> None:
    created = store.create(event("e1"))
    assert store.get("v1", "Event", "e1", "default") == created
    assert store.get("v1", "Event", "e1", "default", read_only=True) == created
    assert store.list("v1", "Event", ListOptions(read_only=True)).items == [created]


def test_an_event_written_read_only_is_returned_undecoded_and_stays_encoded_only(store: Store) -> None:
    written = store.create(event("p.1"), READ_ONLY_RESULT)
    record = stored(store, "events", "p.1")
    assert record.decoded is None
    assert written["metadata"]["resourceVersion"] == str(record.rv)
    assert store.get("v1", "Event", "p.1") == written
