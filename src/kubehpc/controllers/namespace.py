"""The namespace controller: empties a terminating namespace, then lets it go.

A deleted namespace stays, phase Terminating, while it holds the ``kubernetes`` entry of
``spec.finalizers``. Each round deletes every object of every namespaced kind inside it
(background propagation, as Kubernetes does); once nothing is left — objects kept by their own
finalizers or graceful termination are waited for — it empties ``spec.finalizers`` through
the ``finalize`` subresource and the API server removes the namespace.

It watches Namespaces only. While one is terminating it looks again every ``POLL_S``, as
Kubernetes' namespace controller requeues a namespace whose content is still going, instead of
following every kind for the deletions that finish it: that was a watcher per kind, woken by
every write in the cluster, to wait for an event that happens only while a namespace goes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from kubehpc.api.errors import Conflict, NotFound
from kubehpc.controllers.gc import KindRef, run_on_changes
from kubehpc.store.client import Client, DeleteOptions, ListOptions, PatchType, Propagation

Obj = dict[str, Any]
log = logging.getLogger(__name__)

NAMESPACE_FINALIZER = "kubernetes"
POLL_S = 0.25  # between rounds while a namespace is terminating


class NamespaceController:
    def __init__(self, client: Client, kinds: Sequence[KindRef]) -> None:
        self.client = client
        self.namespaced = [k for k in kinds if k.namespaced]
        self.terminating = False
        """Whether the last pass found a terminating namespace (one still to look at again)."""

    def reconcile_once(self) -> int:
        """One pass over the terminating namespaces; returns the number of writes made."""
        writes = 0
        terminating = False
        for ns in self.client.list("v1", "Namespace", ListOptions(read_only=True)).items:
            meta = ns.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                terminating = True
                writes += self._empty(ns)
        self.terminating = terminating
        return writes

    def _empty(self, ns: Obj) -> int:
        name = ns["metadata"]["name"]
        writes = 0
        remaining = 0
        for k in self.namespaced:
            for obj in self.client.list(k.api_version, k.kind, ListOptions(namespace=name)).items:
                remaining += 1
                if (obj.get("metadata") or {}).get("deletionTimestamp"):
                    continue  # already going; finalizers or a grace period hold it
                try:
                    self.client.delete(
                        k.api_version,
                        k.kind,
                        obj["metadata"]["name"],
                        name,
                        DeleteOptions(propagation_policy=Propagation.BACKGROUND),
                    )
                    writes += 1
                except (NotFound, Conflict):
                    pass
        if remaining or NAMESPACE_FINALIZER not in ((ns.get("spec") or {}).get("finalizers") or []):
            return writes
        keep = [f for f in ns["spec"]["finalizers"] if f != NAMESPACE_FINALIZER]
        try:
            self.client.patch(
                "v1",
                "Namespace",
                name,
                {"spec": {"finalizers": keep}},
                PatchType.MERGE,
                subresource="finalize",
            )
            writes += 1
        except NotFound:
            pass
        return writes

    def run(self, stop: threading.Event, resync_seconds: float = 10.0) -> None:
        run_on_changes(
            self.client,
            [NAMESPACE],
            self.reconcile_once,
            stop,
            resync_seconds,
            "namespace",
            poll=lambda: POLL_S if self.terminating else None,
        )


NAMESPACE = KindRef("v1", "Namespace", namespaced=False)
