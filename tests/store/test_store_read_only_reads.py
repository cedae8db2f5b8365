"""``ListOptions(read_only=True)`` and ``get(..., read_only=True)``: in-process readers that
never change what they read share the store's decoded objects instead of paying for a copy
each; everyone else still gets an independent copy, and a shared object never changes once
handed out."""

from __future__ import annotations

from storekit import pod

from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store

READ_ONLY = ListOptions(read_only=True)


def test_read_only_lists_share_one_decoded_object_per_version(store: Store) -> None:
    store.create(pod("a"))
    first = store.list("v1", "Pod", READ_ONLY).items[0]
    second = store.list("v1", "Pod", READ_ONLY).items[0]
    assert first is second


def test_plain_lists_still_hand_out_independent_copies(store: Store) -> None:
    store.create(pod("a"))
    mine = store.list("v1", "Pod").items[0]
    mine["metadata"]["labels"] = {"changed": "by the caller"}
    assert "labels" not in store.list("v1", "Pod", READ_ONLY).items[0]["metadata"]
    assert "labels" not in store.get("v1", "Pod", "a")["metadata"]


def test_a_shared_object_keeps_its_version_after_the_object_changes(store: Store) -> None:
    store.create(pod("a"))
    before = store.list("v1", "Pod", READ_ONLY).items[0]
    rv = before["metadata"]["resourceVersion"]
    store.patch("v1", "Pod", "a", {"metadata": {"labels": {"x": "1"}}})
    assert before["metadata"]["resourceVersion"] == rv
    assert "labels" not in before["metadata"]
    assert store.list("v1", "Pod", READ_ONLY).items[0]["metadata"]["labels"] == {"x": "1"}


def test_a_read_only_list_in_another_version_is_converted(store: Store) -> None:
    store.create(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 2}}
    )
    old = store.list("example.com/v1alpha1", "Widget", READ_ONLY).items[0]
    assert old["apiVersion"] == "example.com/v1alpha1"
    assert old["spec"] == {"size": 2}


def test_a_read_only_watch_delivers_the_stored_objects(store: Store) -> None:
    watch = store.watch("v1", "Pod", ListOptions(read_only=True))
    created = store.create(pod("a"))
    event = next(iter(watch))
    watch.stop()
    assert event.type == "ADDED"
    assert event.object is store.list("v1", "Pod", READ_ONLY).items[0]
    assert event.object["metadata"]["uid"] == created["metadata"]["uid"]


def test_a_plain_watch_delivers_copies(store: Store) -> None:
    watch = store.watch("v1", "Pod")
    store.create(pod("a"))
    event = next(iter(watch))
    watch.stop()
    assert event.object is not store.list("v1", "Pod", READ_ONLY).items[0]
    event.object["metadata"]["name"] = "changed"
    assert store.get("v1", "Pod", "a")["metadata"]["name"] == "a"


def test_a_read_only_get_shares_the_stored_object_and_a_plain_get_copies_it(store: Store) -> None:
    store.create(pod("a"))
    shared = store.get("v1", "Pod", "a", read_only=True)
    assert shared is store.list("v1", "Pod", READ_ONLY).items[0]
    assert store.get("v1", "Pod", "a") is not shared


def test_a_read_only_get_in_another_version_is_converted(store: Store) -> None:
    store.create(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 2}}
    )
    old = store.get("example.com/v1alpha1", "Widget", "w", read_only=True)
    assert old["apiVersion"] == "example.com/v1alpha1" and old["spec"] == {"size": 2}


def test_a_shared_object_changed_in_place_is_caught(store: Store) -> None:
    store.create(pod("a"))
    assert store.changed_shared_objects() == []
    shared = store.get("v1", "Pod", "a", read_only=True)
    shared["metadata"]["labels"] = {"changed": "in place"}
    assert "pods default/a" in store.changed_shared_objects()
    del shared["metadata"]["labels"]  # as it was, for the suite's own check at the end
