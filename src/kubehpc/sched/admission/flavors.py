"""Flavor assignment: which ResourceFlavor each pod set gets, per resource group (Kueue's
``pkg/scheduler/flavorassigner``).

For each pod set and each resource group it touches, flavors are tried in the ClusterQueue's
order. A flavor is skipped when its nodes cannot host the pods (an untolerated NoSchedule or
NoExecute taint of the flavor, a nodeSelector or required node affinity on one of the group's
flavor label keys that the flavor's labels contradict). For the others each requested resource
is checked against the quota: it fits (possibly borrowing from the cohort), it could fit by
preempting (the amount stays within the nominal quota, or the ClusterQueue may preempt while
borrowing), or it does not fit. ``flavorFungibility`` says when to stop: the first flavor that
fits without borrowing always wins; one that fits only by borrowing wins under
``whenCanBorrow: MayStopSearch``; one that needs preemption wins under
``whenCanPreempt: MayStopSearch``; otherwise the best mode seen wins (Fit > Preempt > NoFit,
then not borrowing, then flavor order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubehpc.sched.admission.model import (
    MAY_STOP_SEARCH,
    NEVER,
    ClusterQueue,
    Flavor,
    PodSet,
    Workload,
)
from kubehpc.sched.admission.quota import QuotaTree
from kubehpc.sched.model import NO_EXECUTE, NO_SCHEDULE, PODS, NodeSelectorTerm, PodShape

NO_FIT = 0
PREEMPT = 1
FIT = 2


@dataclass(frozen=True, slots=True)
class Shortfall:
    """One resource of one flavor that did not fit, with the figures to explain it."""

    pod_set: str
    flavor: str
    resource: str
    fr: int
    needed: int
    available: int
    potential: int
    mode: int


@dataclass(slots=True)
class PodSetResult:
    name: str
    count: int
    flavors: dict[str, str]
    usage: dict[str, int]

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per pod set per flavor assignment).
    def __init__(self, name: str, count: int, flavors: dict[str, str], usage: dict[str, int]) -> None:
        self.name = name
        self.count = count
        self.flavors = flavors
        self.usage = usage


@dataclass(slots=True)
class Assignment:
    mode: int
    borrowing: bool = False
    pod_sets: list[PodSetResult] = field(default_factory=list)
    usage: list[tuple[int, int]] = field(default_factory=list)
    """(flavor-resource id, amount) of the whole workload."""
    preempt_frs: set[int] = field(default_factory=set)
    shortfalls: list[Shortfall] = field(default_factory=list)
    blocking: list[Shortfall] = field(default_factory=list)
    """The shortfalls that decided the outcome: those of resource groups no flavor could
    serve, and those of the flavor chosen for preemption."""
    uncovered: str = ""
    """A requested resource no resource group of the ClusterQueue covers."""
    mismatches: list[str] = field(default_factory=list)
    """Flavors skipped because their nodes cannot host the pods, and why."""
    counts: tuple[int, ...] = ()
    """Pods per pod set this assignment was made for (fewer than asked: partial admission)."""

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per workload per flavor assignment).
    def __init__(
        self,
        mode: int,
        borrowing: bool = False,
        pod_sets: list[PodSetResult] | None = None,
        usage: list[tuple[int, int]] | None = None,
        preempt_frs: set[int] | None = None,
        shortfalls: list[Shortfall] | None = None,
        blocking: list[Shortfall] | None = None,
        uncovered: str = "",
        mismatches: list[str] | None = None,
        counts: tuple[int, ...] = (),
    ) -> None:
        self.mode = mode
        self.borrowing = borrowing
        self.pod_sets = [] if pod_sets is None else pod_sets
        self.usage = [] if usage is None else usage
        self.preempt_frs = set() if preempt_frs is None else preempt_frs
        self.shortfalls = [] if shortfalls is None else shortfalls
        self.blocking = [] if blocking is None else blocking
        self.uncovered = uncovered
        self.mismatches = [] if mismatches is None else mismatches
        self.counts = counts


@dataclass(slots=True)
class CompiledFlavor:
    name: str
    flavor: Flavor
    fr: dict[str, int]


@dataclass(slots=True)
class CompiledGroup:
    covered: frozenset[str]
    flavors: list[CompiledFlavor]
    label_keys: frozenset[str]


class CompiledQueue:
    """A ClusterQueue ready for the hot path: groups as lists, resource -> group, caches."""

    __slots__ = (
        "_compat",
        "_plans",
        "covers_pods",
        "cq",
        "group_of",
        "groups",
        "name",
        "node",
        "preempt_while_borrowing",
    )

    def __init__(
        self, cq: ClusterQueue, tree: QuotaTree, flavors: dict[str, Flavor], fair_sharing: bool
    ) -> None:
        self.cq = cq
        self.name = cq.name
        self.node = tree.cq_ids[cq.name]
        self.groups: list[CompiledGroup] = []
        self.group_of: dict[str, int] = {}
        for gi, group in enumerate(cq.resource_groups):
            compiled = []
            keys: set[str] = set()
            for fq in group.flavors:
                flavor = flavors.get(fq.flavor) or Flavor(fq.flavor)
                keys.update(k for k, _ in flavor.node_labels)
                compiled.append(
                    CompiledFlavor(
                        fq.flavor, flavor, {r: tree.fr_index[(fq.flavor, r)] for r, _ in fq.resources}
                    )
                )
            self.groups.append(CompiledGroup(frozenset(group.covered), compiled, frozenset(keys)))
            for r in group.covered:
                self.group_of.setdefault(r, gi)
        # Kueue counts pods as a resource only where a ClusterQueue puts a quota on them.
        self.covers_pods = PODS in self.group_of
        self.preempt_while_borrowing = cq.preemption.borrow_within_cohort != NEVER or fair_sharing
        self._compat: dict[tuple[int, int, int], str] = {}
        self._plans: dict[int, tuple[object, list[tuple[int, list[tuple[str, int]]]] | str]] = {}

    def plan(self, ps: PodSet) -> list[tuple[int, list[tuple[str, int]]]] | str:
        """The pod set's per-pod requests split by resource group (in order of first use), or
        the first requested resource no group covers."""
        key = id(ps.requests)
        got = self._plans.get(key)
        if got is None:
            groups: dict[int, list[tuple[str, int]]] = {}
            uncovered = ""
            for res, amount in _requests(ps, self.covers_pods):
                g = self.group_of.get(res)
                if g is None:
                    uncovered = res
                    break
                groups.setdefault(g, []).append((res, amount))
            # The requests tuple is kept alive beside its plan, so its id is never reused.
            got = self._plans[key] = (ps.requests, uncovered or list(groups.items()))
        return got[1]

    def mismatch(self, shape: PodShape, group: int, index: int) -> str:
        """Why the pods of ``shape`` cannot use flavor ``index`` of ``group`` ("" when they can)."""
        key = (id(shape), group, index)
        got = self._compat.get(key)
        if got is None:
            g = self.groups[group]
            got = self._compat[key] = flavor_mismatch(shape, g.flavors[index].flavor, g.label_keys)
        return got


def _term_matches(term: NodeSelectorTerm, labels: dict[str, str], keys: frozenset[str]) -> bool:
    for req in term.match_expressions:
        if req.key not in keys:
            continue  # only the flavors' own label keys decide between flavors
        present = req.key in labels
        op = req.operator
        if op == "In":
            ok = present and labels[req.key] in req.values
        elif op == "NotIn":
            ok = not present or labels[req.key] not in req.values
        elif op == "Exists":
            ok = present
        elif op == "DoesNotExist":
            ok = not present
        else:
            ok = True  # Gt / Lt on a flavor label: left to the node filter
        if not ok:
            return False
    return True


def flavor_mismatch(shape: PodShape, flavor: Flavor, keys: frozenset[str]) -> str:
    """Kueue's ``checkFlavorForPodSets``: taints the pods do not tolerate, selectors the
    flavor's labels contradict."""
    tolerations = shape.tolerations + flavor.tolerations
    for taint in flavor.node_taints:
        if taint.effect not in (NO_SCHEDULE, NO_EXECUTE):
            continue  # PreferNoSchedule is ignored, as Kueue ignores it
        if not any(t.tolerates(taint) for t in tolerations):
            return f"untolerated taint {taint.key}={taint.value}:{taint.effect} in flavor {flavor.name}"
    labels = dict(flavor.node_labels)
    for key, value in shape.node_selector:
        if key in keys and labels.get(key) != value:
            return f"flavor {flavor.name} doesn't match node affinity"
    terms = shape.required_terms
    if terms and not any(_term_matches(t, labels, keys) for t in terms):
        return f"flavor {flavor.name} doesn't match node affinity"
    return ""


def _better(a: tuple[int, bool, int], b: tuple[int, bool, int]) -> bool:
    """Mode first, then not borrowing; the earlier flavor keeps a tie."""
    return (a[0], not a[1]) > (b[0], not b[1])


def assign(cq: CompiledQueue, tree: QuotaTree, wl: Workload, counts: tuple[int, ...]) -> Assignment:
    """Flavors for every pod set of ``wl`` with ``counts`` pods, against the tree's usage now."""
    node = cq.node
    when_borrow_stops = cq.cq.fungibility.when_can_borrow == MAY_STOP_SEARCH
    when_preempt_stops = cq.cq.fungibility.when_can_preempt == MAY_STOP_SEARCH
    nominal = tree.nominal[node]
    usage_row = tree.usage[node]
    subtree = tree.subtree[node]
    has_parent = tree.parent[node] >= 0
    acc: dict[int, int] = {}
    out = Assignment(FIT, counts=counts)
    for ps, count in zip(wl.pod_sets, counts, strict=True):
        if count == 0:
            out.pod_sets.append(PodSetResult(ps.name, 0, {}, {}))
            continue
        plan = cq.plan(ps)
        if isinstance(plan, str):
            out.mode = NO_FIT
            out.uncovered = plan
            return out
        by_group = [(g, [(res, per_pod * count) for res, per_pod in needs]) for g, needs in plan]
        flavors_out: dict[str, str] = {}
        usage_out: dict[str, int] = {}
        for g, requests in by_group:
            group = cq.groups[g]
            best: tuple[int, bool, int] | None = None
            best_preempt: list[int] = []
            first_shortfall = len(out.shortfalls)
            for fi, cf in enumerate(group.flavors):
                why = cq.mismatch(ps.shape, g, fi)
                if why:
                    out.mismatches.append(why)
                    continue
                fmode = FIT
                fborrow = False
                fpreempt: list[int] = []
                for res, amount in requests:
                    fr = cf.fr.get(res, -1)
                    if fr < 0:
                        # A flavor listing fewer resources than its group covers has no quota
                        # for the missing ones (the API's CEL rule normally prevents this).
                        out.mismatches.append(f"flavor {cf.name} has no quota for {res}")
                        fmode = NO_FIT
                        break
                    val = acc.get(fr, 0) + amount
                    borrows = has_parent and usage_row[fr] + val > subtree[fr]
                    if borrows:
                        fborrow = True
                    avail = tree.available(node, fr)
                    if val <= avail:
                        continue
                    potential = tree.potential(node, fr)
                    if val > potential:
                        mode = NO_FIT
                    elif val <= nominal[fr] or cq.preempt_while_borrowing:
                        mode = PREEMPT
                        fpreempt.append(fr)
                    else:
                        mode = NO_FIT
                    out.shortfalls.append(Shortfall(ps.name, cf.name, res, fr, val, avail, potential, mode))
                    if mode < fmode:
                        fmode = mode
                candidate = (fmode, fborrow, fi)
                if best is None or _better(candidate, best):
                    best, best_preempt = candidate, fpreempt
                if fmode == FIT and (not fborrow or when_borrow_stops):
                    break
                if fmode == PREEMPT and when_preempt_stops:
                    break
            if best is None or best[0] == NO_FIT:
                out.mode = NO_FIT
                out.blocking.extend(out.shortfalls[first_shortfall:])
                continue
            chosen = group.flavors[best[2]]
            if best[0] == PREEMPT:
                out.blocking.extend(s for s in out.shortfalls[first_shortfall:] if s.flavor == chosen.name)
            for res, amount in requests:
                fr = chosen.fr[res]
                acc[fr] = acc.get(fr, 0) + amount
                flavors_out[res] = chosen.name
                usage_out[res] = amount
            if best[0] < out.mode:
                out.mode = best[0]
            out.borrowing = out.borrowing or best[1]
            out.preempt_frs.update(best_preempt)
        out.pod_sets.append(PodSetResult(ps.name, count, flavors_out, usage_out))
    out.usage = sorted(acc.items())
    return out


def _requests(ps: PodSet, covers_pods: bool) -> tuple[tuple[str, int], ...]:
    if covers_pods:
        return (*ps.requests, (PODS, 1))
    return ps.requests


def full_counts(wl: Workload) -> tuple[int, ...]:
    return tuple(ps.count for ps in wl.pod_sets)


def reduced_counts(wl: Workload, step: int, total: int) -> tuple[int, ...]:
    """Kueue's PodSetReducer: every pod set with a minCount gives up the same share of its
    slack (count - minCount); ``step`` of ``total`` is how far down the search went."""
    out = []
    for ps in wl.pod_sets:
        if ps.min_count is None or ps.min_count >= ps.count:
            out.append(ps.count)
            continue
        delta = ps.count - ps.min_count
        out.append(ps.count - (-(-step * delta // total)))
    return tuple(out)


def slack(wl: Workload) -> int:
    """The largest slack of any pod set: the number of distinct reductions worth trying."""
    return max((ps.count - ps.min_count for ps in wl.pod_sets if ps.min_count is not None), default=0)
