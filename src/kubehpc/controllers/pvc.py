"""Binds PersistentVolumeClaims to the embedded host-directory storage.

The node agent gives every pod that mounts a claim the directory
``$KUBEHPC_HOME/volumes/<namespace>/<claim>`` (see :mod:`kubehpc.node.volumes`), so any claim of
the storage class this storage serves — ``kubehpc-hostpath``, the empty class, or none — is
satisfiable at once. This controller says so in the claim, as a provisioner and Kubernetes'
persistent-volume controller would: ``status.phase`` Bound, ``status.capacity.storage`` = the
requested size (a directory has no size of its own; the request is recorded, not enforced),
``status.accessModes`` = the requested modes, and the annotation
``pv.kubernetes.io/bind-completed: "yes"``. No PersistentVolume object is created.

A claim naming another storage class stays Pending, with a Warning Event saying that no
provisioner serves that class (once per claim and class while this controller runs).
"""

from __future__ import annotations

import threading
from typing import Any

from kubehpc.api.errors import Conflict, NotFound
from kubehpc.controllers.gc import KindRef, run_on_changes
from kubehpc.store.client import Client, WatchEvent
from kubehpc.store.events import WARNING, EventRecorder

Obj = dict[str, Any]

STORAGE_CLASS = "kubehpc-hostpath"
SERVED_CLASSES = (None, "", STORAGE_CLASS)
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
COMPONENT = "persistentvolume-controller"
_PVC = KindRef("v1", "PersistentVolumeClaim", True)


class PvcBinder:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.events = EventRecorder(client, COMPONENT)
        self._reported: set[tuple[str, str]] = set()  # (claim uid, storage class) warned about

    def reconcile_once(self) -> int:
        """One pass over the Pending claims; returns the number of writes made."""
        writes = 0
        for pvc in self.client.list("v1", "PersistentVolumeClaim").items:
            meta = pvc.get("metadata") or {}
            if (
                meta.get("deletionTimestamp")
                or (pvc.get("status") or {}).get("phase", "Pending") != "Pending"
            ):
                continue
            storage_class = (pvc.get("spec") or {}).get("storageClassName")
            if storage_class in SERVED_CLASSES:
                writes += self._bind(pvc)
            else:
                writes += self._report_unserved(pvc, str(storage_class))
        return writes

    def _bind(self, pvc: Obj) -> int:
        spec = pvc.get("spec") or {}
        meta = pvc["metadata"]
        try:
            if (meta.get("annotations") or {}).get(BIND_COMPLETED) != "yes":
                pvc = {**pvc, "metadata": {**meta, "annotations": {**(meta.get("annotations") or {})}}}
                pvc["metadata"]["annotations"][BIND_COMPLETED] = "yes"
                pvc = self.client.update(pvc)  # resourceVersion kept: a concurrent change wins
            status: Obj = {**(pvc.get("status") or {}), "phase": "Bound"}
            storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
            if storage is not None:
                status["capacity"] = {"storage": storage}
            if spec.get("accessModes"):
                status["accessModes"] = list(spec["accessModes"])
            self.client.update_status({**pvc, "status": status})
        except (Conflict, NotFound):
            return 0  # changed or gone meanwhile: the next round sees the new version
        return 2

    def _report_unserved(self, pvc: Obj, storage_class: str) -> int:
        key = (str(pvc["metadata"].get("uid", "")), storage_class)
        if key in self._reported:
            return 0
        self._reported.add(key)
        ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": pvc["metadata"]}
        self.events.record(
            ref,
            WARNING,
            "ProvisioningFailed",
            f'no provisioner serves storage class "{storage_class}": kubehpc provisions only '
            f'"{STORAGE_CLASS}" (or no class), as a directory under $KUBEHPC_HOME/volumes',
        )
        return 0  # an event is not progress: no need for another round

    def run(self, stop: threading.Event, resync_seconds: float = 10.0) -> None:
        run_on_changes(
            self.client, [_PVC], self.reconcile_once, stop, resync_seconds, "pvc-binder", _relevant
        )


def _relevant(event: WatchEvent) -> bool:
    return event.type in ("ADDED", "MODIFIED") and (event.object.get("status") or {}).get("phase") in (
        None,
        "Pending",
    )
