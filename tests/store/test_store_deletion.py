"""Deletion: preconditions, finalizers and deletionTimestamp, graceful pods, propagation."""

from __future__ import annotations

import pytest
from storekit import configmap, pod

from kubehpc.api.errors import Conflict, Invalid, NotFound
from kubehpc.store.client import DeleteOptions, PatchType, Propagation
from kubehpc.store.store import Store


def _exists(store: Store, kind: str, name: str) -> bool:
    try:
        store.get("v1", kind, name, "default")
    except NotFound:
        return False
    return True


def test_delete_without_finalizers_removes_the_object_now(store: Store) -> None:
    store.create(configmap("c"))
    out = store.delete("v1", "ConfigMap", "c", "default")
    assert out["metadata"]["name"] == "c"
    assert not _exists(store, "ConfigMap", "c")


def test_delete_of_a_missing_object_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.delete("v1", "ConfigMap", "c", "default")


def test_delete_preconditions_on_uid_and_resource_version_are_conflicts(store: Store) -> None:
    obj = store.create(configmap("c"))
    with pytest.raises(Conflict, match="UID in precondition"):
        store.delete("v1", "ConfigMap", "c", "default", DeleteOptions(preconditions_uid="other"))
    with pytest.raises(Conflict, match="ResourceVersion in precondition"):
        store.delete("v1", "ConfigMap", "c", "default", DeleteOptions(preconditions_resource_version="1"))
    store.delete("v1", "ConfigMap", "c", "default", DeleteOptions(preconditions_uid=obj["metadata"]["uid"]))
    assert not _exists(store, "ConfigMap", "c")


def test_objects_with_finalizers_get_a_deletion_timestamp_and_stay(store: Store) -> None:
    obj = configmap("c")
    obj["metadata"]["finalizers"] = ["example.com/keep"]
    store.create(obj)
    out = store.delete("v1", "ConfigMap", "c", "default")
    assert out["metadata"]["deletionTimestamp"]
    assert out["metadata"]["deletionGracePeriodSeconds"] == 0
    assert _exists(store, "ConfigMap", "c")


def test_removing_the_last_finalizer_of_a_deleted_object_deletes_it(store: Store) -> None:
    obj = configmap("c")
    obj["metadata"]["finalizers"] = ["example.com/keep"]
    store.create(obj)
    store.delete("v1", "ConfigMap", "c", "default")
    store.patch("v1", "ConfigMap", "c", {"metadata": {"finalizers": None}}, PatchType.MERGE, "default")
    assert not _exists(store, "ConfigMap", "c")


def test_no_finalizer_can_be_added_to_an_object_being_deleted(store: Store) -> None:
    obj = configmap("c")
    obj["metadata"]["finalizers"] = ["a"]
    store.create(obj)
    store.delete("v1", "ConfigMap", "c", "default")
    with pytest.raises(Invalid, match="no new finalizers"):
        store.patch(
            "v1", "ConfigMap", "c", {"metadata": {"finalizers": ["a", "b"]}}, PatchType.MERGE, "default"
        )


def test_orphan_propagation_adds_the_orphan_finalizer(store: Store) -> None:
    store.create(configmap("c"))
    out = store.delete(
        "v1", "ConfigMap", "c", "default", DeleteOptions(propagation_policy=Propagation.ORPHAN)
    )
    assert out["metadata"]["finalizers"] == ["orphan"]
    assert out["metadata"]["deletionTimestamp"]


def test_foreground_propagation_adds_the_foreground_deletion_finalizer(store: Store) -> None:
    store.create(configmap("c"))
    out = store.delete(
        "v1", "ConfigMap", "c", "default", DeleteOptions(propagation_policy=Propagation.FOREGROUND)
    )
    assert out["metadata"]["finalizers"] == ["foregroundDeletion"]


def test_a_bound_running_pod_is_deleted_gracefully(store: Store) -> None:
    store.create(pod("p", nodeName="node-1", terminationGracePeriodSeconds=10))
    out = store.delete("v1", "Pod", "p", "default")
    assert out["metadata"]["deletionGracePeriodSeconds"] == 10
    assert out["metadata"]["deletionTimestamp"]
    assert _exists(store, "Pod", "p")
    store.delete("v1", "Pod", "p", "default", DeleteOptions(grace_period_seconds=0))  # the node agent's part
    assert not _exists(store, "Pod", "p")


def test_an_unbound_pod_is_deleted_at_once(store: Store) -> None:
    store.create(pod("p"))
    store.delete("v1", "Pod", "p", "default")
    assert not _exists(store, "Pod", "p")


def test_grace_zero_deletes_a_bound_pod_at_once(store: Store) -> None:
    store.create(pod("p", nodeName="node-1"))
    store.delete("v1", "Pod", "p", "default", DeleteOptions(grace_period_seconds=0))
    assert not _exists(store, "Pod", "p")


def test_dry_run_delete_keeps_the_object(store: Store) -> None:
    store.create(configmap("c"))
    store.delete("v1", "ConfigMap", "c", "default", DeleteOptions(dry_run=True))
    assert _exists(store, "ConfigMap", "c")


def test_deleting_a_namespace_marks_it_terminating(store: Store) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    out = store.delete("v1", "Namespace", "team")
    assert out["status"]["phase"] == "Terminating"
    assert out["metadata"]["deletionTimestamp"]
    assert store.get("v1", "Namespace", "team")["status"]["phase"] == "Terminating"


def test_a_namespace_goes_once_its_finalize_subresource_empties_spec_finalizers(store: Store) -> None:
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    store.delete("v1", "Namespace", "team")
    store.patch(
        "v1", "Namespace", "team", {"spec": {"finalizers": []}}, PatchType.MERGE, subresource="finalize"
    )
    with pytest.raises(NotFound):
        store.get("v1", "Namespace", "team")
