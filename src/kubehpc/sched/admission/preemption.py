"""Choosing victims (Kueue's ``pkg/scheduler/preemption``).

Candidates, for a workload that needs preemption in the flavor-resources ``frs``:

* in its own ClusterQueue, under ``withinClusterQueue``: LowerPriority takes workloads of lower
  priority; LowerOrNewerEqualPriority also those of equal priority queued after it;
* in other ClusterQueues of the cohort tree that are borrowing in ``frs``, under
  ``reclaimWithinCohort``: LowerPriority takes lower priority, Any takes any.

Only candidates holding some of ``frs`` count. They are ordered: being evicted already first,
then other ClusterQueues before the preemptor's own, lower priority first, most recently
admitted first, uid. The victims are a minimal prefix: candidates are removed in that order
until the workload fits, then each one but the last is put back if the workload still fits
without it. When nothing makes it fit, nobody is preempted.

Borrowing rules follow Kueue: preempting in other ClusterQueues while the preemptor itself
would borrow needs ``borrowWithinCohort`` (and then only workloads with priority at most its
``maxPriorityThreshold``, and always lower than the preemptor's); otherwise cohort victims are
taken only while the preemptor stays within its nominal quota, and as a last resort its own
ClusterQueue's candidates with borrowing allowed. Under fair sharing the victims come from
the ClusterQueues with the highest dominant resource share, as long as the configured
strategies hold (see ``fair_targets``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence

from kubehpc.sched.admission.decisions import PreemptionReason
from kubehpc.sched.admission.fairshare import Shares
from kubehpc.sched.admission.model import (
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    LOWER_PRIORITY,
    NEVER,
    ClusterQueue,
    FairSharingStrategy,
    Workload,
)
from kubehpc.sched.admission.quota import QuotaTree
from kubehpc.sched.admission.state import Holder

Target = tuple[Holder, PreemptionReason]


def candidates(
    wl: Workload,
    cq: ClusterQueue,
    node: int,
    frs: set[int],
    tree: QuotaTree,
    holders: Sequence[list[Holder]],
    cq_nodes: Iterable[int],
    taken: set[int],
) -> list[Holder]:
    """Workloads the policies allow ``wl`` to preempt, in the order to try them."""
    out: list[Holder] = []
    policy = cq.preemption
    priority = wl.priority
    if policy.within_cluster_queue != NEVER:
        newer_equal = policy.within_cluster_queue == LOWER_OR_NEWER_EQUAL_PRIORITY
        for h in holders[node]:
            if h.priority > priority or (h.priority == priority and not newer_equal):
                continue
            if h.priority == priority and not wl.queue_time < h.wl.queue_time:
                continue
            if h.frs.isdisjoint(frs) or id(h) in taken:
                continue
            out.append(h)
    if tree.parent[node] >= 0 and policy.reclaim_within_cohort != NEVER:
        root = tree.root[node]
        only_lower = policy.reclaim_within_cohort == LOWER_PRIORITY
        for other in cq_nodes:
            if other == node or tree.root[other] != root or not tree.is_borrowing(other, frs):
                continue
            for h in holders[other]:
                if only_lower and h.priority >= priority:
                    continue
                if h.frs.isdisjoint(frs) or id(h) in taken:
                    continue
                out.append(h)
    out.sort(key=lambda h: (not h.evicted, h.cq == node, h.rank))
    return out


def minimal(
    tree: QuotaTree,
    node: int,
    usage: list[tuple[int, int]],
    frs: set[int],
    cands: list[Holder],
    allow_borrowing: bool,
    threshold: int | None,
) -> list[Target]:
    """Kueue's ``minimalPreemptions``: remove candidates in order until the workload fits,
    then put back every one it can do without (latest removed first kept)."""
    targets: list[Target] = []
    fits = False
    for h in cands:
        reason = PreemptionReason.IN_CLUSTER_QUEUE
        if h.cq != node:
            # Usage moves as victims go: a ClusterQueue that stopped borrowing is left alone.
            if not tree.is_borrowing(h.cq, frs):
                continue
            reason = PreemptionReason.IN_COHORT_RECLAMATION
            if threshold is not None:
                if h.priority > threshold:
                    # Above the threshold a cohort workload is only reclaimed, never taken by
                    # a preemptor that would borrow.
                    allow_borrowing = False
                else:
                    reason = PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING
        tree.add(h.cq, h.usage, -1)
        targets.append((h, reason))
        if tree.fits(node, usage, allow_borrowing):
            fits = True
            break
    if not fits:
        for h, _ in targets:
            tree.add(h.cq, h.usage)
        return []
    targets = _fill_back(tree, node, usage, targets, allow_borrowing)
    for h, _ in targets:
        tree.add(h.cq, h.usage)
    return targets


def _fill_back(
    tree: QuotaTree, node: int, usage: list[tuple[int, int]], targets: list[Target], allow_borrowing: bool
) -> list[Target]:
    """Put back, newest decision first, every victim the workload fits without."""
    kept = list(targets)
    for i in range(len(kept) - 2, -1, -1):
        h = kept[i][0]
        tree.add(h.cq, h.usage)
        if tree.fits(node, usage, allow_borrowing):
            kept[i] = kept[-1]
            kept.pop()
        else:
            tree.add(h.cq, h.usage, -1)
    return kept


def classic_targets(
    wl: Workload,
    cq: ClusterQueue,
    node: int,
    usage: list[tuple[int, int]],
    frs: set[int],
    tree: QuotaTree,
    cands: list[Holder],
) -> list[Target]:
    """Kueue's GetTargets without fair sharing."""
    if not cands:
        return []
    same = [h for h in cands if h.cq == node]
    if len(same) == len(cands):
        return minimal(tree, node, usage, frs, cands, True, None)
    borrow = cq.preemption.borrow_within_cohort
    if borrow != NEVER:
        threshold = cq.preemption.borrow_max_priority_threshold
        limit = wl.priority - 1 if threshold is None else min(threshold, wl.priority - 1)
        pool = cands
        if not tree.under_nominal(node, frs):
            pool = [h for h in cands if h.cq == node or h.priority <= limit]
        return minimal(tree, node, usage, frs, pool, True, limit)
    if tree.under_nominal(node, frs):
        targets = minimal(tree, node, usage, frs, cands, False, None)
        if targets:
            return targets
    return minimal(tree, node, usage, frs, same, True, None)


Strategy = Callable[[int, int, int], bool]

STRATEGIES: dict[FairSharingStrategy, Strategy] = {
    # (preemptor's share after admission, victim CQ's share now, victim CQ's share after)
    FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: lambda mine, _now, after: mine <= after,
    FairSharingStrategy.LESS_THAN_INITIAL_SHARE: lambda mine, now, _after: mine < now,
}


def _sides(tree: QuotaTree, a: int, b: int) -> tuple[int, int]:
    """The children of the lowest common ancestor of ``a`` and ``b`` on the way to each: in a
    cohort tree, fairness between two ClusterQueues is judged between those two subtrees."""
    up = [a]
    while tree.parent[up[-1]] >= 0:
        up.append(tree.parent[up[-1]])
    where = {n: i for i, n in enumerate(up)}
    prev, x = b, b
    while x not in where:
        prev, x = x, tree.parent[x]
    i = where[x]
    return (up[i - 1] if i > 0 else a), prev


def fair_targets(
    wl: Workload,
    cq: ClusterQueue,
    node: int,
    usage: list[tuple[int, int]],
    frs: set[int],
    tree: QuotaTree,
    shares: Shares,
    cands: list[Holder],
    strategies: Sequence[FairSharingStrategy],
) -> list[Target]:
    """Kueue's ``fairPreemptions``: take from the ClusterQueue whose subtree has the highest
    share first, as long as the first strategy holds (shares compared between the subtrees
    just below the common ancestor of the two ClusterQueues); then, if still needed, the
    second strategy."""
    if not cands:
        return []
    threshold = None
    if cq.preemption.borrow_within_cohort != NEVER:
        t = cq.preemption.borrow_max_priority_threshold
        threshold = wl.priority - 1 if t is None else min(t, wl.priority - 1)
    first = STRATEGIES[strategies[0] if strategies else FairSharingStrategy.LESS_THAN_INITIAL_SHARE]
    sides = {c: _sides(tree, node, c) for c in {h.cq for h in cands} if c != node}

    def heap_of(holders: list[Holder]) -> tuple[list[tuple[int, int, str, int]], dict[int, list[Holder]]]:
        by_cq: dict[int, list[Holder]] = {}
        for h in holders:
            by_cq.setdefault(h.cq, []).append(h)
        heap = [key(c) for c in by_cq]
        heapq.heapify(heap)
        return heap, by_cq

    def key(c: int) -> tuple[int, int, str, int]:
        if c == node:
            return (-shares.share(c), -shares.share(c), tree.names[c], c)
        return (-shares.share(sides[c][1]), -shares.share(c), tree.names[c], c)

    heap, by_cq = heap_of(cands)
    targets: list[Target] = []
    retry: list[Holder] = []
    fits = False
    while heap and not fits:
        c = heapq.heappop(heap)[3]
        queue = by_cq[c]
        if c == node:
            h = queue.pop(0)
            tree.add(h.cq, h.usage, -1)
            targets.append((h, PreemptionReason.IN_CLUSTER_QUEUE))
            if tree.fits(node, usage):
                fits = True
                break
            if queue:
                heapq.heappush(heap, key(c))
            continue
        mine_side, their_side = sides[c]
        mine = shares.share(mine_side, usage)
        now = shares.share(their_side)
        for i, h in enumerate(queue):
            below = threshold is not None and h.priority <= threshold
            after = shares.share(their_side, h.usage, -1)
            if below or first(mine, now, after):
                tree.add(h.cq, h.usage, -1)
                reason = (
                    PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING
                    if below
                    else PreemptionReason.IN_COHORT_FAIR_SHARING
                )
                targets.append((h, reason))
                if tree.fits(node, usage):
                    fits = True
                    break
                del queue[: i + 1]
                if queue and tree.is_borrowing(c, frs):
                    heapq.heappush(heap, key(c))
                break
            retry.append(h)
    if not fits and len(strategies) > 1:
        second = STRATEGIES[strategies[1]]
        heap, by_cq = heap_of(retry)
        while heap and not fits:
            c = heapq.heappop(heap)[3]
            mine_side, their_side = sides[c]
            if second(shares.share(mine_side, usage), shares.share(their_side), 0):
                h = by_cq[c][0]
                tree.add(h.cq, h.usage, -1)
                targets.append((h, PreemptionReason.IN_COHORT_FAIR_SHARING))
                fits = tree.fits(node, usage)
    if not fits:
        for h, _ in targets:
            tree.add(h.cq, h.usage)
        return []
    targets = _fill_back(tree, node, usage, targets, True)
    for h, _ in targets:
        tree.add(h.cq, h.usage)
    return targets
