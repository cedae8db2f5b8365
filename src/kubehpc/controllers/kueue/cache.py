"""What the admission loop knows of the cluster: the latest seen version of every object it
watches, plus the admissions it assumed but has not seen written back yet.

Owned by one thread (the loop's); informer threads only queue events. Two rules keep it right:

* **Never go back in time.** A watch may deliver a version older than one the loop wrote itself
  (the write's reply is put in at once); an object older than the cached one is ignored, or a
  workload just admitted would look pending again and be admitted twice.
* **Only relevant changes start a cycle.** Each kind has a fingerprint of what admission reads
  (a Workload's spec and reservation, a queue's spec, a node's capacity ...). The loop's own
  status writes (messages, positions, queue counters) leave it unchanged, so they start no
  cycle: no hot loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubehpc.api import fields as F
from kubehpc.controllers.kueue.queuestatus import LocalQueueTally
from kubehpc.sched.admission.build import PodUse, Promise, pod_use, promised_room, promises_of, table_of
from kubehpc.sched.nodetable import NodeTable
from kubehpc.store.client import resource_version_number

Obj = dict[str, Any]

WORKLOAD = "Workload"
CLUSTER_QUEUE = "ClusterQueue"
LOCAL_QUEUE = "LocalQueue"
COHORT = "Cohort"
RESOURCE_FLAVOR = "ResourceFlavor"
WORKLOAD_PRIORITY_CLASS = "WorkloadPriorityClass"
NAMESPACE = "Namespace"
NODE = "Node"
POD = "Pod"
KINDS = (
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    COHORT,
    RESOURCE_FLAVOR,
    WORKLOAD_PRIORITY_CLASS,
    WORKLOAD,
    NAMESPACE,
    NODE,
    POD,
)
_TERMINAL = ("Succeeded", "Failed")


def object_key(obj: Obj) -> str:
    meta = F.metadata(obj)
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def _rv(obj: Obj) -> int | None:
    # None for an opaque resourceVersion (some API servers): cannot order, accept it.
    return resource_version_number(F.metadata(obj).get("resourceVersion") or "")


def _is_true(obj: Obj, ctype: str) -> bool:
    for c in F.conditions(obj):
        if c.get("type") == ctype:
            return bool(c.get("status") == "True")
    return False


def fingerprint(kind: str, obj: Obj) -> tuple[Any, ...]:
    """What admission reads of an object; a change of it is a reason to run a cycle. The parts
    themselves, not an encoding of them: they are the stored object's own, shared read only,
    so comparing two versions that share a part (a status write shares the Workload's spec,
    pod templates and all) is an identity check, not a walk."""
    meta = F.metadata(obj)
    if kind == WORKLOAD:
        status = F.status(obj)
        what: Any = (
            obj.get("spec"),
            _is_true(obj, "QuotaReserved"),
            _is_true(obj, "Evicted"),
            _is_true(obj, "Finished"),
            status.get("admission"),
        )
    elif kind == NAMESPACE:
        what = meta.get("labels")
    elif kind == WORKLOAD_PRIORITY_CLASS:
        what = obj.get("value")
    elif kind == NODE:
        spec, status = F.spec(obj), F.status(obj)
        what = (
            meta.get("labels"),
            spec.get("taints"),
            spec.get("unschedulable"),
            status.get("allocatable") or status.get("capacity"),
        )
    elif kind == POD:
        spec = F.spec(obj)
        running = bool(spec.get("nodeName")) and F.status(obj).get("phase") not in _TERMINAL
        what = (
            spec.get("nodeName"),
            running,
            [c.get("resources") for c in F.object_list(spec, "containers")],
        )
    else:  # queues, cohorts, flavors: their spec
        what = (obj.get("spec"), bool(meta.get("deletionTimestamp")))
    return what if isinstance(what, tuple) else (what,)


def _holds_node_room(pod: Obj) -> bool:
    return bool(F.spec(pod).get("nodeName")) and F.status(pod).get("phase") not in _TERMINAL


class AdmissionCache:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Obj]] = {kind: {} for kind in KINDS}
        self._prints: dict[str, dict[str, tuple[Any, ...]]] = {kind: {} for kind in KINDS}
        self._assumed: dict[str, Obj | None] = {}  # workload key -> the version before assuming
        self.dirty = True
        # Nodes or bound pods changed: room on the nodes, which only a workload still waiting
        # can make use of (the loop runs a cycle for it only when the last one left some).
        self.room_dirty = True
        self._nodes_dirty = True
        self._table: NodeTable | None = None
        # Kept as events arrive, so a new node table costs a pass over the nodes, not over
        # every pod and workload: what each bound pod takes, the sums per node, the bound pods
        # per pod set and node, and the node choices of admitted workloads.
        self._uses: dict[str, PodUse] = {}
        self._used: dict[str, dict[str, int]] = {}
        self._bound: dict[tuple[str, str, str, str], int] = {}
        self._promises: dict[str, tuple[Promise, ...]] = {}
        # Workloads with a promise not fully bound yet: the only ones that still hold room a
        # new table must count (a fully bound pod set's pods are counted as bound pods).
        self._open: set[str] = set()
        # The queue counters (reserving, admitted, quota held per LocalQueue ...), kept the same
        # way: a cycle's queue status then reads them instead of every Workload.
        self.tally = LocalQueueTally()

    # --- events ------------------------------------------------------------------------------

    def put(self, kind: str, obj: Obj) -> None:
        if kind == POD and not _holds_node_room(obj):
            # Only pods on a node take room there; the rest need not be kept at all.
            self.delete(kind, obj)
            return
        key = object_key(obj)
        current = self.objects[kind].get(key)
        if current is not None and self._older(obj, current):
            return
        self.objects[kind][key] = obj
        if kind == WORKLOAD:
            self._assumed.pop(key, None)  # a newer version than the one assumed upon
            # What is tracked of a workload (its queue counters, its node choices) is read from
            # its spec and status alone. The stored version of an admission the loop assumed
            # carries the very status and spec it was tracked with (the write hands its status
            # over, and shares the spec): nothing to count again.
            if not (
                current is not None
                and obj.get("status") is current.get("status")
                and obj.get("spec") is current.get("spec")
            ):
                self._track_workload(key, obj)
        elif kind == POD:
            self._track_pod(key, pod_use(obj))
        self._touch(kind, key, fingerprint(kind, obj))

    def delete(self, kind: str, obj: Obj) -> None:
        key = object_key(obj)
        if self.objects[kind].pop(key, None) is not None:
            self._touch(kind, key, None)
        if kind == WORKLOAD:
            self._assumed.pop(key, None)
            self._track_workload(key, None)
        elif kind == POD:
            self._track_pod(key, None)

    def replace(self, kind: str, objs: Iterable[Obj]) -> None:
        """A full list: what is not in it is gone (assumed workloads included)."""
        listed = list(objs)
        keys = {object_key(o) for o in listed}
        for gone in [k for k in self.objects[kind] if k not in keys]:
            self.delete(kind, self.objects[kind][gone])
        for obj in listed:
            self.put(kind, obj)

    @staticmethod
    def _older(new: Obj, current: Obj) -> bool:
        if F.metadata(new).get("uid") != F.metadata(current).get("uid"):
            return False  # deleted and created again under the same name
        new_rv, cur_rv = _rv(new), _rv(current)
        # Equal counts as older: the version an assumption was made on must not undo it.
        return new_rv is not None and cur_rv is not None and new_rv <= cur_rv

    def _touch(self, kind: str, key: str, print_: tuple[Any, ...] | None) -> None:
        prints = self._prints[kind]
        if prints.get(key) == print_:
            return
        if print_ is None:
            prints.pop(key, None)
        else:
            prints[key] = print_
        if kind in (NODE, POD):
            self.room_dirty = True
            if kind == NODE:
                self._nodes_dirty = True
        else:
            self.dirty = True

    # --- assume / forget ----------------------------------------------------------------------

    def assume(self, key: str, obj: Obj) -> None:
        """Count ``obj`` (a workload with a reservation not yet written) from now on."""
        if key not in self._assumed:
            self._assumed[key] = self.objects[WORKLOAD].get(key)
        self.objects[WORKLOAD][key] = obj
        self._prints[WORKLOAD][key] = fingerprint(WORKLOAD, obj)
        self._track_workload(key, obj)

    def confirm(self, obj: Obj) -> None:
        """The write went through: keep the stored version it returned."""
        key = object_key(obj)
        self._assumed.pop(key, None)
        self.objects[WORKLOAD][key] = obj
        self._prints[WORKLOAD][key] = fingerprint(WORKLOAD, obj)
        self._track_workload(key, obj)

    def forget(self, key: str) -> None:
        """The write failed: back to what was seen before. (The loop schedules the retry, with
        a back-off: a write the API keeps refusing must not become a hot loop.)"""
        if key not in self._assumed:
            return
        before = self._assumed.pop(key)
        if before is None:
            self.objects[WORKLOAD].pop(key, None)
            self._prints[WORKLOAD].pop(key, None)
        else:
            self.objects[WORKLOAD][key] = before
            self._prints[WORKLOAD][key] = fingerprint(WORKLOAD, before)
        self._track_workload(key, before)

    # --- what nodes hold ---------------------------------------------------------------------

    def _track_pod(self, key: str, use: PodUse | None) -> None:
        before = self._uses.pop(key, None)
        if before == use:
            if use is not None:
                self._uses[key] = use
            return
        used, bound = self._used, self._bound
        for current, sign in ((before, -1), (use, 1)):
            if current is None:
                continue
            # Plain dicts: a Counter's constructor and __missing__ run interpreted, per pod event.
            into = used.get(current.node)
            if into is None:
                into = used[current.node] = {}
            for r, a in current.requests:
                into[r] = into.get(r, 0) + sign * a
            if current.group is not None:
                here, anywhere = (*current.group, current.node), (*current.group, "")
                bound[here] = bound.get(here, 0) + sign
                bound[anywhere] = bound.get(anywhere, 0) + sign
                self._recheck_open(f"{current.group[0]}/{current.group[1]}")
        if use is not None:
            self._uses[key] = use
        self._nodes_dirty = True

    def _track_workload(self, key: str, obj: Obj | None) -> None:
        self.tally.set(key, obj)
        promises = promises_of(obj) if obj is not None else ()
        if self._promises.get(key, ()) == promises:
            return
        if promises:
            self._promises[key] = promises
        else:
            self._promises.pop(key, None)
        self._recheck_open(key)
        self._nodes_dirty = True

    def _recheck_open(self, key: str) -> None:
        """Whether workload ``key`` (namespace/name) still has pods promised and not bound."""
        bound = self._bound
        if any(sum(n for _, n in p.plan) > bound.get((*p.group, ""), 0) for p in self._promises.get(key, ())):
            self._open.add(key)
        else:
            self._open.discard(key)

    def keep(self, kind: str, obj: Obj) -> None:
        """Put in a version the loop wrote itself (queue status, a pending message)."""
        self.objects[kind][object_key(obj)] = obj

    @property
    def assumed(self) -> set[str]:
        return set(self._assumed)

    # --- reading ------------------------------------------------------------------------------

    def values(self, kind: str) -> list[Obj]:
        return list(self.objects[kind].values())

    def node_table(self) -> NodeTable | None:
        """The nodes with what their pods use (and what admitted pods not bound yet will use),
        rebuilt only after nodes, pods or workloads changed."""
        if self._nodes_dirty:
            nodes = self.values(NODE)
            promises = (p for key in self._open for p in self._promises[key])
            promised = promised_room(promises, self._bound)
            self._table = table_of(nodes, self._used, promised) if nodes else None
            self._nodes_dirty = False
        return self._table
