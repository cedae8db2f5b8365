"""The scheduling core's input: frozen values describing nodes and the pods waiting for them.

Everything here is plain data, already parsed: resource amounts are integers in the units of
``kubehpc.api.quantity.resource_units`` (millicores, bytes, counts), times are numbers the
caller chose (seconds since the epoch in the live loop, virtual seconds in the simulator).
The core never reads a clock or an object store; whoever builds these values does.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from kubehpc.sched.interpod import PodIdentity

# Resource names the core treats specially.
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"

# The taint the node lifecycle puts on cordoned nodes; a pod tolerating it may land on an
# unschedulable node (the NodeUnschedulable plugin's rule).
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = NO_SCHEDULE


@dataclass(frozen=True)
class Toleration:
    """``operator`` is "Equal" or "Exists"; an empty key with Exists tolerates every taint and an
    empty effect matches every effect (``v1.Toleration.ToleratesTaint``)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        # Equal with an empty key is invalid in the API; it tolerates nothing here.
        return bool(self.key) and self.value == taint.value


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` / ``matchFields`` entry: In, NotIn, Exists, DoesNotExist, Gt, Lt."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    """Expressions and fields are ANDed; ``matchFields`` supports ``metadata.name`` only, as
    Kubernetes does. A term with neither matches no node (the API's rule)."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


@dataclass(frozen=True)
class PreferredTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True)
class ContainerDevices:
    """One container's requests for extended resources (``nvidia.com/gpu: 2``)."""

    container: str
    init: bool
    requests: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class PodShape:
    """Everything about a pod that decides where it may go: identical shapes are interchangeable,
    so the core places runs of them together (kube-scheduler's equivalence classes).

    ``requests`` are the pod's effective requests (see ``sched.podspec.pod_requests``), sorted
    by resource name, always including ``pods: 1``.
    """

    requests: tuple[tuple[str, int], ...]
    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[NodeSelectorTerm, ...] | None = None
    """Required node affinity: the terms are ORed. None = no requirement."""
    preferred_terms: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    preempt_never: bool = False
    """``preemptionPolicy: Never``: the pod may not preempt (shows in the pending message)."""
    devices: tuple[ContainerDevices, ...] = ()
    """Per container, the extended resources a device allocator must choose devices for."""
    interpod: PodIdentity | None = None
    """Namespace, labels and required inter-pod (anti-)affinity terms, when they can matter
    (see ``sched.interpod``); None: the inter-pod filter neither checks nor counts this pod."""

    def request(self, resource: str) -> int:
        for name, amount in self.requests:
            if name == resource:
                return amount
        return 0


@dataclass(frozen=True)
class PodSet:
    """``count`` identical pods waiting for nodes: one pending pod, or a pod set of a workload.

    Ordered by priority (higher first), then creation time, then ``uid`` — never by chance.
    ``pod_ids`` names the pods when they exist (one per count, in the order they are bound);
    a workload's pod set before its pods exist leaves it empty and gets counts per node.
    """

    uid: str
    shape: PodShape
    priority: int = 0
    created: float = 0.0
    count: int = 1
    pod_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"pod set {self.uid}: count must be at least 1, got {self.count}")
        if self.pod_ids and len(self.pod_ids) != self.count:
            raise ValueError(f"pod set {self.uid}: {len(self.pod_ids)} pod_ids for count {self.count}")


@dataclass(frozen=True)
class NodeInfo:
    """A node as the scheduler sees it: what it offers and what is already promised on it."""

    name: str
    allocatable: Mapping[str, int]
    used: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    scored_used: Mapping[str, int] | None = None
    """Usage as scoring counts it: like ``used``, but each pod without a cpu or memory request
    counted with kube-scheduler's non-zero defaults (100m, 200Mi), so such pods still spread.
    None: the same as ``used``."""


class Scoring(enum.StrEnum):
    """How nodes are ranked among those that fit (kube-scheduler's NodeResourcesFit strategies)."""

    LEAST_ALLOCATED = "LeastAllocated"  # spread: prefer the emptiest node
    MOST_ALLOCATED = "MostAllocated"  # binpack: fill a node before starting the next


@dataclass(frozen=True)
class SchedulerConfig:
    """Choices made once, when the scheduler is built; nothing is decided on a hot path."""

    scoring: Scoring = Scoring.LEAST_ALLOCATED
    score_resources: tuple[tuple[str, int], ...] = ((CPU, 1), (MEMORY, 1))
    """Resources and weights of the fit score (kube-scheduler's default: cpu 1, memory 1)."""
    fit_weight: int = 1
    taint_weight: int = 3
    affinity_weight: int = 2
    """Plugin weights of kube-scheduler's default profile (NodeResourcesFit 1,
    TaintToleration 3, NodeAffinity 2)."""

    def __post_init__(self) -> None:
        if not self.score_resources or any(w <= 0 for _, w in self.score_resources):
            raise ValueError("score_resources: need at least one resource, every weight positive")
        if min(self.fit_weight, self.taint_weight, self.affinity_weight) < 0:
            raise ValueError("plugin weights must not be negative")
