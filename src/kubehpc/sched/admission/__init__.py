"""The pure admission core: Kueue's queues, quotas, cohorts, borrowing, preemption and fair
sharing, plus a placement check of the admitted pods on nodes.

Interface (stable; the runtime's admission loop depends on it)::

    from kubehpc.sched.admission import build, decide

    snapshot = build.snapshot_from_objects(
        cluster_queues=[...], cohorts=[...], resource_flavors=[...], local_queues=[...],
        workloads=[...], namespaces=[...], nodes=[...], pods=[...],   # dicts as stored (v1beta2)
        table=None,            # optional: a NodeTable instead of nodes/pods
        config=None,           # optional: AdmissionConfig (fair sharing, partial admission, scoring)
    )
    decisions = decide(snapshot, now)   # -> AdmissionDecisions

``AdmissionDecisions`` (``decisions.py``) holds:

* ``admissions``: workload key ("namespace/name"), uid, ClusterQueue, per pod set the flavor per
  resource, the admitted count (partial admission through ``minCount``), the total resource
  usage, and the nodes its pods go to (``(node, pods)``; empty when the snapshot has no nodes);
* ``preemptions``: victim, preemptor, Kueue's reason (InClusterQueue, InCohortReclamation,
  InCohortFairSharing, InCohortReclaimWhileBorrowing) and Kueue's message;
* ``evictions``: admitted workloads drained by a stopPolicy of HoldAndDrain;
* ``pending``: EVERY workload left waiting, with a structured reason (code, ClusterQueue,
  flavor, resource, needed, nominal, in use, borrowable), a message, its position in its
  ClusterQueue and LocalQueue, and ``never_fits``;
* ``cluster_queues``: per ClusterQueue, active + reason, pending / admitted counts, reserved
  usage and borrowing per flavor and resource, weighted share.

``status.py`` renders decisions in Kueue's status shapes (``admission_status``,
``cluster_queue_status``, ``active_condition``, ``pending_condition``) for the applier.

Modules: ``model`` (input values), ``build`` (objects -> snapshot), ``quota`` (the cohort tree:
nominal, lending and borrowing limits, usage), ``flavors`` (flavor assignment and fungibility),
``preemption`` (victims: classic and fair sharing), ``fairshare`` (dominant resource share),
``nodes`` (placement check), ``explain`` (messages), ``cycle`` (``decide``), ``decisions``,
``reservations`` (backfill policies and estimated starts; ``decide(snapshot, now, estimate=True)``
fills ``Pending.estimated_start``).

One call runs as many of Kueue's scheduling cycles as make progress (see ``cycle.py``); the
result is what repeated cycles would give if no workload finished meanwhile. No I/O, clock or
randomness: ties are broken by priority, then queue time, then uid.
"""

from kubehpc.sched.admission import build
from kubehpc.sched.admission.cycle import decide
from kubehpc.sched.admission.decisions import (
    Admission,
    AdmissionDecisions,
    ClusterQueueState,
    Eviction,
    Pending,
    PendingCode,
    PendingReason,
    PodSetDecision,
    Preemption,
    PreemptionReason,
)
from kubehpc.sched.admission.model import AdmissionConfig, AdmissionSnapshot, FairSharingStrategy

__all__ = [
    "Admission",
    "AdmissionConfig",
    "AdmissionDecisions",
    "AdmissionSnapshot",
    "ClusterQueueState",
    "Eviction",
    "FairSharingStrategy",
    "Pending",
    "PendingCode",
    "PendingReason",
    "PodSetDecision",
    "Preemption",
    "PreemptionReason",
    "build",
    "decide",
]
