"""Why a workload waits: reasons as data and as one line a user can act on.

The central message names the ClusterQueue, the shortfall and the figures that explain it::

    ClusterQueue team-a: 4 nvidia.com/gpu missing in flavor a100 (nominal 16, in use 14,
    borrowable from cohort 0)

Amounts are written as quantities (``1500m`` cpu, ``36Gi`` memory, ``4`` GPUs).
"""

from __future__ import annotations

import functools
from fractions import Fraction

from kubehpc.api.quantity import BINARY_SI, DECIMAL_SI, Quantity, canonical
from kubehpc.sched.admission.decisions import PendingCode, PendingReason
from kubehpc.sched.admission.flavors import Assignment, CompiledQueue, Shortfall
from kubehpc.sched.admission.model import Workload
from kubehpc.sched.admission.quota import QuotaTree

_BYTES = ("memory", "ephemeral-storage", "storage")


@functools.lru_cache(maxsize=8192)
def amount(resource: str, value: int) -> str:
    """An amount in ``resource_units`` written back as a Kubernetes quantity."""
    if resource == "cpu":
        if value % 1000 == 0:
            return str(value // 1000)
        return canonical(Quantity(Fraction(value, 1000), DECIMAL_SI))
    if resource in _BYTES or resource.startswith("hugepages-"):
        return canonical(Quantity(Fraction(value), BINARY_SI))
    return str(value)


def _shortfall_text(s: Shortfall, tree: QuotaTree, node: int) -> str:
    r = s.resource
    if s.needed > s.potential:
        return (
            f"{amount(r, s.needed)} {r} needed in flavor {s.flavor}, more than the "
            f"{amount(r, s.potential)} it can ever have"
        )
    nominal = tree.nominal[node][s.fr]
    in_use = tree.usage[node][s.fr]
    text = (
        f"{amount(r, s.needed - s.available)} {r} missing in flavor {s.flavor} "
        f"(nominal {amount(r, nominal)}, in use {amount(r, in_use)}"
    )
    if tree.parent[node] >= 0:
        text += f", borrowable from cohort {amount(r, borrowable(s, tree, node))}"
    return text + ")"


def borrowable(s: Shortfall, tree: QuotaTree, node: int) -> int:
    """What the cohort adds to the ClusterQueue's own unused nominal quota right now."""
    own = max(0, tree.nominal[node][s.fr] - tree.usage[node][s.fr])
    return max(0, s.available - own)


def quota_reason(cq: CompiledQueue, tree: QuotaTree, a: Assignment) -> tuple[PendingReason, str]:
    """The reason and message for an assignment that did not fit (or needs preemption that
    found no victims)."""
    head = f"ClusterQueue {cq.name}: "
    if a.uncovered:
        reason = PendingReason(PendingCode.RESOURCE_NOT_COVERED, cq.name, resource=a.uncovered)
        return reason, head + f"resource {a.uncovered} is not covered by any resource group"
    if not a.shortfalls:
        why = "; ".join(dict.fromkeys(a.mismatches)) or "no flavor can host the pods"
        return PendingReason(PendingCode.NO_MATCHING_FLAVOR, cq.name), head + why
    node = cq.node
    shown = a.blocking or a.shortfalls
    first = shown[0]
    reason = PendingReason(
        PendingCode.INSUFFICIENT_QUOTA,
        cq.name,
        flavor=first.flavor,
        resource=first.resource,
        needed=first.needed,
        nominal=tree.nominal[node][first.fr],
        in_use=tree.usage[node][first.fr],
        borrowable=borrowable(first, tree, node),
        pod_set=first.pod_set,
    )
    parts = dict.fromkeys(_shortfall_text(s, tree, node) for s in shown)
    parts.update(dict.fromkeys(a.mismatches))
    return reason, head + "; ".join(parts)


def never_fits(cq: CompiledQueue, tree: QuotaTree, wl: Workload, partial: bool) -> bool:
    """True when some pod set (at its minCount, with partial admission) has no flavor that
    could hold it even with the ClusterQueue and its cohort empty."""
    node = cq.node
    for ps in wl.pod_sets:
        count = ps.min_count if partial and ps.min_count is not None else ps.count
        if count == 0:
            continue
        by_group: dict[int, list[tuple[str, int]]] = {}
        requests = (*ps.requests, ("pods", 1)) if cq.covers_pods else ps.requests
        for res, per_pod in requests:
            g = cq.group_of.get(res)
            if g is None:
                return True
            by_group.setdefault(g, []).append((res, per_pod * count))
        for g, needs in by_group.items():
            group = cq.groups[g]
            if not any(
                not cq.mismatch(ps.shape, g, fi)
                and all(r in cf.fr and amt <= tree.potential(node, cf.fr[r]) for r, amt in needs)
                for fi, cf in enumerate(group.flavors)
            ):
                return True
    return False
