"""The namespace controller: empties a terminating namespace, then lets it go.

A deleted namespace stays, phase Terminating, while it holds the ``kubernetes`` entry of
``spec.finalizers``. Each round deletes every object of every namespaced kind inside it
(background propagation, as Kubernetes does); once nothing is left — objects kept by their own
finalizers or graceful termination are waited for — it empties ``spec.finalizers`` through
the ``finalize`` subresource and the API server removes the namespace.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from kubehpc.api.errors import Conflict, NotFound
from kubehpc.controllers.gc import KindRef, run_on_changes
from kubehpc.store.client import Client, DeleteOptions, ListOptions, PatchType, Propagation, WatchEvent

Obj = dict[str, Any]
log = logging.getLogger(__name__)

NAMESPACE_FINALIZER = "kubernetes"


class NamespaceController:
    def __init__(self, client: Client, kinds: Sequence[KindRef]) -> None:
        self.client = client
        self.namespaced = [k for k in kinds if k.namespaced]
        self.kinds = list(kinds)

    def reconcile_once(self) -> int:
        """One pass over the terminating namespaces; returns the number of writes made."""
        writes = 0
        for ns in self.client.list("v1", "Namespace").items:
            meta = ns.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                writes += self._empty(ns)
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
            self.client, self.kinds, self.reconcile_once, stop, resync_seconds, "namespace", _relevant
        )


def _relevant(event: WatchEvent) -> bool:
    """Namespace changes start the work; deletions of content may finish it."""
    return event.object.get("kind") == "Namespace" or event.type == "DELETED"
