"""Pods placed where admission placed them: admission and placement are one decision.

When the admission core admits a workload it also chooses the node of every pod (per pod set:
node -> count). That choice is recorded in the Workload as Kueue's topology assignment at the
``kubernetes.io/hostname`` level, and handed to the pods through their template, so the
scheduler loop binds each pod to a node the admission chose instead of placing it afresh:

* :func:`assign` deals the waiting pods of one pod set out over the chosen nodes, counting the
  pods already bound (or assumed) there, in a fixed order;
* :func:`pin` narrows a pod's shape to its node (``matchFields metadata.name In [node]``), so
  the core still checks that the node fits — resources, taints, selectors — before binding.

A pod whose chosen node no longer fits falls back to an ordinary placement in its flavor (the
runtime records why). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kubehpc.api import fields as F
from kubehpc.sched.model import NodeSelectorTerm, PodShape, Requirement

HOSTNAME_LEVEL = "kubernetes.io/hostname"
PLANNED_NODES_ANNOTATION = "kubehpc.io/planned-nodes"
"""On a pod template: the nodes admission chose for its pod set, ``node=count,node=count``."""
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
POD_SET_ANNOTATION = "kubehpc.io/pod-set"
"""The pod set of the pod within its Workload. (Not Kueue's ``kueue.x-k8s.io/podset`` label:
the gang step reads that one as "place this Job's pods as a gang".)"""

Plan = tuple[tuple[str, int], ...]


def encode(nodes: Iterable[tuple[str, int]]) -> str:
    return ",".join(f"{node}={count}" for node, count in nodes if count > 0)


def decode(text: str) -> Plan:
    """The plan of an annotation; ValueError naming the bad part when it is not one."""
    out = []
    for part in text.split(","):
        node, sep, count = part.strip().partition("=")
        if not sep or not node or not count.isdigit():
            raise ValueError(f"{PLANNED_NODES_ANNOTATION}: want node=count[,node=count...], got {part!r}")
        out.append((node, int(count)))
    return tuple(out)


def plan_of_assignment(assignment: dict[str, Any]) -> Plan:
    """(node, pods) of a podSetAssignment's topology assignment at the hostname level (either
    version's shape); empty when it has none (quota-only admission) or none at that level."""
    topology = F.obj_field(assignment, "topologyAssignment")
    levels = F.list_field(topology, "levels")
    if HOSTNAME_LEVEL not in levels:
        return ()
    at = levels.index(HOSTNAME_LEVEL)
    if "slices" in topology:
        # Imported here: it pulls in the Kueue pydantic models, which only v1beta2 slices need.
        from kubehpc.api.kinds.kueue.conversion import slices_to_domains
    domains = (
        slices_to_domains(dict(topology))["domains"]
        if "slices" in topology
        else topology.get("domains") or ()
    )
    return tuple(
        (str(d["values"][at]), int(d.get("count") or 0)) for d in domains if len(d.get("values") or ()) > at
    )


def assign(plan: Plan, placed: Mapping[str, int], waiting: Sequence[str]) -> dict[str, str]:
    """Nodes for the ``waiting`` pods (in that order) from what ``plan`` leaves after the pods
    ``placed`` per node already; pods beyond the plan get none."""
    room = [(node, count - placed.get(node, 0)) for node, count in plan]
    out: dict[str, str] = {}
    slot = 0
    for pod in waiting:
        while slot < len(room) and room[slot][1] <= 0:
            slot += 1
        if slot == len(room):
            break
        node, left = room[slot]
        out[pod] = node
        room[slot] = (node, left - 1)
    return out


def pin(shape: PodShape, node: str) -> PodShape:
    """``shape`` allowed on ``node`` only (its other requirements kept)."""
    only = Requirement("metadata.name", "In", (node,))
    if shape.required_terms is None:
        terms: tuple[NodeSelectorTerm, ...] = (NodeSelectorTerm(match_fields=(only,)),)
    else:
        terms = tuple(replace(t, match_fields=(*t.match_fields, only)) for t in shape.required_terms)
    return replace(shape, required_terms=terms)
