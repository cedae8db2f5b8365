"""``WriteOptions(handed_over=True)``: a writer that built the object for this write (an
Event, a pod from its template, a fresh status) hands it over; the store keeps it instead of
copying it first. Everyone else's object is copied and never changed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from storekit import pod

from kubehpc.api.errors import BadRequest, Invalid
from kubehpc.store.client import HANDED_OVER, READ_ONLY_RESULT
from kubehpc.store.store import Store


def shared_pod(store: Store, name: str) -> dict[str, Any]:
    return store.get("v1", "Pod", name, read_only=True)


def test_a_handed_over_create_keeps_the_callers_object(store: Store) -> None:
    obj = pod("a")
    created = store.create(obj, HANDED_OVER)
    assert created is obj
    assert shared_pod(store, "a") is obj
    assert obj["metadata"]["uid"] and obj["metadata"]["resourceVersion"]


def test_a_create_not_handed_over_leaves_the_callers_object_alone(store: Store) -> None:
    obj = pod("a")
    store.create(obj, READ_ONLY_RESULT)
    assert shared_pod(store, "a") is not obj
    assert "uid" not in obj["metadata"]


def test_a_handed_over_update_keeps_the_callers_object(store: Store) -> None:
    store.create(pod("a"))
    mine = store.get("v1", "Pod", "a")
    mine["metadata"]["labels"] = {"x": "1"}
    assert store.update(mine, HANDED_OVER) is mine
    assert shared_pod(store, "a") is mine


def test_a_handed_over_status_write_keeps_the_status_and_only_reads_the_rest(store: Store) -> None:
    store.create(pod("a"))
    shared = shared_pod(store, "a")
    before = repr(shared)
    status = {"phase": "Running"}
    # As the controllers write: the stored object, shared, with a status of their own.
    written = store.update_status({**shared, "status": status}, HANDED_OVER)
    assert written["status"] is status
    assert repr(shared) == before, "the shared metadata and spec it was given were changed"


def test_a_handed_over_object_that_is_not_json_is_refused_without_using_a_resource_version(
    store: Store,
) -> None:
    before = store.resource_version
    bad = pod("a")
    bad["metadata"]["annotations"] = {"at": dt.datetime(2026, 1, 1)}
    with pytest.raises((BadRequest, Invalid)):
        store.create(bad, HANDED_OVER)
    assert store.resource_version == before
    store.create(pod("b"))
    assert store.resource_version == before + 1
    assert store.get("v1", "Pod", "b")["metadata"]["resourceVersion"] == str(before + 1)


def test_a_non_json_value_the_schema_does_not_look_at_is_refused_when_stored(store: Store) -> None:
    before = store.resource_version
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        # A set is no JSON value; validation does not look inside fieldsV1.
        "metadata": {
            "name": "c",
            "namespace": "default",
            "managedFields": [{"fieldsV1": {"f:data": {1, 2}}}],
        },
        "data": {"k": "v"},
    }
    with pytest.raises(BadRequest, match="not JSON-serialisable"):
        store.create(config_map, HANDED_OVER)
    assert store.resource_version == before
    assert store.list("v1", "ConfigMap").items == []
