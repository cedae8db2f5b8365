"""The collector's running loop keeps an owner graph from watches: it lists each kind once, then
looks only at what changed — and still collects what a full round would."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kubehpc.api.errors import NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.controllers.gc import GarbageCollector, KindRef, OwnerGraph, kinds_of
from kubehpc.store.client import ListOptions, ObjectList
from kubehpc.store.store import Store

Obj = dict[str, Any]
CM = KindRef("v1", "ConfigMap", True)


class CountingLists:
    """The store, counting the lists made through it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lists = 0

    def list(self, api_version: str, kind: str, options: ListOptions | None = None) -> ObjectList:
        self.lists += 1
        return self.store.list(api_version, kind, options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.fixture
def store() -> Iterator[Store]:
    s = Store(build_registry(("kubehpc.api.kinds.core",)), None)
    yield s
    s.close()


def obj(name: str, uid: str, *owners: str, deleting: str = "") -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "uid": uid}
    if owners:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": o, "uid": o} for o in owners
        ]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        meta["finalizers"] = [deleting]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def test_the_first_take_is_everything_then_only_what_changed() -> None:
    graph = OwnerGraph()
    graph.replace(CM, [obj("a", "a"), obj("b", "b", "a")])
    assert graph.take() is None
    assert graph.take() == set()


def test_a_status_change_of_a_dependent_marks_nothing() -> None:
    graph = OwnerGraph()
    graph.replace(CM, [obj("a", "a"), obj("b", "b", "a")])
    graph.take()
    changed = obj("b", "b", "a")
    changed["data"] = {"x": "1"}
    graph.put(CM, changed)
    assert graph.take() == set()


def test_deleting_an_owner_marks_its_dependents() -> None:
    graph = OwnerGraph()
    graph.replace(CM, [obj("a", "a"), obj("b", "b", "a"), obj("c", "c", "a"), obj("d", "d")])
    graph.take()
    graph.delete(obj("a", "a"))
    assert graph.take() == {"b", "c"}


def test_new_owner_references_mark_the_dependent() -> None:
    graph = OwnerGraph()
    graph.replace(CM, [obj("a", "a"), obj("b", "b")])
    graph.take()
    graph.put(CM, obj("b", "b", "a"))
    assert graph.take() == {"b"}
    assert [d["metadata"]["name"] for d in graph.dependents_of("a")] == ["b"]


def test_a_full_round_looks_only_at_objects_with_owners_or_being_deleted() -> None:
    graph = OwnerGraph()
    graph.replace(CM, [obj("a", "a"), obj("b", "b", "a"), obj("c", "c", deleting="orphan")])
    assert graph.interesting == {"b", "c"}
    graph.put(CM, obj("a", "a", deleting="foregroundDeletion"))
    graph.put(CM, obj("b", "b"))
    assert graph.interesting == {"a", "c"}
    graph.delete(obj("c", "c"))
    assert graph.interesting == {"a"}


def test_a_gone_dependent_marks_its_owner_waiting_in_foreground_deletion() -> None:
    graph = OwnerGraph()
    graph.replace(CM, [obj("a", "a", deleting="foregroundDeletion"), obj("b", "b", "a")])
    graph.take()
    graph.delete(obj("b", "b", "a"))
    assert graph.take() == {"a"}
    assert graph.dependents_of("a") == []


def test_a_relist_drops_what_is_no_longer_there() -> None:
    graph = OwnerGraph()
    graph.replace(CM, [obj("a", "a"), obj("b", "b", "a")])
    graph.take()
    graph.replace(CM, [obj("b", "b", "a")])
    assert "a" not in graph.objects
    assert graph.take() == {"b"}


def exists(store: Store, name: str) -> bool:
    try:
        store.get("v1", "ConfigMap", name, "default")
    except NotFound:
        return False
    return True


def test_the_running_collector_lists_once_per_kind_and_collects_from_watches(store: Store) -> None:
    client = CountingLists(store)
    kinds = kinds_of(store.registry)
    gc = GarbageCollector(client, kinds)  # type: ignore[arg-type]
    owner = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    stop = threading.Event()
    # No resync during the test: only watch events can make it collect.
    runner = threading.Thread(target=gc.run, args=(stop,), kwargs={"resync_seconds": 3600})
    runner.start()
    try:
        for _ in range(100):
            if client.lists >= len(gc.kinds):
                break
            threading.Event().wait(0.02)
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
        for i in range(20):
            store.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"child-{i}", "ownerReferences": [ref]},
                }
            )
        store.delete("v1", "ConfigMap", "owner", "default")
        for _ in range(200):
            if not any(exists(store, f"child-{i}") for i in range(20)):
                break
            threading.Event().wait(0.05)
        assert not any(exists(store, f"child-{i}") for i in range(20))
        assert client.lists == len(gc.kinds)  # every kind it collects, Events excepted
    finally:
        stop.set()
        runner.join(timeout=10)
    assert not runner.is_alive()
