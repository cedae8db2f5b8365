"""What ``decide`` returns: admissions, preemptions, evictions, and why everything else waits.

Plain frozen values; the runtime's applier writes them to Workloads (status.admission,
conditions QuotaReserved / Admitted / Evicted / Preempted) and ClusterQueue status.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kubehpc.sched.admission.model import PodSetAdmission


class PreemptionReason(enum.StrEnum):
    """Kueue's Preempted condition reasons."""

    IN_CLUSTER_QUEUE = "InClusterQueue"
    IN_COHORT_RECLAMATION = "InCohortReclamation"
    IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
    IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


HUMAN_PREEMPTION_REASONS = {
    PreemptionReason.IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    PreemptionReason.IN_COHORT_RECLAMATION: "reclamation within the cohort",
    PreemptionReason.IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


class PendingCode(enum.StrEnum):
    """Why a workload waits, as data (the Workload's QuotaReserved=False reason is derived)."""

    LOCAL_QUEUE_NOT_FOUND = "LocalQueueNotFound"
    CLUSTER_QUEUE_NOT_FOUND = "ClusterQueueNotFound"
    CLUSTER_QUEUE_INACTIVE = "ClusterQueueInactive"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    NAMESPACE_NOT_SELECTED = "NamespaceNotSelected"
    RESOURCE_NOT_COVERED = "ResourceNotCovered"
    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    INSUFFICIENT_QUOTA = "InsufficientQuota"
    PENDING_PREEMPTION = "PendingPreemption"
    NO_NODE_FITS = "NoNodeFits"
    BEHIND_QUEUE_HEAD = "BehindQueueHead"
    """StrictFIFO: the head of the queue does not fit, and everything behind it waits."""
    NO_LONGER_FITS = "NoLongerFits"
    """It fit when its turn came, but workloads admitted earlier in the same cycle took the room."""
    WAITS_FOR_RESERVATION = "WaitsForReservation"
    """It fits now, but its ClusterQueue's backfill policy holds it back: admitting it would
    delay the reservation of a workload ahead of it (``reservations.py``)."""


@dataclass(frozen=True)
class PendingReason:
    """The quota shortfall behind a pending workload (fields empty when they do not apply)."""

    code: PendingCode
    cluster_queue: str = ""
    flavor: str = ""
    resource: str = ""
    needed: int = 0
    """What the workload asks of ``resource`` in ``flavor`` (earlier pod sets included)."""
    nominal: int = 0
    in_use: int = 0
    borrowable: int = 0
    """What the cohort could lend the ClusterQueue right now."""
    pod_set: str = ""


@dataclass(frozen=True)
class PodSetDecision:
    """One admitted pod set: flavors, count and usage, plus where its pods go (node, count)."""

    admission: PodSetAdmission
    nodes: tuple[tuple[str, int], ...] = ()
    """Empty when the snapshot has no nodes (quota-only use)."""


@dataclass(frozen=True)
class Admission:
    workload: str
    """"namespace/name"."""
    uid: str
    cluster_queue: str
    pod_sets: tuple[PodSetDecision, ...]
    borrowing: bool = False
    """Admitted on quota borrowed from the cohort."""
    partial: bool = False
    """Some pod set was admitted with fewer pods than it asked (minCount)."""


@dataclass(frozen=True)
class Preemption:
    victim: str
    victim_uid: str
    victim_cluster_queue: str
    preemptor: str
    preemptor_uid: str
    reason: PreemptionReason
    message: str


@dataclass(frozen=True)
class Eviction:
    """An admitted workload drained by a stopPolicy of HoldAndDrain."""

    workload: str
    uid: str
    cluster_queue: str
    reason: str
    """ClusterQueueStopped or LocalQueueStopped (Kueue's Evicted reasons)."""
    message: str


@dataclass(frozen=True)
class Pending:
    workload: str
    uid: str
    cluster_queue: str
    """"" when the workload never reached a ClusterQueue."""
    position: int
    """0-based, among the workloads still pending in its ClusterQueue, in queue order (-1 when
    it is in no ClusterQueue)."""
    local_queue_position: int
    reason: PendingReason
    message: str
    never_fits: bool = False
    """It would not fit even with the ClusterQueue (and cohort) empty."""
    estimated_start: float | None = None
    """When it is expected to be admitted (seconds on the caller's clock), if ``decide`` was
    asked for estimates and one is known: the ClusterQueue's capacity profile with every
    workload ahead of it reserved (``reservations.py``). None: unknown or never."""


@dataclass(frozen=True)
class ClusterQueueState:
    name: str
    active: bool
    reason: str
    """Ready when active; otherwise why not (FlavorNotFound, Stopped, ...)."""
    message: str
    pending: int
    admitted: int
    """Workloads holding quota after this decision (reserving = admitted: no admission checks)."""
    usage: tuple[tuple[str, str, int], ...]
    """(flavor, resource, reserved amount), in quota order."""
    borrowed: tuple[tuple[str, str, int], ...]
    weighted_share: int = 0
    """The dominant resource share (per mille, divided by the weight) under fair sharing."""


@dataclass(frozen=True)
class AdmissionDecisions:
    admissions: tuple[Admission, ...]
    preemptions: tuple[Preemption, ...]
    evictions: tuple[Eviction, ...]
    pending: tuple[Pending, ...]
    cluster_queues: tuple[ClusterQueueState, ...]

    def admitted(self) -> dict[str, str]:
        """Workload -> ClusterQueue it was admitted to."""
        return {a.workload: a.cluster_queue for a in self.admissions}

    def pending_by_key(self) -> dict[str, Pending]:
        return {p.workload: p for p in self.pending}
