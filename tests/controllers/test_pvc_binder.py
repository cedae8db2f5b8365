"""PersistentVolumeClaims are bound to the embedded host-directory storage."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from kubehpc.api.kinds import build_registry
from kubehpc.controllers.pvc import BIND_COMPLETED, PvcBinder
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store

UNSET = object()


@pytest.fixture
def store() -> Iterator[Store]:
    s = Store(build_registry(("kubehpc.api.kinds.core",)), None)
    yield s
    s.close()


def claim(store: Store, name: str, storage_class: object = UNSET, size: str = "5Gi") -> dict:
    spec: dict = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}}
    if storage_class is not UNSET:
        spec["storageClassName"] = storage_class
    return store.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }
    )


def get(store: Store, name: str) -> dict:
    return store.get("v1", "PersistentVolumeClaim", name, "default")


def events(store: Store, name: str) -> list[dict]:
    items = store.list("v1", "Event", ListOptions(namespace="default")).items
    return [e for e in items if e["involvedObject"]["name"] == name]


def test_a_pending_claim_is_bound_with_its_requested_capacity_and_access_modes(store):
    claim(store, "data")
    PvcBinder(store).reconcile_once()
    status = get(store, "data")["status"]
    assert status == {"phase": "Bound", "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteMany"]}


def test_binding_annotates_the_claim_bind_completed(store):
    claim(store, "data")
    PvcBinder(store).reconcile_once()
    assert get(store, "data")["metadata"]["annotations"][BIND_COMPLETED] == "yes"


@pytest.mark.parametrize("storage_class", ["", "kubehpc-hostpath"])
def test_claims_of_the_empty_or_kubehpc_hostpath_class_are_bound(store, storage_class):
    claim(store, "data", storage_class)
    PvcBinder(store).reconcile_once()
    assert get(store, "data")["status"]["phase"] == "Bound"


def test_a_claim_of_another_storage_class_stays_pending(store):
    claim(store, "fast", "ceph-rbd")
    PvcBinder(store).reconcile_once()
    assert get(store, "fast")["status"]["phase"] == "Pending"


def test_a_claim_of_another_storage_class_gets_a_warning_naming_the_class(store):
    claim(store, "fast", "ceph-rbd")
    PvcBinder(store).reconcile_once()
    (ev,) = events(store, "fast")
    assert (ev["type"], ev["reason"]) == ("Warning", "ProvisioningFailed")
    assert 'no provisioner serves storage class "ceph-rbd"' in ev["message"]
    assert ev["involvedObject"]["kind"] == "PersistentVolumeClaim"


def test_the_warning_for_an_unserved_class_is_recorded_once_per_claim(store):
    claim(store, "fast", "ceph-rbd")
    binder = PvcBinder(store)
    binder.reconcile_once()
    binder.reconcile_once()
    (ev,) = events(store, "fast")
    assert ev["count"] == 1


def test_a_bound_claim_is_left_alone(store):
    claim(store, "data")
    binder = PvcBinder(store)
    binder.reconcile_once()
    bound = get(store, "data")
    assert binder.reconcile_once() == 0
    assert get(store, "data")["metadata"]["resourceVersion"] == bound["metadata"]["resourceVersion"]


def test_the_running_binder_binds_a_claim_created_while_it_runs(store):
    stop = threading.Event()
    thread = threading.Thread(target=PvcBinder(store).run, args=(stop,), daemon=True)
    thread.start()
    try:
        claim(store, "late")
        deadline = time.monotonic() + 10
        while get(store, "late")["status"]["phase"] != "Bound":
            assert time.monotonic() < deadline, "the claim was not bound"
            time.sleep(0.02)
    finally:
        stop.set()
        thread.join(5)
