"""``decide(snapshot, now) -> Decisions``: where the waiting pods go, and why the rest wait.

Pure: the same snapshot always gives the same decisions. Pod sets are taken in queue order —
priority (higher first), then creation time, then uid — and each run of consecutive pod sets
with the same shape is placed in one vectorised step (``placement.place``), which lands every
pod exactly where placing them one at a time would. A pod that fits nowhere stays pending with
the per-filter node counts and kube-scheduler's message; a lower-priority pod that fits still
goes (no head-of-line blocking, as kube-scheduler).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from kubehpc.sched.devices import DeviceBook, DeviceState
from kubehpc.sched.interpod import InterPodState, PodIdentity
from kubehpc.sched.model import PodSet, PodShape, SchedulerConfig
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.placement import Usage, charge, place
from kubehpc.sched.reasons import NodeRejections, explain, message

Devices = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Snapshot:
    nodes: NodeTable
    pod_sets: tuple[PodSet, ...]
    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    devices: DeviceState | None = None
    pods: Mapping[str, tuple[PodIdentity, ...]] | None = None
    """Per node, the pods on it as inter-pod (anti-)affinity sees them; None when no pod has
    such terms (the filter is then skipped)."""
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Binding:
    """One pod to one node; ``pod`` is "" for a pod set that names no pods (a workload whose
    pods do not exist yet), ``devices`` the chosen devices per container."""

    pod_set: str
    pod: str
    node: str
    devices: Devices = ()


@dataclass(frozen=True)
class Pending:
    """Pods of one pod set left waiting, with the reason as data and as kube-scheduler's text."""

    pod_set: str
    count: int
    pods: tuple[str, ...]
    position: int
    """0-based place among the pending pod sets, in queue order."""
    rejections: NodeRejections
    message: str


@dataclass(frozen=True)
class Decisions:
    bindings: tuple[Binding, ...]
    pending: tuple[Pending, ...]

    def assignments(self) -> dict[str, dict[str, int]]:
        """Pod set -> node -> how many of its pods go there."""
        out: dict[str, dict[str, int]] = {}
        for b in self.bindings:
            per_node = out.setdefault(b.pod_set, {})
            per_node[b.node] = per_node.get(b.node, 0) + 1
        return out


def _place_each(
    table: NodeTable,
    usage: Usage,
    shape: PodShape,
    wanted: int,
    config: SchedulerConfig,
    inter: InterPodState,
    pod: PodIdentity,
) -> list[int]:
    """Pods the inter-pod filter concerns go one at a time: each one placed changes where the
    next may go (an exclusive job's own pods repel each other)."""
    chosen: list[int] = []
    for _ in range(wanted):
        got = place(table, usage, shape, 1, config, inter.allowed(pod))
        if not len(got):
            break  # identical pods: the next would not fit either
        charge(table, usage, shape, got)
        inter.add(int(got[0]), pod)
        chosen.append(int(got[0]))
    return chosen


def queue_key(pod_set: PodSet) -> tuple[int, float, str]:
    return (-pod_set.priority, pod_set.created, pod_set.uid)


def decide(snapshot: Snapshot, now: float = 0.0) -> Decisions:
    """Place every pod set of ``snapshot`` that fits; explain every one that does not.

    ``now`` is the decision's time on the caller's clock; placement does not depend on it
    (kept so that time-aware policies — backfill, timeouts — share the signature).
    """
    del now  # no time-dependent rule yet
    table = snapshot.nodes
    config = snapshot.config
    usage = Usage.of(table)
    book = DeviceBook(snapshot.devices)
    names = table.names
    inter = None if snapshot.pods is None else InterPodState(table, snapshot.pods, snapshot.namespace_labels)
    order = sorted(snapshot.pod_sets, key=queue_key)
    bindings: list[Binding] = []
    pending: list[Pending] = []
    i = 0
    while i < len(order):
        shape = order[i].shape
        j = i + 1
        while j < len(order) and (order[j].shape is shape or order[j].shape == shape):
            j += 1
        run = order[i:j]
        i = j
        wanted = sum(ps.count for ps in run)
        if inter is not None and shape.interpod is not None and inter.concerns(shape.interpod):
            chosen = _place_each(table, usage, shape, wanted, config, inter, shape.interpod)
        else:
            node_ids = place(table, usage, shape, wanted, config)
            if len(node_ids):
                charge(table, usage, shape, node_ids)
            chosen = node_ids.tolist()
            if inter is not None:
                # A pod whose devices then fail still counts for the rest of the cycle: it can
                # only keep pods away, never let one in wrongly.
                inter.add_all(chosen, shape.interpod)
        device_errors: dict[str, str] = {}
        waiting: list[tuple[PodSet, int, tuple[str, ...]]] = []
        position = 0
        for ps in run:
            take = min(ps.count, len(chosen) - position)
            left_pods: list[str] = list(ps.pod_ids[take:])
            left = ps.count - take
            for t in range(take):
                node_id = chosen[position + t]
                node = names[node_id]
                pod = ps.pod_ids[t] if ps.pod_ids else ""
                devices: Devices = ()
                if shape.devices:
                    try:
                        devices = book.choose(node, shape)
                    except ValueError as err:
                        # The counts fit but the devices do not (fragmented MIG, an inventory
                        # that disagrees with allocatable): give the room back, keep waiting.
                        charge(table, usage, shape, np.array([node_id]), sign=-1)
                        device_errors[node] = str(err)
                        left += 1
                        if pod:
                            left_pods.append(pod)
                        continue
                bindings.append(Binding(ps.uid, pod, node, devices))
            position += take
            if left:
                waiting.append((ps, left, tuple(left_pods)))
        if waiting:
            # One explanation serves the whole run: its pods are interchangeable.
            outcome = None if inter is None or shape.interpod is None else inter.outcome(shape.interpod)
            rejections = explain(table, usage.used, shape, outcome)
            text = message(rejections, shape.preempt_never)
            if device_errors:
                text += " devices: " + "; ".join(f"{n}: {e}" for n, e in sorted(device_errors.items()))
            for ps, left, pods_left in waiting:
                pending.append(Pending(ps.uid, left, pods_left, len(pending), rejections, text))
    return Decisions(tuple(bindings), tuple(pending))
