"""Garbage collection: cascading deletion (background, foreground, orphan) through the Client."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kubehpc.api.errors import NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.controllers.gc import GarbageCollector, GcTrigger, kinds_of
from kubehpc.store.client import DeleteOptions, Propagation, WatchEvent
from kubehpc.store.store import Store

Obj = dict[str, Any]


@pytest.fixture
def store() -> Iterator[Store]:
    s = Store(build_registry(("kubehpc.api.kinds.core",)), None)
    yield s
    s.close()


@pytest.fixture
def gc(store: Store) -> GarbageCollector:
    return GarbageCollector(store, kinds_of(store.registry))


def cm(store: Store, name: str, *owners: Obj, block: bool = False) -> Obj:
    refs = [
        {
            "apiVersion": o["apiVersion"],
            "kind": o["kind"],
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
            **({"blockOwnerDeletion": True} if block else {}),
        }
        for o in owners
    ]
    meta: Obj = {"name": name, "namespace": "default"}
    if refs:
        meta["ownerReferences"] = refs
    return store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})


def exists(store: Store, name: str) -> bool:
    try:
        store.get("v1", "ConfigMap", name, "default")
    except NotFound:
        return False
    return True


def settle(gc: GarbageCollector) -> None:
    for _ in range(20):
        if gc.reconcile_once() == 0:
            return
    raise AssertionError("garbage collection did not settle")


def test_background_deletion_removes_dependents_of_a_deleted_owner(
    store: Store, gc: GarbageCollector
) -> None:
    owner = cm(store, "owner")
    cm(store, "child", owner)
    grandchild_owner = store.get("v1", "ConfigMap", "child", "default")
    cm(store, "grandchild", grandchild_owner)
    store.delete(
        "v1", "ConfigMap", "owner", "default", DeleteOptions(propagation_policy=Propagation.BACKGROUND)
    )
    settle(gc)
    assert not exists(store, "child") and not exists(store, "grandchild")


def test_a_dependent_with_a_live_owner_only_loses_the_dead_reference(
    store: Store, gc: GarbageCollector
) -> None:
    a, b = cm(store, "a"), cm(store, "b")
    cm(store, "shared", a, b)
    store.delete("v1", "ConfigMap", "a", "default")
    settle(gc)
    refs = store.get("v1", "ConfigMap", "shared", "default")["metadata"]["ownerReferences"]
    assert [r["name"] for r in refs] == ["b"]


def test_an_owner_reference_to_a_recreated_name_with_another_uid_counts_as_gone(
    store: Store, gc: GarbageCollector
) -> None:
    owner = cm(store, "owner")
    cm(store, "child", owner)
    store.delete("v1", "ConfigMap", "owner", "default")
    cm(store, "owner")  # same name, new uid
    settle(gc)
    assert not exists(store, "child")


def test_events_are_not_collected_as_kube_controller_manager_ignores_them(
    store: Store, gc: GarbageCollector
) -> None:
    owner = cm(store, "owner")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "owner.1", "namespace": "default", "ownerReferences": [ref]},
            "involvedObject": {"kind": "ConfigMap", "name": "owner", "namespace": "default"},
            "reason": "Made",
        }
    )
    store.delete("v1", "ConfigMap", "owner", "default")
    settle(gc)
    assert all(k.kind != "Event" for k in gc.kinds)  # not even watched: the busiest kind of all
    store.get("v1", "Event", "owner.1", "default")


def test_orphan_deletion_keeps_dependents_and_strips_their_reference(
    store: Store, gc: GarbageCollector
) -> None:
    owner = cm(store, "owner")
    cm(store, "child", owner)
    store.delete("v1", "ConfigMap", "owner", "default", DeleteOptions(propagation_policy=Propagation.ORPHAN))
    assert exists(store, "owner")  # held by the orphan finalizer
    settle(gc)
    assert not exists(store, "owner")
    assert "ownerReferences" not in store.get("v1", "ConfigMap", "child", "default")["metadata"]


def test_foreground_deletion_removes_dependents_before_the_owner(store: Store, gc: GarbageCollector) -> None:
    owner = cm(store, "owner")
    cm(store, "child", owner, block=True)
    store.delete(
        "v1", "ConfigMap", "owner", "default", DeleteOptions(propagation_policy=Propagation.FOREGROUND)
    )
    gc.reconcile_once()
    child = store.get("v1", "ConfigMap", "child", "default")
    assert child["metadata"]["deletionTimestamp"]  # itself deleted in the foreground
    assert exists(store, "owner")  # blocked until the child is gone
    settle(gc)
    assert not exists(store, "child") and not exists(store, "owner")


def test_foreground_deletion_waits_for_blocking_dependents_held_by_finalizers(
    store: Store, gc: GarbageCollector
) -> None:
    owner = cm(store, "owner")
    child = cm(store, "child", owner, block=True)
    store.patch(
        "v1", "ConfigMap", "child", {"metadata": {"finalizers": ["example.com/hold"]}}, namespace="default"
    )
    store.delete(
        "v1", "ConfigMap", "owner", "default", DeleteOptions(propagation_policy=Propagation.FOREGROUND)
    )
    settle(gc)
    assert exists(store, "owner") and exists(store, "child")
    store.patch("v1", "ConfigMap", "child", {"metadata": {"finalizers": None}}, namespace="default")
    settle(gc)
    assert not exists(store, "owner") and not exists(store, child["metadata"]["name"])


def test_job_pods_are_collected_when_the_job_is_deleted(store: Store, gc: GarbageCollector) -> None:
    job = store.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x"}]}}
            },
        }
    )
    ref = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "train",
        "uid": job["metadata"]["uid"],
        "controller": True,
    }
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train-0", "namespace": "default", "ownerReferences": [ref]},
            "spec": {"containers": [{"name": "m", "image": "x"}]},
        }
    )
    store.delete(
        "batch/v1", "Job", "train", "default", DeleteOptions(propagation_policy=Propagation.BACKGROUND)
    )
    settle(gc)
    assert store.list("v1", "Pod").items == []


def test_run_collects_in_the_background_until_stopped(store: Store, gc: GarbageCollector) -> None:
    stop = threading.Event()
    runner = threading.Thread(target=gc.run, args=(stop,), kwargs={"resync_seconds": 0.05})
    runner.start()
    try:
        owner = cm(store, "owner")
        cm(store, "child", owner)
        store.delete("v1", "ConfigMap", "owner", "default")
        for _ in range(200):
            if not exists(store, "child"):
                break
            threading.Event().wait(0.05)
        assert not exists(store, "child")
    finally:
        stop.set()
        runner.join(timeout=10)
    assert not runner.is_alive()


def test_status_churn_of_owned_objects_does_not_trigger_a_round() -> None:
    trigger = GcTrigger()
    ref = {"uid": "owner-uid", "name": "o", "kind": "Job", "apiVersion": "batch/v1"}
    owned = {"metadata": {"uid": "p1", "ownerReferences": [ref]}, "status": {"phase": "Pending"}}
    assert trigger.relevant(WatchEvent("ADDED", owned))
    assert not trigger.relevant(WatchEvent("MODIFIED", {**owned, "status": {"phase": "Running"}}))
    assert trigger.relevant(WatchEvent("MODIFIED", {"metadata": {"uid": "p1"}}))  # references dropped
    assert trigger.relevant(WatchEvent("DELETED", owned))


def test_owners_marked_for_orphan_or_foreground_deletion_trigger_a_round() -> None:
    marked = {"metadata": {"uid": "o", "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["orphan"]}}
    assert GcTrigger().relevant(WatchEvent("MODIFIED", marked))
    assert not GcTrigger().relevant(WatchEvent("MODIFIED", {"metadata": {"uid": "plain"}}))
