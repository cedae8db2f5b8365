"""Why pods stay pending: per-filter node counts as data, and kube-scheduler's message.

Each node is charged to the first filter that rejects it, in kube-scheduler's default plugin
order — NodeUnschedulable, TaintToleration, NodeAffinity, NodeResourcesFit — and a node short
of several resources counts once per resource, exactly as ``FitError.Error()`` builds its
histogram: ``"0/4 nodes are available: 1 Insufficient cpu, 3 Insufficient nvidia.com/gpu."``
(entries ``"<count> <reason>"`` sorted as strings).

kube-scheduler then appends what its preemption step found. kubehpc's default scheduling does
not preempt pods, so the message carries a preemption clause only when the answer does not
depend on preemption: every node was rejected for a reason evicting pods cannot change
("Preemption is not helpful for scheduling"), or the pod has ``preemptionPolicy: Never``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubehpc.sched.filters import affinity_match, cordoned, first_untolerated_taint
from kubehpc.sched.interpod import AFFINITY as POD_AFFINITY
from kubehpc.sched.interpod import ANTI_AFFINITY, EXISTING_ANTI_AFFINITY, rejection_counts
from kubehpc.sched.model import PODS, PodShape, Taint
from kubehpc.sched.nodetable import IntArray, NodeTable
from kubehpc.sched.placement import request_vector

NO_NODES = "no nodes available to schedule pods"
UNSCHEDULABLE = "node(s) were unschedulable"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS = "Too many pods"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
PREEMPT_NEVER = "preemption: not eligible due to preemptionPolicy=Never."


def taint_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def insufficient_reason(resource: str) -> str:
    return TOO_MANY_PODS if resource == PODS else f"Insufficient {resource}"


@dataclass(frozen=True)
class NodeRejections:
    """How many nodes each filter turned the pod away from (a node counts for its first
    failing filter; under resources, once per missing resource)."""

    total_nodes: int
    cordoned: int = 0
    untolerated_taints: tuple[tuple[Taint, int], ...] = ()
    affinity_mismatch: int = 0
    insufficient: tuple[tuple[str, int], ...] = ()
    """Resource -> nodes short of it (``pods``: nodes with no pod slot left)."""
    never_fits: bool = False
    """No node that passes the other filters could hold the pod even if it were empty."""
    existing_anti_affinity: int = 0
    anti_affinity: int = 0
    pod_affinity: int = 0
    """Nodes with room turned away by InterPodAffinity (``sched.interpod``), per check."""

    @property
    def unresolvable(self) -> int:
        """Nodes rejected for reasons that evicting pods cannot change."""
        # As kube-scheduler: unmet pod affinity is unresolvable, anti-affinity is not (evicting
        # the pods it names would help).
        return (
            self.cordoned
            + sum(c for _, c in self.untolerated_taints)
            + self.affinity_mismatch
            + self.pod_affinity
        )

    def histogram(self) -> dict[str, int]:
        out: dict[str, int] = {}
        if self.cordoned:
            out[UNSCHEDULABLE] = self.cordoned
        for taint, count in self.untolerated_taints:
            out[taint_reason(taint)] = out.get(taint_reason(taint), 0) + count
        if self.affinity_mismatch:
            out[AFFINITY] = self.affinity_mismatch
        for resource, count in self.insufficient:
            out[insufficient_reason(resource)] = count
        for reason, count in (
            (EXISTING_ANTI_AFFINITY, self.existing_anti_affinity),
            (ANTI_AFFINITY, self.anti_affinity),
            (POD_AFFINITY, self.pod_affinity),
        ):
            if count:
                out[reason] = count
        return out


def message(rejections: NodeRejections, preempt_never: bool = False) -> str:
    """The PodScheduled=False message, worded as kube-scheduler words it."""
    n = rejections.total_nodes
    if n == 0:
        return NO_NODES
    entries = sorted(f"{count} {reason}" for reason, count in rejections.histogram().items())
    text = f"0/{n} nodes are available:"
    if entries:
        text += f" {', '.join(entries)}."
    if preempt_never:
        text += f" {PREEMPT_NEVER}"
    elif rejections.unresolvable == n:
        text += f" preemption: 0/{n} nodes are available: {n} {NOT_HELPFUL}."
    return text


def explain(
    table: NodeTable, used: IntArray, shape: PodShape, interpod: IntArray | None = None
) -> NodeRejections:
    """Why no node can take one more pod of ``shape``, given usage ``used``; ``interpod`` is the
    inter-pod filter's per-node outcome (``InterPodState.outcome``), checked after resources."""
    n = len(table)
    if n == 0:
        return NodeRejections(total_nodes=0)
    left = np.ones(n, dtype=np.bool_)
    cordon = cordoned(table, shape.tolerations)
    n_cordoned = int(cordon.sum())
    left &= ~cordon
    taint_ids = first_untolerated_taint(table, shape.tolerations)
    tainted = left & (taint_ids >= 0)
    ids, counts = np.unique(taint_ids[tainted], return_counts=True)
    taints = tuple((table.taints[int(i)], int(c)) for i, c in zip(ids, counts, strict=True))
    left &= ~tainted
    mismatch = left & ~affinity_match(table, shape.node_selector, shape.required_terms)
    left &= ~mismatch
    rows = np.flatnonzero(left)
    req = request_vector(table, shape)
    insufficient: list[tuple[str, int]] = []
    never_fits = True
    if len(rows):
        if req.missing:
            insufficient.extend((name, len(rows)) for name in req.missing)
        else:
            alloc = table.allocatable[np.ix_(rows, req.columns)]
            free = alloc - used[np.ix_(rows, req.columns)]
            short = free < req.amounts
            for j, col in enumerate(req.columns):
                count = int(short[:, j].sum())
                if count:
                    insufficient.append((table.resources[int(col)], count))
            never_fits = not bool((alloc >= req.amounts).all(axis=1).any())
            left[rows] = ~short.any(axis=1)
    inter = (0, 0, 0) if interpod is None or req.missing else rejection_counts(interpod, left)
    return NodeRejections(
        total_nodes=n,
        cordoned=n_cordoned,
        untolerated_taints=taints,
        affinity_mismatch=int(mismatch.sum()),
        insufficient=tuple(insufficient),
        never_fits=never_fits,
        existing_anti_affinity=inter[0],
        anti_affinity=inter[1],
        pod_affinity=inter[2],
    )
