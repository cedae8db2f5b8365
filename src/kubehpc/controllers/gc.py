"""The garbage collector: ownerReferences, cascading deletion and the orphan/foreground finalizers.

Level-triggered: each round looks at every object of the watched kinds and moves the world
towards what ownerReferences and the deletion finalizers say —

* a dependent whose owners are all gone is deleted (background cascading deletion); one that
  still has a live owner only loses the references to the gone ones;
* an owner being deleted with the ``orphan`` finalizer: its dependents lose their reference to
  it, then the finalizer is removed;
* an owner being deleted with ``foregroundDeletion``: its dependents are deleted, and once no
  dependent with ``blockOwnerDeletion`` remains the finalizer is removed.

It talks to the cluster only through the Client protocol, so it runs against a real API
server too. Before deleting a dependent it re-reads each owner, because a round's listing of
many kinds is not one snapshot: an owner created after its kind was listed must not make its
new dependents look orphaned.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kubehpc.api.errors import ApiError, Conflict, NotFound
from kubehpc.api.registry import Registry
from kubehpc.store.client import Client, DeleteOptions, ListOptions, PatchType, Propagation, WatchEvent

Obj = dict[str, Any]
log = logging.getLogger(__name__)

ORPHAN = "orphan"
_PAUSE_FACTOR = 4.0
_MAX_PAUSE_S = 2.0
FOREGROUND = "foregroundDeletion"


@dataclass(frozen=True)
class KindRef:
    api_version: str
    kind: str
    namespaced: bool


def kinds_of(registry: Registry) -> list[KindRef]:
    """Every kind of a registry, addressed in its preferred version."""
    return [KindRef(rt.api_version(rt.preferred_version), rt.kind, rt.namespaced) for rt in registry]


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


class GarbageCollector:
    def __init__(self, client: Client, kinds: Sequence[KindRef]) -> None:
        self.client = client
        self.kinds = list(kinds)
        self._namespaced = {(_group(k.api_version), k.kind): k.namespaced for k in self.kinds}

    # --- one round -----------------------------------------------------------------------

    def reconcile_once(self) -> int:
        """One pass over everything; returns how many writes it made (0 = settled)."""
        objects: dict[str, Obj] = {}
        for k in self.kinds:
            for obj in self.client.list(k.api_version, k.kind).items:
                objects[_meta(obj).get("uid", "")] = obj
        dependents: dict[str, list[Obj]] = {}
        for obj in objects.values():
            for ref in _meta(obj).get("ownerReferences") or []:
                dependents.setdefault(ref.get("uid", ""), []).append(obj)
        writes = 0
        for uid, owner in objects.items():
            meta = _meta(owner)
            if not meta.get("deletionTimestamp"):
                continue
            finalizers = meta.get("finalizers") or []
            if ORPHAN in finalizers:
                writes += self._orphan(owner, dependents.get(uid, []))
            elif FOREGROUND in finalizers:
                writes += self._foreground(owner, dependents.get(uid, []), objects)
        for obj in objects.values():
            if _meta(obj).get("ownerReferences") and not _meta(obj).get("deletionTimestamp"):
                writes += self._collect_if_orphaned(obj, objects)
        return writes

    def _orphan(self, owner: Obj, deps: list[Obj]) -> int:
        uid = _meta(owner)["uid"]
        writes = 0
        for dep in deps:
            writes += self._drop_refs(dep, {uid})
        return writes + self._remove_finalizer(owner, ORPHAN)

    def _foreground(self, owner: Obj, deps: list[Obj], objects: dict[str, Obj]) -> int:
        uid = _meta(owner)["uid"]
        writes = 0
        blocking = 0
        for dep in deps:
            ref = next(r for r in _meta(dep).get("ownerReferences") or [] if r.get("uid") == uid)
            if ref.get("blockOwnerDeletion"):
                blocking += 1
            if _meta(dep).get("deletionTimestamp"):
                continue
            others_live = [
                r
                for r in _meta(dep).get("ownerReferences") or []
                if r.get("uid") != uid
                and r.get("uid") in objects
                and not _meta(objects[r["uid"]]).get("deletionTimestamp")
            ]
            if others_live:
                writes += self._drop_refs(dep, {uid})
                if ref.get("blockOwnerDeletion"):
                    blocking -= 1
                continue
            policy = Propagation.FOREGROUND if ref.get("blockOwnerDeletion") else Propagation.BACKGROUND
            writes += self._delete(dep, policy)
        if blocking == 0:
            writes += self._remove_finalizer(owner, FOREGROUND)
        return writes

    def _collect_if_orphaned(self, obj: Obj, objects: dict[str, Obj]) -> int:
        refs = _meta(obj).get("ownerReferences") or []
        gone = {r.get("uid", "") for r in refs if r.get("uid") not in objects}
        if not gone:
            return 0
        # Confirm with a fresh read: the round's listing is not one snapshot.
        gone = {r.get("uid", "") for r in refs if r.get("uid") in gone and not self._owner_exists(obj, r)}
        if not gone:
            return 0
        if len(gone) < len(refs):
            return self._drop_refs(obj, gone)
        return self._delete(obj, Propagation.BACKGROUND)

    # --- reads and writes ----------------------------------------------------------------

    def _owner_exists(self, dependent: Obj, ref: Obj) -> bool:
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        namespaced = self._namespaced.get((_group(api_version), kind))
        if namespaced is None:
            return True  # an owner kind we do not know: never collect on a guess
        namespace = _meta(dependent).get("namespace") if namespaced else None
        try:
            owner = self.client.get(api_version, kind, str(ref.get("name", "")), namespace)
        except NotFound:
            return False
        except ApiError as exc:
            log.warning("gc: cannot read owner %s %s: %s", kind, ref.get("name"), exc)
            return True
        return bool(_meta(owner).get("uid") == ref.get("uid"))

    def _address(self, obj: Obj) -> tuple[str, str, str, str | None]:
        meta = _meta(obj)
        return obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")

    def _drop_refs(self, obj: Obj, uids: set[str]) -> int:
        meta = _meta(obj)
        keep = [r for r in meta.get("ownerReferences") or [] if r.get("uid") not in uids]
        patch = {"metadata": {"ownerReferences": keep or None, "resourceVersion": meta["resourceVersion"]}}
        api_version, kind, name, namespace = self._address(obj)
        try:
            self.client.patch(api_version, kind, name, patch, PatchType.MERGE, namespace)
        except (NotFound, Conflict):
            return 0  # changed under us: the next round sees the new state
        return 1

    def _remove_finalizer(self, obj: Obj, finalizer: str) -> int:
        meta = _meta(obj)
        keep = [f for f in meta.get("finalizers") or [] if f != finalizer]
        patch = {"metadata": {"finalizers": keep or None, "resourceVersion": meta["resourceVersion"]}}
        api_version, kind, name, namespace = self._address(obj)
        try:
            self.client.patch(api_version, kind, name, patch, PatchType.MERGE, namespace)
        except (NotFound, Conflict):
            return 0
        return 1

    def _delete(self, obj: Obj, policy: Propagation) -> int:
        api_version, kind, name, namespace = self._address(obj)
        options = DeleteOptions(propagation_policy=policy, preconditions_uid=_meta(obj)["uid"])
        try:
            self.client.delete(api_version, kind, name, namespace, options)
        except (NotFound, Conflict):
            return 0
        return 1

    # --- loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event, resync_seconds: float = 10.0) -> None:
        run_on_changes(
            self.client, self.kinds, self.reconcile_once, stop, resync_seconds, "gc", GcTrigger().relevant
        )


class GcTrigger:
    """Which watch events can give the collector work: deletions (owners gone, blocking
    dependents gone), owners marked for orphan/foreground deletion, and objects whose owner
    references are new or changed. Status churn of owned pods is not among them.

    Called from one watch thread per kind, so state is keyed by uid and needs no lock."""

    def __init__(self) -> None:
        self._refs: dict[str, tuple[str, ...]] = {}

    def relevant(self, event: WatchEvent) -> bool:
        meta = _meta(event.object)
        uid = str(meta.get("uid", ""))
        if event.type == "DELETED":
            self._refs.pop(uid, None)
            return True
        if event.type not in ("ADDED", "MODIFIED"):
            return False
        if meta.get("deletionTimestamp") and {ORPHAN, FOREGROUND} & set(meta.get("finalizers") or []):
            return True
        refs = tuple(str(r.get("uid", "")) for r in meta.get("ownerReferences") or [])
        if self._refs.get(uid, ()) == refs:
            return False
        if refs:
            self._refs[uid] = refs
        else:
            self._refs.pop(uid, None)
        return True


def run_on_changes(
    client: Client,
    kinds: Sequence[KindRef],
    reconcile: Callable[[], int],
    stop: threading.Event,
    resync_seconds: float,
    name: str,
    relevant: Callable[[WatchEvent], bool] | None = None,
) -> None:
    """Call ``reconcile`` whenever any of ``kinds`` changes in a way ``relevant`` accepts (and
    every ``resync_seconds``) until ``stop`` is set. Rounds that wrote something are followed
    by another soon, so multi-step work (finalizer, then deletion) needs no resync."""
    dirty = threading.Event()
    dirty.set()
    watches = []

    def follow(k: KindRef) -> None:
        while not stop.is_set():
            try:
                w = client.watch(k.api_version, k.kind, ListOptions(), allow_bookmarks=False)
            except ApiError as exc:
                log.warning("%s: watch %s failed: %s", name, k.kind, exc)
                stop.wait(1.0)
                continue
            watches.append(w)
            if stop.is_set():
                w.stop()
                return
            for event in w:
                if relevant is None or relevant(event):
                    dirty.set()
            watches.remove(w)

    threads = [
        threading.Thread(target=follow, args=(k,), name=f"{name}-watch-{k.kind}", daemon=True) for k in kinds
    ]
    for t in threads:
        t.start()
    # Wake the loop below as soon as stop is set instead of at the next resync.
    threading.Thread(target=lambda: (stop.wait(), dirty.set()), name=f"{name}-stop", daemon=True).start()
    try:
        while not stop.is_set():
            dirty.wait(resync_seconds)
            if stop.is_set():
                break
            dirty.clear()
            started = time.monotonic()
            try:
                wrote = reconcile()
                # A round reads every object; leave the CPU to others for a multiple of what
                # the round cost, so a busy cluster's stream of changes cannot pin a core.
                stop.wait(min(_MAX_PAUSE_S, _PAUSE_FACTOR * (time.monotonic() - started)))
                if wrote:
                    dirty.set()
            except ApiError as exc:
                log.warning("%s: reconcile failed: %s", name, exc)
                stop.wait(1.0)
                dirty.set()
    finally:
        for w in list(watches):
            w.stop()
        for t in threads:
            t.join(timeout=5)
