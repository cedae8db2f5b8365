"""Topology-aware placement: put a pod set's pods in as few, as tight, network domains as fit.

A topology is a list of levels from coarse to fine — Kueue's ``Topology`` object
(``spec.levels[].nodeLabel``: block, rack, ``kubernetes.io/hostname``), an NVLink domain
(``nvidia.com/gpu.clique``) as one more level, or Volcano's HyperNode tiers resolved to a path of
domain names per node. The node itself is always the finest level.

Two parts, as Kueue's TAS snapshot has them:

* :class:`TopologyTree` — immutable, built once per node table lineage (labels do not move when
  only usage does): for every level, each node's domain id and each domain's parent, as arrays.
* :func:`assign` — per decision: how many pods of the shape each node can still take, summed
  bottom-up per domain with ``bincount``; then a domain is chosen and the pods are handed out
  top-down, taking at each level the fewest children that hold them and, for the last child,
  the smallest one that suffices (least capacity left stranded).

Requests follow Kueue's pod-set annotations: *required* (all pods in one domain of the level or
none), *preferred* (one domain of the level if any fits, else the tightest wider domain, else
several top-level domains) and *unconstrained* (anywhere, still as tight as possible). Volcano's
``networkTopology`` maps onto the same two modes (:func:`volcano_request`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubehpc.sched.nodetable import IntArray, NodeTable

HOSTNAME_LABEL = "kubernetes.io/hostname"
NVLINK_CLIQUE_LABEL = "nvidia.com/gpu.clique"
REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
NODE_LEVEL = "node"
"""The name of the finest level, always present: each node is its own domain."""


class Mode(enum.StrEnum):
    REQUIRED = "required"
    PREFERRED = "preferred"
    UNCONSTRAINED = "unconstrained"


class Packing(enum.StrEnum):
    """How domains and nodes are chosen among those that fit."""

    BINPACK = "binpack"
    """The tightest domain and the fullest nodes: keeps whole nodes, racks and blocks free."""
    SPREAD = "spread"
    """The emptiest domain, pods spread evenly over its nodes."""


@dataclass(frozen=True)
class TopologyRequest:
    """Where one pod set's pods must (or should) be together. ``level`` names a level of the
    topology (a node label, or a tier name); ignored for ``UNCONSTRAINED``."""

    mode: Mode
    level: str = NODE_LEVEL


def level_title(level: str) -> str:
    """A level as people say it: ``cloud.provider.com/topology-block`` -> ``block``."""
    if level in (HOSTNAME_LABEL, NODE_LEVEL):
        return "node"
    if level == NVLINK_CLIQUE_LABEL:
        return "NVLink domain"
    short = level.rsplit("/", 1)[-1]
    return short.removeprefix("topology-") or level


def request_from_annotations(annotations: Mapping[str, str]) -> TopologyRequest | None:
    """The pod set's request from Kueue's pod-template annotations (required wins, as the
    webhook allows only one of them)."""
    if annotations.get(REQUIRED_ANNOTATION):
        return TopologyRequest(Mode.REQUIRED, annotations[REQUIRED_ANNOTATION])
    if annotations.get(PREFERRED_ANNOTATION):
        return TopologyRequest(Mode.PREFERRED, annotations[PREFERRED_ANNOTATION])
    if str(annotations.get(UNCONSTRAINED_ANNOTATION, "")).lower() == "true":
        return TopologyRequest(Mode.UNCONSTRAINED)
    return None


def tier_level(tier: int) -> str:
    """The level name a Volcano HyperNode tier takes in a :class:`TopologyTree`."""
    return f"tier-{tier}"


def volcano_request(mode: str, highest_tier_allowed: int, tiers: Sequence[int]) -> TopologyRequest:
    """Volcano's ``networkTopology`` as a request on a tree of HyperNode ``tiers`` (the tier
    numbers that exist; tier 1 is the closest). ``hard`` must stay within one HyperNode of the
    highest tier allowed, ``soft`` tries to. With no tier that low, one node is the only domain
    tight enough."""
    if mode not in ("hard", "soft"):
        raise ValueError(f"networkTopology.mode must be hard or soft, got {mode!r}")
    if highest_tier_allowed < 1:
        raise ValueError(f"networkTopology.highestTierAllowed must be at least 1, got {highest_tier_allowed}")
    allowed = [t for t in tiers if t <= highest_tier_allowed]
    level = tier_level(max(allowed)) if allowed else NODE_LEVEL
    return TopologyRequest(Mode.REQUIRED if mode == "hard" else Mode.PREFERRED, level)


class TopologyTree:
    """Levels coarse to fine, the node level last. ``domain[l][i]``: node ``i``'s domain at
    level ``l`` (-1: the node is outside the topology — it lacks one of the labels);
    ``parent[l][d]``: the level ``l - 1`` domain holding domain ``d``; ``names[l][d]``: the
    domain's own value at its level (domains are told apart by their whole path, as in Kueue)."""

    __slots__ = ("_children", "_members", "domain", "levels", "names", "parent")

    def __init__(
        self, levels: tuple[str, ...], paths: Sequence[tuple[str, ...] | None], nodes: Sequence[str]
    ):
        self.levels = (*levels, NODE_LEVEL)
        n = len(paths)
        self.domain: list[IntArray] = []
        self.names: list[list[str]] = []
        self.parent: list[IntArray] = []
        prefixes: list[tuple[str, ...] | None] = list(paths)
        for depth in range(len(levels) + 1):
            ids = np.full(n, -1, dtype=np.int64)
            seen: dict[tuple[str, ...], int] = {}
            names: list[str] = []
            parents: list[int] = []
            for i, path in enumerate(prefixes):
                if path is None:
                    continue
                key = (*path[: depth + 1],) if depth < len(levels) else (*path, nodes[i])
                d = seen.get(key)
                if d is None:
                    d = seen[key] = len(names)
                    names.append(key[-1])
                    parents.append(int(self.domain[depth - 1][i]) if depth else -1)
                ids[i] = d
            self.domain.append(ids)
            self.names.append(names)
            self.parent.append(np.array(parents, dtype=np.int64))
        # Children of every domain, grouped (CSR): domains of level l + 1 sorted by parent.
        self._children: list[tuple[IntArray, IntArray]] = []
        for depth in range(1, len(self.levels)):
            parent = self.parent[depth]
            order = np.argsort(parent, kind="stable")
            starts = np.searchsorted(parent[order], np.arange(len(self.names[depth - 1]) + 1))
            self._children.append((order, starts))
        # Per level, the nodes inside the topology and their domains: what every sum reads.
        self._members = [(np.flatnonzero(ids >= 0), ids[ids >= 0]) for ids in self.domain]

    @classmethod
    def from_labels(cls, table: NodeTable, levels: Sequence[str]) -> TopologyTree:
        """Kueue's Topology: a node belongs to a domain per level through its labels; a node
        missing any of them is outside the topology. ``kubernetes.io/hostname`` as the last level
        is the node level itself."""
        keys = tuple(k for k in levels if k != HOSTNAME_LABEL)

        def compute() -> TopologyTree:
            paths: list[tuple[str, ...] | None] = []
            for labels in table.labels:
                values = [labels[k] for k in keys if k in labels]
                paths.append(tuple(values) if len(values) == len(keys) else None)
            return cls(keys, paths, table.names)

        tree: TopologyTree = table.memo(("topology", tuple(levels)), compute)
        return tree

    @classmethod
    def from_paths(
        cls, table: NodeTable, levels: Sequence[str], paths: Mapping[str, tuple[str, ...]]
    ) -> TopologyTree:
        """Explicit membership (Volcano HyperNodes resolved by the caller): node name -> its
        domain names, coarse to fine, one per level. Nodes not named are outside the topology."""
        for name, path in paths.items():
            if len(path) != len(levels):
                raise ValueError(f"node {name}: {len(path)} domains for {len(levels)} levels")
        return cls(tuple(levels), [paths.get(name) for name in table.names], table.names)

    def level_index(self, level: str) -> int | None:
        if level == HOSTNAME_LABEL:
            level = NODE_LEVEL
        try:
            return self.levels.index(level)
        except ValueError:
            return None

    def covers(self, level: str) -> bool:
        """Whether some node carries the level (a level no node has is bad input)."""
        index = self.level_index(level)
        return index is not None and bool((self.domain[index] >= 0).any())

    def sums(self, depth: int, cap: IntArray) -> IntArray:
        """Per domain of ``depth``, the sum of ``cap`` over its nodes."""
        rows, ids = self._members[depth]
        total: IntArray = np.bincount(ids, weights=cap[rows], minlength=len(self.names[depth])).astype(
            np.int64
        )
        return total

    def children(self, depth: int, d: int) -> IntArray:
        """Domains at ``depth + 1`` inside domain ``d`` of ``depth``."""
        order, starts = self._children[depth]
        kids: IntArray = order[starts[d] : starts[d + 1]]
        return kids


@dataclass(frozen=True)
class Assignment:
    """Pods per node (``counts[i]``), and the single domain holding them all, if one does."""

    counts: IntArray
    level: str
    domain: str


@dataclass(frozen=True)
class Miss:
    """Why a request does not fit: the best single domain of the level holds ``best`` pods."""

    level: str
    wanted: int
    best: int
    best_domain: str
    missing_level: bool = False
    """No node carries the level at all: bad input, not a matter of waiting."""

    def describe(self, what: str) -> str:
        title = level_title(self.level)
        if self.missing_level:
            return f"topology level {self.level} is carried by no node"
        where = f" ({self.best_domain})" if self.best_domain else ""
        return (
            f"needs {self.wanted} x {what} in one {title}; the best {title}{where} has room for {self.best}"
        )


def _per_level(tree: TopologyTree, cap: IntArray) -> list[IntArray]:
    """Capacity summed bottom-up: per level, the pods each domain can take."""
    return [tree.sums(depth, cap) for depth in range(len(tree.levels))]


def _pick(caps: IntArray, candidates: IntArray, wanted: int, packing: Packing) -> int:
    """Among ``candidates`` domains that hold ``wanted``, the tightest (binpack) or emptiest
    (spread); ties to the lowest id."""
    fit = candidates[caps[candidates] >= wanted]
    if packing is Packing.BINPACK:
        return int(fit[np.argmin(caps[fit])])
    return int(fit[np.argmax(caps[fit])])


def _fewest(caps: IntArray, kids: IntArray, wanted: int, packing: Packing) -> tuple[IntArray, IntArray]:
    """Children and how many pods each gets: the fewest that hold ``wanted`` (largest first),
    the last swapped for the smallest that still holds the remainder. Spread hands pods out
    evenly instead, filling every child to the same level."""
    kids = kids[caps[kids] > 0]
    if packing is Packing.SPREAD:
        return kids, _water_fill(caps[kids], wanted)
    order = kids[np.lexsort((kids, -caps[kids]))]
    running = np.cumsum(caps[order])
    k = int(np.searchsorted(running, wanted)) + 1
    taken = order[:k].copy()
    amounts = caps[taken].copy()
    remainder = wanted - (int(running[k - 2]) if k > 1 else 0)
    rest = order[k - 1 :]
    last = _pick(caps, rest, remainder, Packing.BINPACK)
    taken[-1] = last
    amounts[-1] = remainder
    return taken, amounts


def _water_fill(caps: IntArray, wanted: int) -> IntArray:
    """Spread ``wanted`` pods so each place gets ``min(cap, r)`` for the highest level ``r``,
    the remainder one more each to the first places that have room."""
    lo, hi = 0, int(caps.max(initial=0))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if int(np.minimum(caps, mid).sum()) <= wanted:
            lo = mid
        else:
            hi = mid - 1
    out = np.minimum(caps, lo)
    extra = wanted - int(out.sum())
    if extra:
        room = np.flatnonzero(caps > lo)[:extra]
        out[room] += 1
    result: IntArray = out
    return result


def _descend(
    tree: TopologyTree,
    caps: list[IntArray],
    depth: int,
    domains: IntArray,
    amounts: IntArray,
    packing: Packing,
) -> IntArray:
    """Hand ``amounts`` pods to ``domains`` of ``depth`` down to the nodes: per-node counts."""
    n = len(tree.domain[0])
    counts = np.zeros(n, dtype=np.int64)
    last = len(tree.levels) - 1
    frontier = list(zip(domains.tolist(), amounts.tolist(), strict=True))
    while depth < last:
        nxt: list[tuple[int, int]] = []
        for d, amount in frontier:
            kids, given = _fewest(caps[depth + 1], tree.children(depth, d), amount, packing)
            nxt.extend(zip(kids.tolist(), given.tolist(), strict=True))
        frontier = nxt
        depth += 1
    # At the node level a domain id is the position among nodes inside the topology.
    node_of = np.flatnonzero(tree.domain[last] >= 0)
    node_of = node_of[np.argsort(tree.domain[last][node_of])]
    for d, amount in frontier:
        counts[node_of[d]] += amount
    return counts


def assign(
    tree: TopologyTree, cap: IntArray, wanted: int, request: TopologyRequest, packing: Packing
) -> Assignment | Miss:
    """Per-node pod counts for ``wanted`` pods, where ``cap[i]`` is how many node ``i`` can take.

    Binpack looks for the finest level at which one domain holds every pod, up to the request's
    level (required) or up to the top (preferred, unconstrained), and takes the tightest such
    domain; spread takes the emptiest domain of the requested level. Preferred and
    unconstrained requests that no single domain holds use several top-level domains.
    """
    top = len(tree.levels) - 1
    if request.mode is Mode.UNCONSTRAINED:
        target = top if packing is Packing.BINPACK else 0
    else:
        index = tree.level_index(request.level)
        if index is None or not tree.covers(request.level):
            return Miss(request.level, wanted, 0, "", missing_level=True)
        target = index
    caps = _per_level(tree, cap)
    if packing is Packing.BINPACK:
        search = range(top, -1, -1) if request.mode is not Mode.REQUIRED else range(top, target - 1, -1)
        # Finest first, but never finer than the pods need: stop at the first level that fits.
    else:
        search = range(target, -1, -1) if request.mode is not Mode.REQUIRED else range(target, target - 1, -1)
    for depth in search:
        level_caps = caps[depth]
        if len(level_caps) and int(level_caps.max()) >= wanted:
            d = _pick(level_caps, np.arange(len(level_caps)), wanted, packing)
            counts = _descend(tree, caps, depth, np.array([d]), np.array([wanted]), packing)
            return Assignment(counts, tree.levels[depth], tree.names[depth][d])
    if request.mode is not Mode.REQUIRED and int(caps[0].sum()) >= wanted:
        kids, given = _fewest(caps[0], np.arange(len(caps[0])), wanted, packing)
        return Assignment(_descend(tree, caps, 0, kids, given, packing), tree.levels[0], "")
    level_caps = caps[target]
    best = int(level_caps.argmax()) if len(level_caps) else -1
    return Miss(
        tree.levels[target],
        wanted,
        int(level_caps[best]) if best >= 0 else 0,
        tree.names[target][best] if best >= 0 else "",
    )


def best_single_domain(tree: TopologyTree, cap: IntArray, level: str) -> int:
    """The most pods one domain of ``level`` can take (for partial starts)."""
    index = tree.level_index(level)
    if index is None:
        return 0
    caps = _per_level(tree, cap)[index]
    return int(caps.max(initial=0))
