"""The scheduler's view of the cluster, kept current from watch events.

It holds what the pure core needs and nothing else: per node its allocatable, labels, taints,
cordon and device inventory; per bound pod what it charges to its node (requests and device
holders); the pods waiting for this scheduler; PriorityClasses. Usage is kept incrementally,
and every node whose row in the core's table must change is remembered as *dirty*, so each
cycle rewrites only those rows (``NodeTable.with_changes``).

Pods the scheduler has decided but whose binding is not yet seen are *assumed*: charged to
their node at once, so the next cycle does not hand the same room out twice; a failed binding
*forgets* them (kube-scheduler's assume/forget).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import orjson

from kubehpc.api import fields as F
from kubehpc.api.devices import NodeDevices, devices_in_use
from kubehpc.api.quantity import resource_units
from kubehpc.controllers.scheduling.priority import resolve_priority
from kubehpc.sched.interpod import PodIdentity, identity_of
from kubehpc.sched.model import PODS, NodeInfo, PodSet, PodShape, Taint
from kubehpc.sched.placement import scored_requests
from kubehpc.sched.podspec import shape_of

log = logging.getLogger(__name__)
Obj = dict[str, Any]
TERMINAL_PHASES = ("Succeeded", "Failed")
DEFAULT_SCHEDULER = "default-scheduler"


def pod_key(pod: Obj) -> str:
    meta = F.metadata(pod)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def _epoch(timestamp: str) -> float:
    if not timestamp:
        return 0.0
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


_UNITS: dict[tuple[str, str], int | None] = {}
"""Amounts read so far, by resource and quantity string (None: unreadable): a cluster's nodes
repeat a handful of amounts, and reading one (a Fraction) costs more than the node's entry."""


def _units(resources: Obj) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in resources.items():
        name = str(name)
        key = (name, value) if isinstance(value, str) else None
        units = _UNITS.get(key, False) if key is not None else False
        if units is False:
            try:
                units = resource_units(name, value)
            except ValueError:
                units = None  # an unreadable amount offers nothing; the node agent reports it
            if key is not None:
                if len(_UNITS) >= 4096:
                    _UNITS.clear()  # bounded: amounts that differ per node do not pile up
                _UNITS[key] = units
        if units is not None:
            out[name] = units
    return out


def _add(totals: Counter[str], amounts: Mapping[str, int], sign: int) -> None:
    # Counter.update/subtract, without their generic-iterable checks: one call per pod bound.
    get = totals.get
    for name, amount in amounts.items():
        totals[name] = get(name, 0) + sign * amount


def _totals(table: dict[str, Counter[str]], node: str) -> Counter[str]:
    # Not setdefault(node, Counter()): that builds a Counter per call, one per pod bound.
    totals = table.get(node)
    if totals is None:
        totals = table[node] = Counter()
    return totals


def _shape_or_none(key: str, spec: Obj) -> PodShape | None:
    try:
        return shape_of(spec)
    except (ValueError, TypeError, AttributeError) as err:
        # The API validates requests; a pod that slipped through is left alone, not retried.
        log.warning("pod %s: cannot read its scheduling requirements: %s", key, err)
        return None


@dataclass(frozen=True)
class NodeEntry:
    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    inventory: NodeDevices | None

    @classmethod
    def of(cls, node: Obj) -> NodeEntry:
        meta = F.metadata(node)
        spec = F.spec(node)
        status = F.status(node)
        try:
            inventory = NodeDevices.from_node(node)
        except (ValueError, TypeError, KeyError):
            # An unreadable inventory: schedule by counts alone, as on a real cluster.
            log.warning("node %s: unreadable device inventory annotation", meta.get("name"))
            inventory = NodeDevices(str(meta.get("name", "")), ())
        return cls(
            name=str(meta.get("name", "")),
            allocatable=_units(status.get("allocatable") or status.get("capacity") or {}),
            labels=dict(F.obj_field(meta, "labels")),
            taints=tuple(
                Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", "")))
                for t in spec.get("taints") or ()
            ),
            unschedulable=bool(spec.get("unschedulable")),
            inventory=inventory if inventory.devices else None,
        )


@dataclass
class Charge:
    """What one pod takes from its node."""

    node: str
    uid: str
    requests: Mapping[str, int]
    scored: Mapping[str, int]
    holders: Counter[str]
    assumed: bool
    identity: PodIdentity | None = None
    """Namespace, labels and inter-pod terms, for the InterPodAffinity filter."""


@dataclass(frozen=True)
class Waiting:
    """A pod waiting for this scheduler, as the core will see it."""

    key: str
    uid: str
    shape: PodShape
    priority: int
    created: float
    obj: Obj
    arrival: int
    """Order in which this scheduler first saw the pod: creation timestamps have whole
    seconds, so pods created in the same second keep their arrival order (kube-scheduler's
    queue orders them by when they were added, too)."""
    identity: PodIdentity | None = None
    """Read once when the pod arrives, for its charge when it is bound."""

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per pod the scheduler sees wait).
    def __init__(
        self,
        key: str,
        uid: str,
        shape: PodShape,
        priority: int,
        created: float,
        obj: Obj,
        arrival: int,
        identity: PodIdentity | None = None,
    ) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "uid", uid)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "priority", priority)
        object.__setattr__(self, "created", created)
        object.__setattr__(self, "obj", obj)
        object.__setattr__(self, "arrival", arrival)
        object.__setattr__(self, "identity", identity)

    def with_shape(self, shape: PodShape) -> Waiting:
        """This pod with another shape (pinned to its planned node): ``dataclasses.replace``
        without its interpreted field walk."""
        return Waiting(
            self.key, self.uid, shape, self.priority, self.created, self.obj, self.arrival, self.identity
        )


class ClusterCache:
    def __init__(self, scheduler_names: Iterable[str]) -> None:
        self.scheduler_names = frozenset(scheduler_names)
        self.nodes: dict[str, NodeEntry] = {}
        self.used: dict[str, Counter[str]] = {}
        self.scored: dict[str, Counter[str]] = {}
        self.holders: dict[str, Counter[str]] = {}
        self.charges: dict[str, Charge] = {}
        self.waiting: dict[str, Waiting] = {}
        self.parked: set[str] = set()
        """Waiting pods found unschedulable, left alone until the cluster changes."""
        self.backoff: dict[str, tuple[float, int]] = {}
        """Waiting pods whose binding failed: not before this time; failures so far."""
        self.classes: dict[str, Obj] = {}
        self.dirty: set[str] = set()
        self._shapes: dict[PodShape, PodShape] = {}
        self._amounts: dict[int, tuple[PodShape, dict[str, int], dict[str, int]]] = {}
        """Per shape (by identity; the entry keeps it alive), what a pod of it charges: its
        requests and its scored requests, shared read-only by all its charges."""
        self._parsed: dict[bytes, PodShape] = {}
        """Shapes by the JSON of the spec they were read from: a Job's or a backlog's pods share
        one spec, and reading quantities is most of what a new pod costs the loop."""
        self.pods_on: dict[str, dict[str, PodIdentity]] = {}
        """Per node, the identities of the pods charged to it (inter-pod affinity)."""
        self.anti_affinity_pods = 0
        """Charged pods with required anti-affinity terms: while there are any, every pod's
        identity matters to the core (their terms may repel it)."""
        self._arrivals = 0
        self.on_capacity_change: Callable[[], None] = self.unpark_all

    # ----------------------------------------------------------------- nodes

    def put_node(self, node: Obj) -> None:
        entry = NodeEntry.of(node)
        before = self.nodes.get(entry.name)
        self.nodes[entry.name] = entry
        if before != entry:
            # Only a change the scheduler can use (room, labels, taints, cordon, devices)
            # counts: heartbeats leave the parked pods alone.
            self.dirty.add(entry.name)
            self.on_capacity_change()

    def delete_node(self, name: str) -> None:
        if self.nodes.pop(name, None) is not None:
            self.dirty.add(name)

    def node_info(self, name: str) -> NodeInfo:
        entry = self.nodes[name]
        return NodeInfo(
            name=name,
            allocatable=entry.allocatable,
            used=dict(self.used.get(name, {})),
            scored_used=dict(self.scored.get(name, {})),
            labels=entry.labels,
            taints=entry.taints,
            unschedulable=entry.unschedulable,
        )

    # ----------------------------------------------------------------- pods

    def _charge(self, key: str, charge: Charge) -> None:
        self.uncharge(key)
        self.charges[key] = charge
        node = charge.node
        _add(_totals(self.used, node), charge.requests, 1)
        _add(_totals(self.scored, node), charge.scored, 1)
        if charge.holders:
            _add(_totals(self.holders, node), charge.holders, 1)
        if charge.identity is not None:
            pods = self.pods_on.get(node)
            if pods is None:
                pods = self.pods_on[node] = {}
            pods[key] = charge.identity
            self.anti_affinity_pods += bool(charge.identity.anti_affinity)
        self.dirty.add(charge.node)

    def uncharge(self, key: str) -> Charge | None:
        charge = self.charges.pop(key, None)
        if charge is not None:
            _add(self.used[charge.node], charge.requests, -1)
            _add(self.scored[charge.node], charge.scored, -1)
            if charge.holders:
                _add(self.holders[charge.node], charge.holders, -1)
            if charge.identity is not None:
                self.pods_on.get(charge.node, {}).pop(key, None)
                self.anti_affinity_pods -= bool(charge.identity.anti_affinity)
            self.dirty.add(charge.node)
        return charge

    def is_ours(self, pod: Obj) -> bool:
        return str(F.spec(pod).get("schedulerName") or DEFAULT_SCHEDULER) in self.scheduler_names

    def put_pod(self, pod: Obj) -> None:
        key = pod_key(pod)
        meta = F.metadata(pod)
        spec = F.spec(pod)
        phase = F.status(pod).get("phase")
        node = spec.get("nodeName")
        uid = str(meta.get("uid", ""))
        previous = self.charges.get(key)
        if previous is not None and previous.uid != uid:
            self.delete_pod(key)  # same name, new pod
        if node:
            self.waiting.pop(key, None)
            self.parked.discard(key)
            self.backoff.pop(key, None)
            if phase in TERMINAL_PHASES:
                if self.uncharge(key) is not None:
                    self.on_capacity_change()
                return
            current = self.charges.get(key)
            if current is not None and current.assumed and current.node == node and current.uid == uid:
                # Our binding, seen: the assumption charged exactly this (same spec, the devices
                # we chose), so confirm it rather than read the pod again — one per pod bound.
                current.assumed = False
                return
            if current is None or current.assumed or current.node != node:
                shape = self._shape_of(key, spec) or PodShape(requests=((PODS, 1),))
                requests, scored = self._amounts_of(shape)
                self._charge(
                    key,
                    Charge(
                        node,
                        uid,
                        requests,
                        scored,
                        devices_in_use([pod]),
                        assumed=False,
                        identity=identity_of(pod),
                    ),
                )
            return
        if key in self.charges:
            return  # assumed: our binding is on its way, never decide this pod again
        if meta.get("deletionTimestamp") or phase in TERMINAL_PHASES or not self.is_ours(pod):
            self.waiting.pop(key, None)
            self.parked.discard(key)
            return
        if spec.get("schedulingGates"):
            self.waiting.pop(key, None)
            self.parked.discard(key)
            return
        parsed = self._shape_of(key, spec)
        if parsed is None:
            self.waiting.pop(key, None)
            return
        identity = identity_of(pod)
        # Parsed shapes come interned; only one carrying this pod's own terms is new.
        shape = self._intern(replace(parsed, interpod=identity)) if identity.has_terms else parsed
        priority = spec.get("priority")
        if priority is None:
            try:
                priority = resolve_priority(spec, self.classes).priority
            except Exception:  # a missing class: admission would have refused the pod
                priority = 0
        before = self.waiting.get(key)
        if before is not None and before.uid == uid:
            arrival = before.arrival
        else:
            self._arrivals += 1
            arrival = self._arrivals
        created = _epoch(str(meta.get("creationTimestamp", "")))
        waiting = Waiting(key, uid, shape, int(priority), created, pod, arrival, identity)
        self.waiting[key] = waiting
        if before is not None and (before.shape != shape or before.priority != waiting.priority):
            self.parked.discard(key)  # the pod itself changed: worth another look

    def delete_pod(self, key: str) -> None:
        self.backoff.pop(key, None)
        self.waiting.pop(key, None)
        self.parked.discard(key)
        if self.uncharge(key) is not None:
            self.on_capacity_change()

    def _shape_of(self, key: str, spec: Obj) -> PodShape | None:
        """The pod's shape, interned: found by the spec's JSON, so a pod seen again (created,
        then bound, ...) costs no hashing of its shape."""
        try:
            text = orjson.dumps(spec)
        except TypeError:  # not plain JSON (a test's object): read it every time
            parsed = _shape_or_none(key, spec)
            return self._intern(parsed) if parsed is not None else None
        shape = self._parsed.get(text)
        if shape is None:
            shape = _shape_or_none(key, spec)
            if shape is not None:
                shape = self._intern(shape)
                if len(self._parsed) >= 4096:
                    self._parsed.clear()  # bounded: specs that differ per pod do not pile up
                self._parsed[text] = shape
        return shape

    def _amounts_of(self, shape: PodShape) -> tuple[dict[str, int], dict[str, int]]:
        entry = self._amounts.get(id(shape))
        if entry is None or entry[0] is not shape:
            if len(self._amounts) >= 4096:
                self._amounts.clear()  # bounded, as the shapes read from specs are
            entry = (shape, dict(shape.requests), dict(scored_requests(shape)))
            self._amounts[id(shape)] = entry
        return entry[1], entry[2]

    def _intern(self, shape: PodShape) -> PodShape:
        # Equal shapes become the same object, so the core compares runs by identity.
        return self._shapes.setdefault(shape, shape)

    # ----------------------------------------------------------------- decisions

    def assume(self, key: str, node: str, holders: Counter[str]) -> None:
        waiting = self.waiting.pop(key)
        self.parked.discard(key)
        shape = waiting.shape
        identity = shape.interpod or waiting.identity or identity_of(waiting.obj)
        requests, scored = self._amounts_of(shape)
        self._charge(
            key,
            Charge(
                node,
                waiting.uid,
                requests,
                scored,
                holders,
                assumed=True,
                identity=identity,
            ),
        )

    def forget(self, key: str, pod: Obj | None) -> None:
        """Undo an assumption whose binding failed; the pod waits again if it still exists."""
        charge = self.charges.get(key)
        if charge is not None and charge.assumed:
            self.uncharge(key)
        if pod is not None:
            self.put_pod(pod)

    def park(self, keys: Iterable[str]) -> None:
        self.parked.update(k for k in keys if k in self.waiting)

    def unpark_all(self) -> None:
        self.parked.clear()

    def active(self, now: float) -> list[Waiting]:
        """Waiting pods ready for a cycle at ``now``: neither parked nor backing off."""
        backoff = self.backoff
        return [
            w
            for k, w in self.waiting.items()
            if k not in self.parked and (k not in backoff or backoff[k][0] <= now)
        ]

    def back_off(self, key: str, now: float, initial: float, limit: float) -> None:
        """After a failed binding: wait ``initial`` seconds, doubling per failure up to ``limit``
        (kube-scheduler's backoff queue, 1 s to 10 s)."""
        failures = self.backoff.get(key, (0.0, 0))[1]
        self.backoff[key] = (now + min(limit, initial * 2**failures), failures + 1)

    def next_backoff(self) -> float | None:
        waiting = [until for key, (until, _) in self.backoff.items() if key in self.waiting]
        return min(waiting) if waiting else None

    def interpod_pods(self, waiting: Iterable[Waiting]) -> dict[str, tuple[PodIdentity, ...]] | None:
        """The pods per node for the core's InterPodAffinity filter, or None while no charged
        pod has anti-affinity terms and no waiting pod has terms (the filter is then off and
        identical pods keep being placed together)."""
        if not self.anti_affinity_pods and not any(w.shape.interpod is not None for w in waiting):
            return None
        return {node: tuple(pods.values()) for node, pods in self.pods_on.items() if pods}

    def pod_sets(self, waiting: Iterable[Waiting], with_identity: bool = False) -> tuple[PodSet, ...]:
        """``with_identity``: give every pod its namespace and labels (the inter-pod filter is
        on, so other pods' terms may select it)."""

        def shape(w: Waiting) -> PodShape:
            if with_identity and w.shape.interpod is None:
                return replace(w.shape, interpod=identity_of(w.obj))
            return w.shape

        # The pod set's uid is only the core's last tie-break: make it the arrival order.
        return tuple(
            PodSet(f"{w.arrival:012d}", shape(w), w.priority, w.created, 1, (w.key,)) for w in waiting
        )

    # ----------------------------------------------------------------- priority classes

    def put_class(self, pc: Obj) -> None:
        self.classes[str(F.metadata(pc).get("name", ""))] = dict(pc)
        self._reprioritise()

    def delete_class(self, name: str) -> None:
        self.classes.pop(name, None)
        self._reprioritise()

    def _reprioritise(self) -> None:
        # Pods admitted without spec.priority take theirs from the classes as they are now.
        for waiting in list(self.waiting.values()):
            if F.spec(waiting.obj).get("priority") is None:
                self.put_pod(waiting.obj)


__all__ = ["PODS", "ClusterCache", "NodeEntry", "Waiting", "pod_key"]
