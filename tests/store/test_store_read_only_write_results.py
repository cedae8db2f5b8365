"""``WriteOptions(read_only=True)``: a writer that only reads what its write returns (a
controller naming the pod it created in an event) gets the object the store keeps, shared with
its read-only readers, instead of a decoded copy; every other writer still gets a copy of its
own. (Events, kept encoded only: test_store_write_mostly_kinds.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from storekit import pod

from kubehpc.store.client import READ_ONLY_RESULT, PatchType, WriteOptions
from kubehpc.store.store import Store


def shared_pod(store: Store, name: str) -> dict[str, Any]:
    return store.get("v1", "Pod", name, read_only=True)


def test_a_read_only_create_returns_the_object_the_store_shares(store: Store) -> None:
    created = store.create(pod("a"), READ_ONLY_RESULT)
    assert created is shared_pod(store, "a")
    stored = store.get("v1", "Pod", "a")
    assert created["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


def test_a_plain_create_returns_a_copy_of_its_own(store: Store) -> None:
    created = store.create(pod("a"))
    assert created is not shared_pod(store, "a")
    created["metadata"]["labels"] = {"changed": "by the caller"}
    assert "labels" not in store.get("v1", "Pod", "a")["metadata"]


@pytest.mark.parametrize("write", ["update", "update_status", "patch", "patch_status"])
def test_every_kind_of_write_shares_its_result_when_asked(store: Store, write: str) -> None:
    store.create(pod("a"))
    current = store.get("v1", "Pod", "a")
    if write == "update":
        current["metadata"]["labels"] = {"x": "1"}
        written = store.update(current, READ_ONLY_RESULT)
    elif write == "update_status":
        current["status"] = {"phase": "Running"}
        written = store.update_status(current, READ_ONLY_RESULT)
    else:
        body = {"metadata": {"labels": {"x": "1"}}} if write == "patch" else {"status": {"phase": "Running"}}
        subresource = "status" if write == "patch_status" else ""
        written = store.patch(
            "v1", "Pod", "a", body, PatchType.MERGE, subresource=subresource, options=READ_ONLY_RESULT
        )
    assert written is shared_pod(store, "a")


def test_a_no_op_update_shares_the_unchanged_version(store: Store) -> None:
    created = store.create(pod("a"))
    again = store.update(created, READ_ONLY_RESULT)
    assert again is shared_pod(store, "a")
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_a_read_only_result_in_another_version_is_converted(store: Store) -> None:
    widget = {
        "apiVersion": "example.com/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 2},
    }
    old = store.create(widget, READ_ONLY_RESULT)
    assert old["apiVersion"] == "example.com/v1alpha1" and old["spec"] == {"size": 2}
    assert store.get("example.com/v1", "Widget", "w")["spec"] == {"replicas": 2}


def test_a_dry_run_result_is_never_the_stored_object(store: Store) -> None:
    store.create(pod("a"))
    current = store.get("v1", "Pod", "a")
    current["metadata"]["labels"] = {"x": "1"}
    dry = store.update(current, WriteOptions(dry_run=True, read_only=True))
    assert dry["metadata"]["labels"] == {"x": "1"}
    assert "labels" not in shared_pod(store, "a")["metadata"]
