"""The watch-and-reconcile loop the three KubeRay controllers share.

Each follows its own kind and the kinds it owns (an event on an owned object queues its
owner), re-lists everything every ``resync_s`` and reconciles one object at a time; the
reconcile returns after how many seconds it wants to look again (or None). An owned kind may
come with a label selector: KubeRay's operator scopes its cache of Pods to those labelled
``ray.io/node-type`` and of Jobs to those it created, so the cluster's other pods and Jobs
never reach it (:data:`RAY_PODS`, :data:`RAY_JOBS`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kubehpc.api.errors import ApiError
from kubehpc.controllers.job.workqueue import Key, WorkQueue
from kubehpc.controllers.ray import constants as c
from kubehpc.controllers.watching import Followers
from kubehpc.store.client import Client, ListOptions

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# What KubeRay's manager caches of the kinds it owns (its CacheSelectors): pods with a Ray node
# type (a label it keeps users from overriding), Jobs it created (RayJob submitters).
RAY_PODS = ("v1", "Pod", c.NODE_TYPE_LABEL)
RAY_JOBS = ("batch/v1", "Job", f"{c.CREATED_BY_LABEL}={c.MANAGER}")


class OwnerLoop:
    def __init__(
        self,
        client: Client,
        api_version: str,
        kind: str,
        reconcile: Callable[[str, str], float | None],
        owned: Sequence[tuple[str, str] | tuple[str, str, str]] = (),
        resync_s: float = 10.0,
    ) -> None:
        self.client = client
        self.api_version = api_version
        self.kind = kind
        self.reconcile = reconcile
        self.owned = tuple(owned)
        self.resync_s = resync_s
        self.queue = WorkQueue()

    def _on_primary(self, event_type: str, obj: Obj) -> None:
        m = obj.get("metadata") or {}
        self.queue.add((str(m.get("namespace") or "default"), str(m.get("name"))))

    def _on_owned(self, event_type: str, obj: Obj) -> None:
        m = obj.get("metadata") or {}
        for ref in m.get("ownerReferences") or ():
            if ref.get("kind") == self.kind and ref.get("controller"):
                # Pod events come in bursts (a node's status, then its readiness): batch them.
                self.queue.add((str(m.get("namespace") or "default"), str(ref.get("name"))), 0.2)

    def _enqueue_all(self) -> None:
        try:
            listed = self.client.list(self.api_version, self.kind, ListOptions())
        except ApiError:
            log.exception("listing %s failed", self.kind)
            return
        for obj in listed.items:
            self._on_primary("SYNC", obj)

    def run(self, stop: threading.Event) -> None:
        self.queue = WorkQueue()
        followers = Followers(self.client, read_only=True)  # handlers pick keys
        followers.start(stop, self.api_version, self.kind, self._on_primary)
        for api_version, kind, *selector in self.owned:
            followers.start(stop, api_version, kind, self._on_owned, *selector)
        next_resync = 0.0
        while not stop.is_set():
            if time.monotonic() >= next_resync:
                self._enqueue_all()
                next_resync = time.monotonic() + self.resync_s
            key: Key | None = self.queue.get(timeout_s=0.5)
            if key is None:
                continue
            try:
                again = self.reconcile(*key)
            except Exception:
                log.exception("reconciling %s %s/%s failed; retrying", self.kind, *key)
                self.queue.add(key, 2.0)
                continue
            if again is not None:
                self.queue.add(key, again)
        self.queue.close()
        followers.stop()
