"""The admission core's input: Kueue's objects as frozen, already-parsed values.

Amounts are integers in ``kubehpc.api.quantity.resource_units`` (millicores, bytes, counts);
times are seconds on the caller's clock. ``build.snapshot_from_objects`` makes these from the
stored objects; tests and the simulator may build them directly.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from kubehpc.sched.model import PodShape, SchedulerConfig, Taint, Toleration
from kubehpc.sched.nodetable import NodeTable

FlavorResource = tuple[str, str]
"""(flavor, resource): the unit every quota, usage and limit is kept in."""

# Preemption policies, as Kueue spells them.
NEVER = "Never"
LOWER_PRIORITY = "LowerPriority"
LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
ANY = "Any"

# Flavor fungibility.
MAY_STOP_SEARCH = "MayStopSearch"
TRY_NEXT_FLAVOR = "TryNextFlavor"

STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"

STOP_NONE = "None"

# Backfill policies of a ClusterQueue (kubehpc's; Kueue has none).
NO_BACKFILL = "none"
EASY_BACKFILL = "easy"
CONSERVATIVE_BACKFILL = "conservative"
BACKFILL_POLICIES = (NO_BACKFILL, EASY_BACKFILL, CONSERVATIVE_BACKFILL)
HOLD = "Hold"
HOLD_AND_DRAIN = "HoldAndDrain"


class FairSharingStrategy(enum.StrEnum):
    """Kueue's fair-sharing preemption strategies (``fairSharing.preemptionStrategies``)."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    """Preempt while the preemptor's share after admission stays <= the victim CQ's share after
    the victim leaves."""
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
    """Preempt while the preemptor's share after admission is < the victim CQ's share now."""


@dataclass(frozen=True)
class AdmissionConfig:
    """Choices made once for the whole scheduler (Kueue's Configuration), never per call."""

    fair_sharing: bool = False
    """Kueue's ``fairSharing.enable``: order admissions by dominant resource share and preempt
    for fairness across the cohort."""
    fair_sharing_strategies: tuple[FairSharingStrategy, ...] = (
        FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
        FairSharingStrategy.LESS_THAN_INITIAL_SHARE,
    )
    partial_admission: bool = True
    """Kueue's PartialAdmission feature (on by default): pod sets with ``minCount`` may start
    with fewer pods when the full count does not fit."""
    placement: SchedulerConfig = field(default_factory=SchedulerConfig)
    """How pods of an admitted workload are placed on nodes (spread or binpack)."""
    backfill: str = NO_BACKFILL
    """The backfill policy of every ClusterQueue that does not choose its own (annotation
    ``kubehpc.io/backfill``): ``none`` (Kueue's behaviour), ``easy`` or ``conservative``.
    See ``reservations.py`` and docs/backfill.md."""


@dataclass(frozen=True)
class Flavor:
    """A ResourceFlavor: the nodes it stands for, and what its pods must tolerate."""

    name: str
    node_labels: tuple[tuple[str, str], ...] = ()
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class Quota:
    """One resource in one flavor of a ClusterQueue or Cohort. None: no limit."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class FlavorQuotas:
    flavor: str
    resources: tuple[tuple[str, Quota], ...]


@dataclass(frozen=True)
class ResourceGroup:
    """Resources that are always assigned the same flavor, flavors in the order to try them."""

    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class PreemptionPolicy:
    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    borrow_max_priority_threshold: int | None = None
    """borrowWithinCohort: only workloads with priority <= this may be preempted while borrowing
    (None: any lower priority)."""


@dataclass(frozen=True)
class Fungibility:
    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` entry of a label selector (In, NotIn, Exists, DoesNotExist)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for req in self.match_expressions:
            present = req.key in labels
            if req.operator == "In":
                ok = present and labels[req.key] in req.values
            elif req.operator == "NotIn":
                ok = not present or labels[req.key] not in req.values
            elif req.operator == "Exists":
                ok = present
            elif req.operator == "DoesNotExist":
                ok = not present
            else:
                ok = False
            if not ok:
                return False
        return True


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort: str | None = None
    queueing_strategy: str = BEST_EFFORT_FIFO
    namespace_selector: LabelSelector | None = None
    """None admits no namespace (Kueue's default); an empty selector admits all."""
    preemption: PreemptionPolicy = field(default_factory=PreemptionPolicy)
    fungibility: Fungibility = field(default_factory=Fungibility)
    stop_policy: str = STOP_NONE
    fair_weight: float = 1.0
    backfill: str = ""
    """Its own backfill policy (``none``, ``easy``, ``conservative``); "" takes the config's."""
    inactive_reason: str = ""
    """Why the ClusterQueue cannot admit ("" when active): FlavorNotFound, Stopped, ..."""
    inactive_message: str = ""

    @property
    def active(self) -> bool:
        return not self.inactive_reason


@dataclass(frozen=True)
class Cohort:
    """A Cohort object, or an implicit one a ClusterQueue names (no quota, no parent)."""

    name: str
    parent: str | None = None
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_weight: float = 1.0


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    stop_policy: str = STOP_NONE

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class PodSet:
    """``count`` identical pods; ``requests`` per pod (sorted, zeros left out, no ``pods``)."""

    name: str
    count: int
    requests: tuple[tuple[str, int], ...]
    shape: PodShape
    min_count: int | None = None

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per pod set per pending workload per cycle).
    def __init__(
        self,
        name: str,
        count: int,
        requests: tuple[tuple[str, int], ...],
        shape: PodShape,
        min_count: int | None = None,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "count", count)
        object.__setattr__(self, "requests", requests)
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "min_count", min_count)


@dataclass(frozen=True)
class PodSetAdmission:
    """One pod set's admission: the flavor per resource, the pods admitted, their total usage."""

    name: str
    flavors: tuple[tuple[str, str], ...]
    """resource -> flavor, sorted by resource."""
    count: int
    usage: tuple[tuple[str, int], ...]
    """resource -> total amount for all ``count`` pods, sorted by resource."""

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per pod set per pending workload per cycle).
    def __init__(
        self,
        name: str,
        flavors: tuple[tuple[str, str], ...],
        count: int,
        usage: tuple[tuple[str, int], ...],
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "flavors", flavors)
        object.__setattr__(self, "count", count)
        object.__setattr__(self, "usage", usage)


@dataclass(frozen=True)
class Workload:
    """A Workload as admission sees it.

    ``reserved`` is the admission it holds (QuotaReserved), None when it waits. A workload that
    cannot even enter a queue carries ``problem`` (a code) and ``problem_message``.
    """

    namespace: str
    name: str
    uid: str
    queue_name: str
    priority: int
    created: float
    pod_sets: tuple[PodSet, ...]
    cluster_queue: str = ""
    """Resolved through the LocalQueue ("" when it cannot be)."""
    reserved: tuple[PodSetAdmission, ...] | None = None
    reserved_in: str = ""
    """The ClusterQueue named by ``status.admission``."""
    reserved_at: float = 0.0
    """When quota was reserved (QuotaReserved's lastTransitionTime): victims admitted most
    recently go first."""
    evicted: bool = False
    """Evicted=True while still holding quota: being preempted or drained."""
    requeued_at: float = 0.0
    """When an earlier eviction put it back in the queue (0: never). Kueue orders requeued
    workloads by this time rather than by creation."""
    problem: str = ""
    problem_message: str = ""
    job_uid: str = ""
    """The owning job's uid (label kueue.x-k8s.io/job-uid), quoted in preemption messages."""
    runtime_estimate: float | None = None
    """How long it is expected to run once admitted, in seconds (None: unknown). Backfill and
    start-time estimates plan with it; ``build`` reads it from the Workload."""

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per pending workload per admission cycle).
    def __init__(
        self,
        namespace: str,
        name: str,
        uid: str,
        queue_name: str,
        priority: int,
        created: float,
        pod_sets: tuple[PodSet, ...],
        cluster_queue: str = "",
        reserved: tuple[PodSetAdmission, ...] | None = None,
        reserved_in: str = "",
        reserved_at: float = 0.0,
        evicted: bool = False,
        requeued_at: float = 0.0,
        problem: str = "",
        problem_message: str = "",
        job_uid: str = "",
        runtime_estimate: float | None = None,
    ) -> None:
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "uid", uid)
        object.__setattr__(self, "queue_name", queue_name)
        object.__setattr__(self, "priority", priority)
        object.__setattr__(self, "created", created)
        object.__setattr__(self, "pod_sets", pod_sets)
        object.__setattr__(self, "cluster_queue", cluster_queue)
        object.__setattr__(self, "reserved", reserved)
        object.__setattr__(self, "reserved_in", reserved_in)
        object.__setattr__(self, "reserved_at", reserved_at)
        object.__setattr__(self, "evicted", evicted)
        object.__setattr__(self, "requeued_at", requeued_at)
        object.__setattr__(self, "problem", problem)
        object.__setattr__(self, "problem_message", problem_message)
        object.__setattr__(self, "job_uid", job_uid)
        object.__setattr__(self, "runtime_estimate", runtime_estimate)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def queue_time(self) -> float:
        """The time that orders it in its queue (FIFO among equal priorities)."""
        return self.requeued_at or self.created

    @property
    def local_queue_key(self) -> str:
        return f"{self.namespace}/{self.queue_name}"


@dataclass(frozen=True)
class AdmissionSnapshot:
    cluster_queues: Mapping[str, ClusterQueue]
    cohorts: Mapping[str, Cohort]
    flavors: Mapping[str, Flavor]
    local_queues: Mapping[str, LocalQueue]
    """Keyed "namespace/name"."""
    workloads: tuple[Workload, ...]
    """Pending and admitted ones; finished and deactivated workloads are left out."""
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Namespace -> labels (with ``kubernetes.io/metadata.name``)."""
    nodes: NodeTable | None = None
    """None or empty: quota only, no placement check (the simulator's pools)."""
    config: AdmissionConfig = field(default_factory=AdmissionConfig)
