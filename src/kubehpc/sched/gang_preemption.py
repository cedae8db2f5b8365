"""Preemption across nodes for a gang: the fewest lower-priority gangs whose eviction lets it fit.

Victims are whole gangs — a running gang losing one pod is as dead as one losing all, so its
surviving pods would only hold room for nothing. The search is kube-scheduler's, at the level of
gangs: take candidates away, lowest priority (then youngest) first, until the gang fits; then
give back, highest priority first, every candidate the gang can do without (the *reprieve*).
What is left is minimal: no victim can be spared, and no gang of equal or higher priority is
ever touched. A gang bound to one topology domain runs that search per domain and keeps the
cheapest answer, so freeing one block does not evict gangs scattered over several.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kubehpc.sched.devices import DeviceBook
from kubehpc.sched.gang import Gang, GangDecisions, GangOptions, node_capacity, try_gang
from kubehpc.sched.model import PodShape, SchedulerConfig
from kubehpc.sched.nodetable import IntArray, NodeTable
from kubehpc.sched.placement import Usage, charge, static_fit
from kubehpc.sched.topology import Mode


@dataclass(frozen=True)
class RunningPod:
    pod: str
    node: str
    shape: PodShape


@dataclass(frozen=True)
class RunningGang:
    """Work that is running now, evictable only as a whole (a single pod is a gang of one)."""

    uid: str
    priority: int
    pods: tuple[RunningPod, ...]
    created: float = 0.0


@dataclass(frozen=True)
class GangPreemption:
    preemptor: str
    victims: tuple[str, ...]
    """Gangs to evict, every pod of each."""
    pods: tuple[str, ...]


def _take(table: NodeTable, usage: Usage, victim: RunningGang, sign: int) -> None:
    """Take the victim's pods off their nodes (``sign`` 1) or put them back (-1), one charge
    per shape."""
    by_shape: dict[PodShape, list[int]] = {}
    for p in victim.pods:
        node = table.index.get(p.node)
        if node is not None:
            by_shape.setdefault(p.shape, []).append(node)
    for shape, nodes in by_shape.items():
        charge(table, usage, shape, np.array(nodes, dtype=np.int64), sign=-sign)


def _might_fit(table: NodeTable, usage: Usage, options: GangOptions, gang: Gang) -> bool:
    """A necessary condition, cheap to test: every pod set's minimum fits in the free room (in
    one domain of its level when it requires one). Most steps of the search fail it."""
    tree = options.tree(gang.topology)
    for ps in gang.pod_sets:
        need = gang.minimum(ps)
        if need == 0:
            continue
        cap = node_capacity(table, usage, ps.shape)
        request = ps.topology
        depth = None
        if tree is not None and request is not None and request.mode is Mode.REQUIRED:
            depth = tree.level_index(request.level)
        if depth is None:
            if int(cap.sum()) < need:
                return False
            continue
        if int(tree.sums(depth, cap).max(initial=0)) < need:  # type: ignore[union-attr]
            return False
    return True


def _fits(table: NodeTable, usage: Usage, config: SchedulerConfig, options: GangOptions, gang: Gang) -> bool:
    # Counts only: the victims' devices come back with their pods, and the real decision
    # after the eviction chooses devices again.
    if not _might_fit(table, usage, options, gang):
        return False
    outcome = try_gang(table, usage, DeviceBook(None), config, options, gang)
    if outcome.placement is None:
        return False
    for ps in gang.pod_sets:
        ids = [
            table.index[b.node] for b in outcome.placement.bindings if b.pod_set == f"{gang.uid}/{ps.name}"
        ]
        charge(table, usage, ps.shape, np.array(ids, dtype=np.int64), sign=-1)
    return True


def _search(
    table: NodeTable,
    usage: Usage,
    gang: Gang,
    candidates: list[RunningGang],
    config: SchedulerConfig,
    options: GangOptions,
) -> list[RunningGang] | None:
    """Greedy removal then reprieve over ``candidates`` (already in eviction order)."""
    trial = Usage(usage.used.copy(order="F"), usage.scored.copy(order="F"))
    removed: list[RunningGang] = []
    for victim in candidates:
        _take(table, trial, victim, sign=1)
        removed.append(victim)
        if _fits(table, trial, config, options, gang):
            break
    else:
        return None
    # Reprieve: the most important victims first get the chance to stay.
    victims: list[RunningGang] = []
    for victim in sorted(removed, key=lambda r: (-r.priority, r.created, r.uid)):
        _take(table, trial, victim, sign=-1)
        if _fits(table, trial, config, options, gang):
            continue
        _take(table, trial, victim, sign=1)
        victims.append(victim)
    return victims


def _cost(victims: list[RunningGang]) -> tuple[int, int, int]:
    """Fewer gangs, then lower priorities, then fewer pods."""
    return (len(victims), max(v.priority for v in victims), sum(len(v.pods) for v in victims))


def _domains(table: NodeTable, gang: Gang, options: GangOptions) -> list[IntArray] | None:
    """Node ids of every domain of the gang's required level, or None when it requires none."""
    tree = options.tree(gang.topology)
    for ps in gang.pod_sets:
        request = ps.topology
        if tree is None or request is None or request.mode is not Mode.REQUIRED:
            continue
        depth = tree.level_index(request.level)
        if depth is None:
            return None
        ids = tree.domain[depth]
        order = np.argsort(ids, kind="stable")
        order = order[ids[order] >= 0]
        bounds = np.searchsorted(ids[order], np.arange(len(tree.names[depth]) + 1))
        return [order[bounds[d] : bounds[d + 1]] for d in range(len(tree.names[depth]))]
    return None


def find_victims(
    table: NodeTable,
    usage: Usage,
    gang: Gang,
    running: Sequence[RunningGang],
    config: SchedulerConfig | None = None,
    options: GangOptions | None = None,
) -> GangPreemption | None:
    """The minimal set of lower-priority gangs to evict so that ``gang`` fits, or None when
    evicting every one of them would not make room (or a pod set may not preempt).

    A gang that requires one domain of a level is tried domain by domain (Volcano tries each
    HyperNode): only the gangs running inside that domain are candidates, and the domain whose
    victims cost least wins — fewest gangs, then lowest priority, then fewest pods."""
    config = config or SchedulerConfig()
    options = options or GangOptions()
    if any(ps.shape.preempt_never for ps in gang.pod_sets):
        return None
    useful = np.zeros(len(table), dtype=np.bool_)
    for ps in gang.pod_sets:
        useful |= static_fit(table, ps.shape)
    # Lowest priority first, then the youngest (it has lost the least work).
    candidates = sorted(
        (r for r in running if r.priority < gang.priority),
        key=lambda r: (r.priority, -r.created, r.uid),
    )
    node_sets = {r.uid: [table.index[p.node] for p in r.pods if p.node in table.index] for r in candidates}
    groups: list[list[RunningGang]] = []
    domains = _domains(table, gang, options)
    for members in domains if domains is not None else [np.flatnonzero(useful)]:
        inside = np.zeros(len(table), dtype=np.bool_)
        inside[members] = True
        inside &= useful
        group = [r for r in candidates if any(inside[i] for i in node_sets[r.uid])]
        if group:
            groups.append(group)
    best: list[RunningGang] | None = None
    for group in groups:
        victims = _search(table, usage, gang, group, config, options)
        if victims and (best is None or _cost(victims) < _cost(best)):
            best = victims
    if best is None:
        return None
    best.sort(key=lambda r: (r.priority, -r.created, r.uid))
    return GangPreemption(gang.uid, tuple(v.uid for v in best), tuple(p.pod for v in best for p in v.pods))


def plan_preemptions(
    table: NodeTable,
    decisions: GangDecisions,
    gangs: Sequence[Gang],
    running: Sequence[RunningGang],
    config: SchedulerConfig | None = None,
    options: GangOptions | None = None,
) -> tuple[GangPreemption, ...]:
    """For the gangs a decision left waiting for room (not held, not incomplete), in queue
    order: the victims each would evict. A victim is chosen once; a preemptor's future room is
    counted as taken, so the next preemptor does not count on it (kube-scheduler's nominated
    pods)."""
    config = config or SchedulerConfig()
    options = options or GangOptions()
    by_uid = {g.uid: g for g in gangs}
    usage = Usage(decisions.usage.used.copy(order="F"), decisions.usage.scored.copy(order="F"))
    left = list(running)
    out: list[GangPreemption] = []
    for pending in decisions.pending:
        gang = by_uid.get(pending.gang)
        if gang is None or pending.held or gang.size < gang.needed:
            continue
        got = find_victims(table, usage, gang, left, config, options)
        if got is None:
            continue
        out.append(got)
        chosen = set(got.victims)
        for victim in left:
            if victim.uid in chosen:
                _take(table, usage, victim, sign=1)
        left = [r for r in left if r.uid not in chosen]
        try_gang(table, usage, DeviceBook(None), config, options, gang)  # nominated: its room is spoken for
    return tuple(out)
