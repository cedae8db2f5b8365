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

from kubehpc.api import fields as F
from kubehpc.api.errors import ApiError, Conflict, NotFound
from kubehpc.api.registry import Registry
from kubehpc.store.client import Client, DeleteOptions, ListOptions, PatchType, Propagation, Watch, WatchEvent

Obj = dict[str, Any]
log = logging.getLogger(__name__)

ORPHAN = "orphan"
_PAUSE_FACTOR = 4.0
_MAX_PAUSE_S = 2.0
FOREGROUND = "foregroundDeletion"
# Kinds the collector never watches, as kube-controller-manager's (its DefaultIgnoredResources):
# Events outnumber every other kind and name what they are about in involvedObject, not in
# ownerReferences: watching them would cost the collector more than everything else together.
IGNORED_KINDS = frozenset({("", "Event"), ("events.k8s.io", "Event")})


@dataclass(frozen=True)
class KindRef:
    api_version: str
    kind: str
    namespaced: bool

    def __hash__(self) -> int:  # written out, so mypyc compiles it: the collector hashes one per event
        return hash((self.api_version, self.kind, self.namespaced))


def kinds_of(registry: Registry) -> list[KindRef]:
    """Every kind of a registry, addressed in its preferred version."""
    return [KindRef(rt.api_version(rt.preferred_version), rt.kind, rt.namespaced) for rt in registry]


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class GarbageCollector:
    def __init__(self, client: Client, kinds: Sequence[KindRef]) -> None:
        self.client = client
        self.kinds = [k for k in kinds if (_group(k.api_version), k.kind) not in IGNORED_KINDS]
        self._namespaced = {(_group(k.api_version), k.kind): k.namespaced for k in self.kinds}

    # --- one round -----------------------------------------------------------------------

    def reconcile_once(self) -> int:
        """One pass over everything, freshly listed; returns how many writes it made (0 = settled)."""
        graph = OwnerGraph()
        for k in self.kinds:
            graph.replace(k, self.client.list(k.api_version, k.kind).items)
        return self.reconcile(graph, None)

    def reconcile(self, graph: OwnerGraph, uids: set[str] | None) -> int:
        """Look at the objects ``uids`` of ``graph`` (None: at all of them): owners being
        deleted with a finalizer, dependents that may have lost their owners."""
        objects = graph.objects
        # A full round looks only at objects with owners or being deleted: nothing else can
        # need collecting (most objects, Events first of all, have neither).
        candidates = list(graph.interesting) if uids is None else sorted(u for u in uids if u in objects)
        writes = 0
        for uid in candidates:
            owner = objects[uid]
            meta = F.metadata(owner)
            if not meta.get("deletionTimestamp"):
                continue
            finalizers = meta.get("finalizers") or []
            dependents = graph.dependents_of(uid)
            if ORPHAN in finalizers:
                writes += self._orphan(owner, dependents)
            elif FOREGROUND in finalizers:
                writes += self._foreground(owner, dependents, objects)
        for uid in candidates:
            obj = objects.get(uid)
            if (
                obj is not None
                and F.metadata(obj).get("ownerReferences")
                and not F.metadata(obj).get("deletionTimestamp")
            ):
                writes += self._collect_if_orphaned(obj, objects)
        return writes

    def _orphan(self, owner: Obj, deps: list[Obj]) -> int:
        uid = F.metadata(owner)["uid"]
        writes = 0
        for dep in deps:
            writes += self._drop_refs(dep, {uid})
        return writes + self._remove_finalizer(owner, ORPHAN)

    def _foreground(self, owner: Obj, deps: list[Obj], objects: dict[str, Obj]) -> int:
        uid = F.metadata(owner)["uid"]
        writes = 0
        blocking = 0
        for dep in deps:
            ref = next(r for r in F.object_list(F.metadata(dep), "ownerReferences") if r.get("uid") == uid)
            if ref.get("blockOwnerDeletion"):
                blocking += 1
            if F.metadata(dep).get("deletionTimestamp"):
                continue
            others_live = [
                r
                for r in F.object_list(F.metadata(dep), "ownerReferences")
                if r.get("uid") != uid
                and r.get("uid") in objects
                and not F.metadata(objects[r["uid"]]).get("deletionTimestamp")
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
        refs = F.object_list(F.metadata(obj), "ownerReferences")
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
        namespace = F.metadata(dependent).get("namespace") if namespaced else None
        try:
            owner = self.client.get(api_version, kind, str(ref.get("name", "")), namespace)
        except NotFound:
            return False
        except ApiError as exc:
            log.warning("gc: cannot read owner %s %s: %s", kind, ref.get("name"), exc)
            return True
        return bool(F.metadata(owner).get("uid") == ref.get("uid"))

    def _address(self, obj: Obj) -> tuple[str, str, str, str | None]:
        meta = F.metadata(obj)
        return obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")

    def _drop_refs(self, obj: Obj, uids: set[str]) -> int:
        meta = F.metadata(obj)
        keep = [r for r in F.object_list(meta, "ownerReferences") if r.get("uid") not in uids]
        patch = {"metadata": {"ownerReferences": keep or None, "resourceVersion": meta["resourceVersion"]}}
        api_version, kind, name, namespace = self._address(obj)
        try:
            self.client.patch(api_version, kind, name, patch, PatchType.MERGE, namespace)
        except (NotFound, Conflict):
            return 0  # changed under us: the next round sees the new state
        return 1

    def _remove_finalizer(self, obj: Obj, finalizer: str) -> int:
        meta = F.metadata(obj)
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
        options = DeleteOptions(propagation_policy=policy, preconditions_uid=F.metadata(obj)["uid"])
        try:
            self.client.delete(api_version, kind, name, namespace, options)
        except (NotFound, Conflict):
            return 0
        return 1

    # --- loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event, resync_seconds: float = 10.0) -> None:
        """Keep an :class:`OwnerGraph` from list-then-watch of every kind and look only at what
        changed (plus everything every ``resync_seconds``): a round costs what changed, not
        what exists, so a busy cluster does not pay a full listing per change."""
        graph = OwnerGraph()
        wake = threading.Event()
        watches: set[Watch] = set()
        threads = [
            threading.Thread(
                target=self._follow,
                args=(k, graph, wake, watches, stop),
                name=f"gc-watch-{k.kind}",
                daemon=True,
            )
            for k in self.kinds
        ]
        for t in threads:
            t.start()

        def wake_on_stop() -> None:
            stop.wait()
            wake.set()

        threading.Thread(target=wake_on_stop, name="gc-stop", daemon=True).start()
        next_resync = time.monotonic() + resync_seconds
        try:
            while not stop.is_set():
                wake.wait(max(0.0, next_resync - time.monotonic()))
                if stop.is_set():
                    break
                wake.clear()
                if time.monotonic() >= next_resync:
                    graph.mark_all()
                    next_resync = time.monotonic() + resync_seconds
                started = time.monotonic()
                try:
                    with graph.lock:
                        uids = graph.take()
                        if uids is None or uids:
                            self.reconcile(graph, uids)
                except ApiError as exc:
                    log.warning("gc: reconcile failed: %s", exc)
                    graph.mark_all()
                    stop.wait(1.0)
                    wake.set()
                    continue
                # Leave the CPU to others for a multiple of what the round cost.
                stop.wait(min(_MAX_PAUSE_S, _PAUSE_FACTOR * (time.monotonic() - started)))
        finally:
            for w in list(watches):
                w.stop()
            for t in threads:
                t.join(timeout=5)

    def _follow(
        self, k: KindRef, graph: OwnerGraph, wake: threading.Event, watches: set[Watch], stop: threading.Event
    ) -> None:
        """List, then watch from the list's resourceVersion; list again whenever the watch ends."""
        while not stop.is_set():
            try:
                # The graph only reads what it is given: shared objects, no copies.
                listed = self.client.list(k.api_version, k.kind, ListOptions(read_only=True))
                with graph.lock:
                    graph.replace(k, listed.items)
                wake.set()
                w = self.client.watch(
                    k.api_version,
                    k.kind,
                    ListOptions(resource_version=listed.resource_version, read_only=True),
                )
            except ApiError as exc:
                log.warning("gc: list/watch %s failed: %s", k.kind, exc)
                stop.wait(1.0)
                continue
            watches.add(w)
            if stop.is_set():
                w.stop()
                return
            try:
                for event in w:
                    if event.type not in ("ADDED", "MODIFIED", "DELETED"):
                        continue
                    with graph.lock:
                        if event.type == "DELETED":
                            graph.delete(event.object)
                        else:
                            graph.put(k, event.object)
                        if graph.pending:
                            wake.set()
            except ApiError:
                log.debug("gc: %s watch ended; listing again", k.kind, exc_info=True)
            finally:
                w.stop()
                watches.discard(w)


def _refs(obj: Obj | None) -> tuple[str, ...]:
    if obj is None:
        return ()
    return tuple(str(r.get("uid", "")) for r in F.object_list(F.metadata(obj), "ownerReferences"))


def _held_by_finalizer(obj: Obj) -> bool:
    meta = F.metadata(obj)
    return bool(meta.get("deletionTimestamp")) and bool(
        {ORPHAN, FOREGROUND} & set(meta.get("finalizers") or [])
    )


class OwnerGraph:
    """Every object the collector knows, by uid, with the reverse of ownerReferences (owner uid
    -> dependents), as Kubernetes' garbage collector keeps its dependency graph. Changes mark
    the uids that may need work: a dependent whose references are new or changed, the
    dependents of an object that went away, an owner waiting on a deletion finalizer, and the
    owners of a dependent that went away (foreground deletion may now finish).

    Filled from watch threads and read by the round: callers hold :attr:`lock`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.objects: dict[str, Obj] = {}
        self._dependents: dict[str, set[str]] = {}
        self._kind_uids: dict[KindRef, set[str]] = {}
        self._dirty: set[str] = set()
        self._everything = True
        self.interesting: set[str] = set()
        """Uids of the objects with owner references or a deletion timestamp."""

    @property
    def pending(self) -> bool:
        return self._everything or bool(self._dirty)

    def dependents_of(self, uid: str) -> list[Obj]:
        objects = self.objects
        return [objects[d] for d in sorted(self._dependents.get(uid, ())) if d in objects]

    def replace(self, kind: KindRef, objs: list[Obj]) -> None:
        """A fresh list of one kind: objects of it not in the list are gone."""
        uids = {str(F.metadata(o).get("uid", "")) for o in objs}
        for gone in self._kind_uids.get(kind, set()) - uids:
            if gone in self.objects:
                self.delete(self.objects[gone])
        for obj in objs:
            self.put(kind, obj)

    def put(self, kind: KindRef, obj: Obj) -> None:
        uid = str(F.metadata(obj).get("uid", ""))
        before = _refs(self.objects.get(uid))
        self.objects[uid] = obj
        self._kind_uids.setdefault(kind, set()).add(uid)
        after = _refs(obj)
        if before != after:
            for owner in set(before) - set(after):
                self._unlink(owner, uid)
            for owner in after:
                self._dependents.setdefault(owner, set()).add(uid)
            self._dirty.add(uid)
        if _held_by_finalizer(obj):
            self._dirty.add(uid)
        if after or F.metadata(obj).get("deletionTimestamp"):
            self.interesting.add(uid)
        else:
            self.interesting.discard(uid)

    def delete(self, obj: Obj) -> None:
        uid = str(F.metadata(obj).get("uid", ""))
        gone = self.objects.pop(uid, None)
        self.interesting.discard(uid)
        for uids in self._kind_uids.values():
            uids.discard(uid)
        for owner in _refs(gone if gone is not None else obj):
            self._unlink(owner, uid)
            self._dirty.add(owner)
        self._dirty.update(self._dependents.get(uid, ()))
        self._dirty.discard(uid)

    def _unlink(self, owner: str, dependent: str) -> None:
        deps = self._dependents.get(owner)
        if deps is not None:
            deps.discard(dependent)
            if not deps:
                del self._dependents[owner]

    def mark_all(self) -> None:
        self._everything = True

    def take(self) -> set[str] | None:
        """The uids to look at (None: all), forgetting them."""
        if self._everything:
            self._everything = False
            self._dirty = set()
            return None
        dirty, self._dirty = self._dirty, set()
        return dirty


class GcTrigger:
    """Which watch events can give the collector work: deletions (owners gone, blocking
    dependents gone), owners marked for orphan/foreground deletion, and objects whose owner
    references are new or changed. Status churn of owned pods is not among them.

    Called from one watch thread per kind, so state is keyed by uid and needs no lock."""

    def __init__(self) -> None:
        self._refs: dict[str, tuple[str, ...]] = {}

    def relevant(self, event: WatchEvent) -> bool:
        meta = F.metadata(event.object)
        uid = str(meta.get("uid", ""))
        if event.type == "DELETED":
            self._refs.pop(uid, None)
            return True
        if event.type not in ("ADDED", "MODIFIED"):
            return False
        if meta.get("deletionTimestamp") and {ORPHAN, FOREGROUND} & set(meta.get("finalizers") or []):
            return True
        refs = tuple(str(r.get("uid", "")) for r in F.object_list(meta, "ownerReferences"))
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
    poll: Callable[[], float | None] | None = None,
) -> None:
    """Call ``reconcile`` whenever any of ``kinds`` changes in a way ``relevant`` accepts (and
    every ``resync_seconds``) until ``stop`` is set. Rounds that wrote something are followed
    by another soon, so multi-step work (finalizer, then deletion) needs no resync. ``poll``,
    asked after each round, may shorten the wait for the next: work that waits on something
    not watched."""
    dirty = threading.Event()
    dirty.set()
    watches = []

    def follow(k: KindRef) -> None:
        while not stop.is_set():
            try:
                w = client.watch(k.api_version, k.kind, ListOptions(read_only=True), allow_bookmarks=False)
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
    def wake_on_stop() -> None:
        stop.wait()
        dirty.set()

    threading.Thread(target=wake_on_stop, name=f"{name}-stop", daemon=True).start()
    try:
        wait_s = resync_seconds
        while not stop.is_set():
            dirty.wait(wait_s)
            if stop.is_set():
                break
            dirty.clear()
            wait_s = resync_seconds
            started = time.monotonic()
            try:
                wrote = reconcile()
                # A round reads every object; leave the CPU to others for a multiple of what
                # the round cost, so a busy cluster's stream of changes cannot pin a core.
                stop.wait(min(_MAX_PAUSE_S, _PAUSE_FACTOR * (time.monotonic() - started)))
                if wrote:
                    dirty.set()
                sooner = poll() if poll is not None else None
                if sooner is not None:
                    wait_s = min(resync_seconds, sooner)
            except ApiError as exc:
                log.warning("%s: reconcile failed: %s", name, exc)
                stop.wait(1.0)
                dirty.set()
    finally:
        for w in list(watches):
            w.stop()
        for t in threads:
            t.join(timeout=5)
