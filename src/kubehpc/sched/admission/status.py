"""Decisions rendered in Kueue's status shapes, for the applier to write (pure; the caller adds
timestamps and conditions' lastTransitionTime from its own clock)."""

from __future__ import annotations

from typing import Any

from kubehpc.sched.admission.decisions import Admission, ClusterQueueState, Pending
from kubehpc.sched.admission.explain import amount

Obj = dict[str, Any]


def admission_status(a: Admission) -> Obj:
    """``Workload.status.admission`` for an admission decision."""
    return {
        "clusterQueue": a.cluster_queue,
        "podSetAssignments": [
            {
                "name": ps.admission.name,
                "flavors": dict(ps.admission.flavors),
                "resourceUsage": {r: amount(r, v) for r, v in ps.admission.usage},
                "count": ps.admission.count,
            }
            for ps in a.pod_sets
        ],
    }


def pending_condition(p: Pending) -> tuple[str, str, str, str]:
    """(type, status, reason, message) of the QuotaReserved condition of a pending workload:
    Kueue writes reason Pending with the explanation as message."""
    return ("QuotaReserved", "False", "Pending", p.message)


def cluster_queue_status(state: ClusterQueueState) -> Obj:
    """``ClusterQueue.status`` counts and usage (no admission checks: reserving = admitted)."""
    by_flavor: dict[str, list[Obj]] = {}
    borrowed = {(f, r): v for f, r, v in state.borrowed}
    for flavor, resource, used in state.usage:
        by_flavor.setdefault(flavor, []).append(
            {
                "name": resource,
                "total": amount(resource, used),
                "borrowed": amount(resource, borrowed.get((flavor, resource), 0)),
            }
        )
    usage = [{"name": f, "resources": rs} for f, rs in by_flavor.items()]
    return {
        "pendingWorkloads": state.pending,
        "reservingWorkloads": state.admitted,
        "admittedWorkloads": state.admitted,
        "flavorsReservation": usage,
        "flavorsUsage": usage,
    }


def active_condition(state: ClusterQueueState) -> tuple[str, str, str, str]:
    """(type, status, reason, message) of the ClusterQueue's Active condition."""
    return ("Active", "True" if state.active else "False", state.reason, state.message)
