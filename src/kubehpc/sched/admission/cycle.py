"""``decide(snapshot, now)``: Kueue's scheduling cycles, run until they stop making progress.

One cycle (Kueue's ``Scheduler.schedule``):

1. Take the head of every active ClusterQueue: its first pending workload in queue order
   (higher priority first, then earlier queue time, then uid) that has not yet been found
   inadmissible in this call.
2. Nominate each head: assign flavors against the current usage; if that needs preemption,
   choose victims; if it does not fit at all and a pod set has ``minCount``, search for the
   largest smaller count that fits (partial admission).
3. Order the heads: those that fit without borrowing first, then higher priority, then
   earlier queue time (under fair sharing: lowest dominant resource share first).
4. Process them in that order. A head that fits is admitted (and its pods placed on nodes);
   one that no longer fits because an earlier head of this cycle took the room, or whose
   victims overlap another's, stays head for the next cycle. A head that needs preemption has
   its victims preempted — they keep their quota until the applier has evicted them — and its
   own usage counts until the cycle ends; it stays pending, and its ClusterQueue admits nothing
   else in this call (it remains the head). A head that does not fit is inadmissible: under
   BestEffortFIFO the next workload becomes head, under StrictFIFO the queue is blocked.

With a backfill policy on the ClusterQueue (``reservations.py``, docs/backfill.md), a head that
does not fit gets a reservation from the running workloads' estimated ends instead of blocking
(StrictFIFO) or being passed freely (BestEffortFIFO), and a later head that fits is admitted
only if it delays no reservation (else it waits: ``WaitsForReservation``).

Cycles repeat while any head remains. Nothing is released within one call (workloads finish
and victims leave only between calls), so a workload found inadmissible stays so, and the
result is exactly what Kueue's repeated cycles give when no event arrives in between. Kueue
admits at most one head per ClusterQueue per cycle; so does each cycle here — only without
the wait between cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from kubehpc.sched.admission.decisions import (
    HUMAN_PREEMPTION_REASONS,
    Admission,
    AdmissionDecisions,
    ClusterQueueState,
    Eviction,
    Pending,
    PendingCode,
    PendingReason,
    PodSetDecision,
    Preemption,
)
from kubehpc.sched.admission.explain import never_fits, quota_reason
from kubehpc.sched.admission.fairshare import Shares
from kubehpc.sched.admission.flavors import (
    FIT,
    PREEMPT,
    Assignment,
    CompiledQueue,
    assign,
    full_counts,
    reduced_counts,
    slack,
)
from kubehpc.sched.admission.model import (
    HOLD,
    HOLD_AND_DRAIN,
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    NO_BACKFILL,
    STRICT_FIFO,
    AdmissionSnapshot,
    PodSet,
    PodSetAdmission,
    Workload,
)
from kubehpc.sched.admission.nodes import NodePlacer, NoRoom
from kubehpc.sched.admission.preemption import Target, candidates, classic_targets, fair_targets
from kubehpc.sched.admission.quota import QuotaTree
from kubehpc.sched.admission.reservations import (
    CONSERVATIVE_BACKFILL,
    QueueReservations,
    policy_of,
    release_series,
)
from kubehpc.sched.admission.state import Holder
from kubehpc.sched.backfill import NO_TIME


@dataclass(slots=True)
class _Entry:
    wl: Workload
    cq: CompiledQueue
    assignment: Assignment
    targets: list[Target]
    version: int
    order: tuple[Any, ...] = ()


def queue_order(wl: Workload) -> tuple[int, float, str]:
    return (-wl.priority, wl.queue_time, wl.uid)


def preemption_message(preemptor: Workload, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    """Kueue's Preempted condition message; paths run from the cohort root to the ClusterQueue."""
    human = HUMAN_PREEMPTION_REASONS.get(reason, "UNKNOWN")  # type: ignore[call-overload]
    return (
        f"Preempted to accommodate a workload (UID: {preemptor.uid or 'UNKNOWN'}, "
        f"JobUID: {preemptor.job_uid or 'UNKNOWN'}) due to {human}; "
        f"preemptor path: {preemptor_path}; preemptee path: {preemptee_path}"
    )


def stamp(seconds: float) -> str:
    """A plan's instant in messages, as RFC 3339 (UTC)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Decider:
    """The working state of one decision; ``run`` returns the decisions."""

    def __init__(self, snapshot: AdmissionSnapshot, now: float, estimate: bool = False) -> None:
        self.snap = snapshot
        self.now = now
        self.estimate = estimate
        self.config = snapshot.config
        self.tree = QuotaTree(snapshot.cluster_queues, snapshot.cohorts)
        self.shares = Shares(self.tree)
        flavors = dict(snapshot.flavors)
        self.queues = {
            name: CompiledQueue(cq, self.tree, flavors, self.config.fair_sharing)
            for name, cq in sorted(snapshot.cluster_queues.items())
        }
        self.cq_nodes = [q.node for q in self.queues.values()]
        self.holders: list[list[Holder]] = [[] for _ in self.tree.names]
        self.placer = (
            NodePlacer(snapshot.nodes, self.config.placement, flavors) if snapshot.nodes is not None else None
        )
        self.versions = [0] * len(self.tree.names)
        """Per root of the cohort tree: bumped whenever usage under it changes."""
        self.taken: set[int] = set()
        self.admissions: list[Admission] = []
        self.preemptions: list[Preemption] = []
        self.evictions: list[Eviction] = []
        self.pending: dict[str, tuple[Workload, str, PendingReason, str, bool]] = {}
        self._selects: dict[tuple[str, str], bool] = {}
        self._no_targets: set[tuple[Any, ...]] = set()
        self._reserved: list[tuple[int, list[tuple[int, int]]]] = []
        """Usage of this cycle's preemptors, held until the cycle ends."""
        self.policies = {
            name: policy_of(q.cq.backfill, self.config.backfill) for name, q in self.queues.items()
        }
        self.reservations: dict[str, QueueReservations] = {}
        """Per ClusterQueue with a backfill policy, once a workload in it did not fit."""
        self._empty_tree: QuotaTree | None = None
        self._empty_usage: dict[tuple[str, tuple[PodSet, ...]], list[tuple[int, int]] | None] = {}
        self._queued: dict[str, list[Workload]] = {}
        self._reserved_memo: dict[
            tuple[PodSetAdmission, ...], tuple[list[tuple[int, int]], frozenset[int]]
        ] = {}

    # ----------------------------------------------------------------- setup

    def _hold(self, wl: Workload, charge: dict[int, dict[int, int]]) -> None:
        """Note an admitted workload as holding its reserved quota in its ClusterQueue; the
        quota itself is added to ``charge`` (per quota-tree node and flavor-resource), which
        ``_enqueue`` charges to the tree in one step per ClusterQueue."""
        q = self.queues.get(wl.reserved_in)
        if q is None or wl.reserved is None:
            return  # its ClusterQueue is gone: the quota it held no longer exists
        items, frs = self._reserved_items(wl.reserved)
        node_charge = charge.setdefault(q.node, {})
        for fr, amt in items:
            node_charge[fr] = node_charge.get(fr, 0) + amt
        self.holders[q.node].append(Holder(wl, q.node, items, frs, wl.reserved_at, wl.evicted))
        lq = self.snap.local_queues.get(wl.local_queue_key)
        if wl.evicted:
            return
        if q.cq.stop_policy == HOLD_AND_DRAIN:
            self.evictions.append(
                Eviction(wl.key, wl.uid, q.name, "ClusterQueueStopped", "The ClusterQueue is stopped")
            )
        elif lq is not None and lq.stop_policy == HOLD_AND_DRAIN:
            self.evictions.append(
                Eviction(wl.key, wl.uid, q.name, "LocalQueueStopped", "The LocalQueue is stopped")
            )

    def _reserved_items(
        self, reserved: tuple[PodSetAdmission, ...]
    ) -> tuple[list[tuple[int, int]], frozenset[int]]:
        """A reservation's usage per flavor-resource id, sorted; the same for every workload
        with an equal reservation (shared: holders only read it)."""
        got = self._reserved_memo.get(reserved)
        if got is None:
            usage: dict[int, int] = {}
            for psa in reserved:
                flavor_of = dict(psa.flavors)
                for res, amt in psa.usage:
                    flavor = flavor_of.get(res)
                    fr = self.tree.fr_index.get((flavor, res)) if flavor is not None else None
                    if fr is not None:
                        usage[fr] = usage.get(fr, 0) + amt
            got = self._reserved_memo[reserved] = (sorted(usage.items()), frozenset(usage))
        return got

    def _selects_namespace(self, q: CompiledQueue, namespace: str) -> bool:
        key = (q.name, namespace)
        got = self._selects.get(key)
        if got is None:
            selector = q.cq.namespace_selector
            labels = self.snap.namespaces.get(namespace) or {"kubernetes.io/metadata.name": namespace}
            got = self._selects[key] = selector is not None and selector.matches(labels)
        return got

    def _wait(self, wl: Workload, cq: str, reason: PendingReason, message: str, never: bool = False) -> None:
        self.pending[wl.key] = (wl, cq, reason, message, never)

    def _enqueue(self) -> dict[str, list[Workload]]:
        queues: dict[str, list[Workload]] = {name: [] for name in self.queues}
        charge: dict[int, dict[int, int]] = {}
        for wl in self.snap.workloads:
            if wl.reserved is not None:
                self._hold(wl, charge)
                continue
            if wl.problem:
                code = PendingCode(wl.problem)
                self._wait(wl, "", PendingReason(code, wl.cluster_queue), wl.problem_message)
                continue
            lq = self.snap.local_queues.get(wl.local_queue_key)
            q = self.queues.get(wl.cluster_queue or (lq.cluster_queue if lq is not None else ""))
            if lq is None:
                reason = PendingReason(PendingCode.LOCAL_QUEUE_NOT_FOUND)
                self._wait(wl, "", reason, f"LocalQueue {wl.queue_name} doesn't exist")
            elif q is None:
                reason = PendingReason(PendingCode.CLUSTER_QUEUE_NOT_FOUND, lq.cluster_queue)
                self._wait(wl, "", reason, f"ClusterQueue {lq.cluster_queue} doesn't exist")
            elif not q.cq.active:
                reason = PendingReason(PendingCode.CLUSTER_QUEUE_INACTIVE, q.name)
                self._wait(wl, q.name, reason, f"ClusterQueue {q.name} is inactive: {q.cq.inactive_message}")
            elif lq.stop_policy in (HOLD, HOLD_AND_DRAIN):
                reason = PendingReason(PendingCode.LOCAL_QUEUE_STOPPED, q.name)
                self._wait(wl, q.name, reason, f"LocalQueue {lq.name} is stopped")
            elif not self._selects_namespace(q, wl.namespace):
                reason = PendingReason(PendingCode.NAMESPACE_NOT_SELECTED, q.name)
                self._wait(
                    wl,
                    q.name,
                    reason,
                    f"Workload namespace {wl.namespace} doesn't match ClusterQueue {q.name} selector",
                )
            else:
                queues[q.name].append(wl)
        # Charged per ClusterQueue in one step: what a parent holds depends only on the child's
        # total (the part beyond its guaranteed quota), so one sum equals many small charges.
        for node, usage in charge.items():
            self.tree.add(node, sorted(usage.items()))
        for items in queues.values():
            items.sort(key=queue_order)
        self._queued = queues
        return queues

    # ----------------------------------------------------------------- nomination

    def _targets(self, wl: Workload, q: CompiledQueue, a: Assignment) -> list[Target]:
        # Victims depend on the usage under the cohort root, the preemptor's priority (and
        # queue time, under LowerOrNewerEqualPriority) and what it asks for; queues of alike
        # workloads that cannot preempt anybody ask the same question many times.
        newer_equal = q.cq.preemption.within_cluster_queue == LOWER_OR_NEWER_EQUAL_PRIORITY
        key = (
            q.node,
            self.versions[self.tree.root[q.node]],
            wl.priority,
            wl.queue_time if newer_equal else 0.0,
            tuple(a.usage),
        )
        if key in self._no_targets:
            return []
        cands = candidates(
            wl, q.cq, q.node, a.preempt_frs, self.tree, self.holders, self.cq_nodes, self.taken
        )
        if not cands:
            targets: list[Target] = []
        elif self.config.fair_sharing and self.tree.parent[q.node] >= 0:
            targets = fair_targets(
                wl,
                q.cq,
                q.node,
                a.usage,
                a.preempt_frs,
                self.tree,
                self.shares,
                cands,
                self.config.fair_sharing_strategies,
            )
        else:
            targets = classic_targets(wl, q.cq, q.node, a.usage, a.preempt_frs, self.tree, cands)
        if not targets:
            self._no_targets.add(key)
        return targets

    def _nominate(self, wl: Workload, q: CompiledQueue) -> tuple[Assignment, list[Target]]:
        a = assign(q, self.tree, wl, full_counts(wl))
        if a.mode == FIT:
            return a, []
        targets = self._targets(wl, q, a) if a.mode == PREEMPT else []
        total = slack(wl)
        if targets or not self.config.partial_admission or total == 0:
            return a, targets
        # Partial admission: the smallest reduction that fits (or fits by preempting).
        lo, hi = 1, total
        best: tuple[Assignment, list[Target]] | None = None
        while lo <= hi:
            mid = (lo + hi) // 2
            pa = assign(q, self.tree, wl, reduced_counts(wl, mid, total))
            pt = self._targets(wl, q, pa) if pa.mode == PREEMPT else []
            if pa.mode == FIT or pt:
                best = (pa, pt)
                hi = mid - 1
            else:
                lo = mid + 1
        return best if best is not None else (a, targets)

    # ----------------------------------------------------------------- processing

    def _order(self, e: _Entry) -> tuple[Any, ...]:
        wl = e.wl
        base = (e.assignment.borrowing, -wl.priority, wl.queue_time, wl.uid)
        if self.config.fair_sharing:
            # Kueue's tournament through the cohort tree: compare the shares of the subtrees
            # the two workloads would land in, from the top of the tree down.
            shares = tuple(self.shares.share(n, e.assignment.usage) for n in self._path(e.cq.node))
            return (shares, *base)
        return base

    def _cq_path(self, node: int) -> str:
        """ "/root/.../cq", as Kueue writes it in preemption messages."""
        names = [self.tree.names[node]]
        while self.tree.parent[node] >= 0:
            node = self.tree.parent[node]
            names.append(self.tree.names[node])
        return "/" + "/".join(reversed(names))

    def _path(self, node: int) -> list[int]:
        """The nodes from just below the root down to ``node``."""
        path = []
        while self.tree.parent[node] >= 0:
            path.append(node)
            node = self.tree.parent[node]
        return path[::-1]

    def _still_fits(self, e: _Entry) -> bool:
        if any(id(h) in self.taken for h, _ in e.targets):
            return False  # another head of this cycle preempts the same victims
        tree = self.tree
        for h, _ in e.targets:
            tree.add(h.cq, h.usage, -1)
        ok = tree.fits(e.cq.node, e.assignment.usage)
        for h, _ in e.targets:
            tree.add(h.cq, h.usage)
        return ok

    def _admit(self, e: _Entry) -> bool:
        """Admit (placing pods on nodes when there are nodes); False when the nodes say no."""
        wl, q, a = e.wl, e.cq, e.assignment
        nodes: list[tuple[tuple[str, int], ...]] = [() for _ in a.pod_sets]
        if self.placer is not None:
            placed = self.placer.place(wl, a)
            if isinstance(placed, NoRoom):
                never = not self.placer.could_ever_fit(wl, a)
                reason = PendingReason(
                    PendingCode.NO_NODE_FITS, q.name, flavor=placed.flavor, pod_set=placed.pod_set
                )
                text = (
                    f"ClusterQueue {q.name}: quota reserved, but {placed.missing} pod(s) of pod set "
                    f"{placed.pod_set} do not fit on the nodes of flavor {placed.flavor}: {placed.message}"
                )
                self._wait(wl, q.name, reason, text, never)
                return False
            nodes = placed
        self.tree.add(q.node, a.usage)
        self.versions[self.tree.root[q.node]] += 1
        self.holders[q.node].append(
            Holder(wl, q.node, a.usage, frozenset(fr for fr, _ in a.usage), self.now, new=True)
        )
        pod_sets = tuple(
            PodSetDecision(
                PodSetAdmission(
                    r.name, tuple(sorted(r.flavors.items())), r.count, tuple(sorted(r.usage.items()))
                ),
                n,
            )
            for r, n in zip(a.pod_sets, nodes, strict=True)
        )
        partial = any(r.count < ps.count for r, ps in zip(a.pod_sets, wl.pod_sets, strict=True))
        self.admissions.append(Admission(wl.key, wl.uid, q.name, pod_sets, a.borrowing, partial))
        return True

    def _preempt(self, e: _Entry) -> None:
        wl, q, a = e.wl, e.cq, e.assignment
        shortage, text = quota_reason(q, self.tree, a)
        for h, why in e.targets:
            # Victims keep their quota until the applier has evicted them: nobody else may take
            # it in this call (Kueue's next cycles still see them in its cache).
            self.taken.add(id(h))
            if not h.evicted:
                victim_cq = self.tree.names[h.cq]
                message = preemption_message(wl, why, self._cq_path(q.node), self._cq_path(h.cq))
                self.preemptions.append(
                    Preemption(h.wl.key, h.wl.uid, victim_cq, wl.key, wl.uid, why, message)
                )
        # For the rest of this cycle the preemptor's usage counts too (Kueue's cycle snapshot).
        self.tree.add(q.node, a.usage)
        self.versions[self.tree.root[q.node]] += 1
        self._reserved.append((q.node, a.usage))
        reason = replace(shortage, code=PendingCode.PENDING_PREEMPTION)
        self._wait(wl, q.name, reason, f"{text}; pending the preemption of {len(e.targets)} workload(s)")

    def _inadmissible(self, e: _Entry) -> None:
        q = e.cq
        reason, text = quota_reason(q, self.tree, e.assignment)
        self._wait(e.wl, q.name, reason, text, never_fits(q, self.tree, e.wl, self.config.partial_admission))

    # ----------------------------------------------------------------- backfill

    def _queue_reservations(self, q: CompiledQueue, policy: str) -> QueueReservations:
        qr = self.reservations.get(q.name)
        if qr is None:
            dims = sorted({fr for g in q.groups for cf in g.flavors for fr in cf.fr.values()})
            root = self.tree.root[q.node]
            holders = [
                h for n in range(len(self.holders)) if self.tree.root[n] == root for h in self.holders[n]
            ]
            leaving = {id(h) for h in holders if id(h) in self.taken}
            times, available = release_series(self.tree, q.node, dims, holders, self.now, leaving)
            qr = self.reservations[q.name] = QueueReservations(policy, dims, times, available, self.now)
        return qr

    def _full_size(self, q: CompiledQueue, qr: QueueReservations, wl: Workload) -> np.ndarray | None:
        """What ``wl`` takes of the queue's cells with the flavors it would get on an empty
        cohort; None when it would not fit even then."""
        # The empty cohort never changes: workloads with the same pod sets get the same answer.
        key = (q.name, wl.pod_sets)
        if key not in self._empty_usage:
            if self._empty_tree is None:
                self._empty_tree = QuotaTree(self.snap.cluster_queues, self.snap.cohorts)
            a = assign(q, self._empty_tree, wl, full_counts(wl))
            self._empty_usage[key] = a.usage if a.mode == FIT else None
        usage = self._empty_usage[key]
        return qr.size(usage) if usage is not None else None

    def _reserve(self, e: _Entry, policy: str) -> None:
        """A workload that does not fit gets its reservation (EASY: only the first one)."""
        qr = self._queue_reservations(e.cq, policy)
        size = self._full_size(e.cq, qr, e.wl)
        if size is not None:
            qr.block(e.wl, size)

    def _held_back(self, e: _Entry, qr: QueueReservations, size: np.ndarray) -> None:
        """``e`` fits but would delay a reservation: it waits (conservative: on its own one)."""
        key, at = qr.blocker()
        if qr.policy == CONSERVATIVE_BACKFILL:
            qr.block(e.wl, size)
        when = f" at {stamp(at)}" if at != NO_TIME else ""
        reason = PendingReason(PendingCode.WAITS_FOR_RESERVATION, e.cq.name)
        text = (
            f"ClusterQueue {e.cq.name}: fits, but admitting it would delay the reservation of "
            f"{key}{when} ({qr.policy} backfill)"
        )
        self._wait(e.wl, e.cq.name, reason, text)

    def _estimates(self) -> dict[str, float]:
        """Each pending workload's estimated start: per ClusterQueue, after this decision, every
        workload in queue order takes its earliest slot in the conservative profile (no slot
        before the one ahead under StrictFIFO without backfill)."""
        out: dict[str, float] = {}
        for name, items in self._queued.items():
            waiting = [wl for wl in items if wl.key in self.pending]
            if not waiting:
                continue
            q = self.queues[name]
            in_order = q.cq.queueing_strategy == STRICT_FIFO and self.policies[name] == NO_BACKFILL
            self.reservations.pop(name, None)
            qr = self._queue_reservations(q, CONSERVATIVE_BACKFILL)
            previous = self.now
            for wl in waiting:
                _, _, reason, _, never = self.pending[wl.key]
                if never or reason.code == PendingCode.NO_NODE_FITS:
                    if in_order:
                        break  # nothing passes it
                    continue
                size = self._full_size(q, qr, wl)
                if size is None:
                    continue
                t = qr.block(wl, size, previous if in_order else -np.inf)
                if t == NO_TIME:
                    if in_order:
                        break
                    continue
                out[wl.key] = t
                previous = t
        return out

    def run(self) -> AdmissionDecisions:
        queues = self._enqueue()
        heads = {name: 0 for name in queues}
        blocked: dict[str, tuple[Workload, str]] = {}
        """ClusterQueue -> its head that blocks it for the rest of this call, and why."""
        while True:
            entries: list[_Entry] = []
            for name, items in queues.items():
                i = heads[name]
                if i >= len(items) or name in blocked:
                    continue
                q = self.queues[name]
                if not q.cq.active:
                    continue
                a, targets = self._nominate(items[i], q)
                entries.append(_Entry(items[i], q, a, targets, self.versions[self.tree.root[q.node]]))
            if not entries:
                break
            for e in entries:
                e.order = self._order(e)
            entries.sort(key=lambda e: e.order)
            for e in entries:
                q = e.cq
                policy = self.policies[q.name]
                # A backfill policy replaces StrictFIFO's blocking with reservations.
                strict = q.cq.queueing_strategy == STRICT_FIFO and policy == NO_BACKFILL
                mode = e.assignment.mode
                fits = mode == FIT or (mode == PREEMPT and bool(e.targets))
                # Another head of this cycle changed the usage: check again. One that no
                # longer fits stays head; the next cycle nominates it afresh.
                if fits and self.versions[self.tree.root[q.node]] != e.version and not self._still_fits(e):
                    continue
                if mode == FIT:
                    qr = self.reservations.get(q.name)
                    size = qr.size(e.assignment.usage) if qr is not None else None
                    if qr is not None and size is not None and not qr.admits(e.wl, size):
                        self._held_back(e, qr, size)
                        heads[q.name] += 1
                        continue
                    if self._admit(e):
                        if qr is not None and size is not None:
                            qr.take(e.wl, size)
                        heads[q.name] += 1
                        continue
                elif fits:
                    self._preempt(e)
                    blocked[q.name] = (e.wl, "waits for its preemptions")
                    continue
                else:
                    self._inadmissible(e)
                    if policy != NO_BACKFILL:
                        self._reserve(e, policy)
                if strict:
                    blocked[q.name] = (e.wl, "does not fit (StrictFIFO)")
                else:
                    heads[q.name] += 1
            for node, usage in self._reserved:
                self.tree.add(node, usage, -1)
                self.versions[self.tree.root[node]] += 1
            self._reserved.clear()
        for name, items in queues.items():
            head, why = blocked.get(name, (None, ""))
            for wl in items[heads[name] :]:
                if wl.key in self.pending:
                    continue
                reason = PendingReason(PendingCode.BEHIND_QUEUE_HEAD, name)
                behind = f" behind {head.key}, which {why}" if head is not None else ""
                self._wait(wl, name, reason, f"ClusterQueue {name}: waiting in queue{behind}")
        return self._decisions(self._estimates() if self.estimate else {})

    # ----------------------------------------------------------------- output

    def _decisions(self, estimates: dict[str, float]) -> AdmissionDecisions:
        # Positions: per ClusterQueue and per LocalQueue, in queue order, among those still pending.
        by_cq: dict[str, list[Workload]] = {}
        for wl, cq, *_ in self.pending.values():
            if cq:
                by_cq.setdefault(cq, []).append(wl)
        position: dict[str, int] = {}
        lq_position: dict[str, int] = {}
        for items in by_cq.values():
            items.sort(key=queue_order)
            per_lq: dict[str, int] = {}
            for i, wl in enumerate(items):
                position[wl.key] = i
                n = per_lq.get(wl.local_queue_key, 0)
                lq_position[wl.key] = n
                per_lq[wl.local_queue_key] = n + 1
        pending = tuple(
            Pending(
                wl.key,
                wl.uid,
                cq,
                position.get(wl.key, -1),
                lq_position.get(wl.key, -1),
                reason,
                text,
                never,
                estimates.get(wl.key),
            )
            for wl, cq, reason, text, never in sorted(
                self.pending.values(), key=lambda p: (p[1], position.get(p[0].key, -1), p[0].key)
            )
        )
        return AdmissionDecisions(
            admissions=tuple(self.admissions),
            preemptions=tuple(self.preemptions),
            evictions=tuple(self.evictions),
            pending=pending,
            cluster_queues=tuple(self._queue_state(q, by_cq.get(q.name, [])) for q in self.queues.values()),
        )

    def _queue_state(self, q: CompiledQueue, pending: list[Workload]) -> ClusterQueueState:
        usage: dict[int, int] = {}
        holders = self.holders[q.node]
        for h in holders:
            for fr, amt in h.usage:
                usage[fr] = usage.get(fr, 0) + amt
        rows = []
        borrowed = []
        nominal = self.tree.nominal[q.node]
        for group in q.groups:
            for cf in group.flavors:
                for res, fr in cf.fr.items():
                    used = usage.get(fr, 0)
                    rows.append((cf.name, res, used))
                    if used > nominal[fr]:
                        borrowed.append((cf.name, res, used - nominal[fr]))
        # The share as the reserved usage makes it (victims still count, reservations do not).
        share = 0
        if self.config.fair_sharing and self.tree.parent[q.node] >= 0:
            current = self.tree.usage[q.node]
            delta = [(fr, usage.get(fr, 0) - current[fr]) for fr in self.tree.defined[q.node]]
            share = self.shares.share(q.node, delta)
        cq = q.cq
        return ClusterQueueState(
            name=q.name,
            active=cq.active,
            reason="Ready" if cq.active else cq.inactive_reason,
            message="Can admit new workloads" if cq.active else cq.inactive_message,
            pending=len(pending),
            admitted=len(holders),
            usage=tuple(rows),
            borrowed=tuple(borrowed),
            weighted_share=share,
        )


def decide(snapshot: AdmissionSnapshot, now: float = 0.0, estimate: bool = False) -> AdmissionDecisions:
    """Admit what fits, preempt what policy allows, explain everything left waiting.

    ``now`` stamps the workloads admitted in this call (as the most recently admitted, the
    first to be preempted later) and is the present of backfill plans (running workloads end
    at admitted-at + runtime estimate). ``estimate``: also give every pending workload its
    estimated start (``Pending.estimated_start``; costs a capacity profile per ClusterQueue).
    """
    return _Decider(snapshot, now, estimate).run()
