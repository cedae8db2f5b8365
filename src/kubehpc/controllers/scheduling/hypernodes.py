"""Volcano HyperNodes (topology.volcano.sh/v1alpha1) as a topology tree over the scheduler's nodes.

A HyperNode of tier 1 lists nodes (by exact name, regex or labels); one of tier 2 lists tier-1
HyperNodes, and so on. Each node's path is, per tier from the highest down, the HyperNode of
that tier holding it (directly or through the lower tiers); a node missing a tier is outside
the topology, as a node missing a Kueue level label is. Regex members match anywhere in the name
(Go's ``regexp.MatchString``, which Volcano uses).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubehpc.api import fields as F
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.topology import TopologyTree, tier_level

log = logging.getLogger(__name__)
Obj = dict[str, Any]


def _selector_matches(selector: Obj, labels: Mapping[str, str]) -> bool:
    for key, value in F.obj_field(selector, "matchLabels").items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key"), expr.get("operator"), list(expr.get("values") or ())
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _matches(member: Obj, name: str, labels: Mapping[str, str]) -> bool:
    selector = F.obj_field(member, "selector")
    if selector.get("exactMatch"):
        return bool(selector["exactMatch"].get("name") == name)
    if selector.get("regexMatch"):
        try:
            return re.search(str(selector["regexMatch"].get("pattern", "")), name) is not None
        except re.error:
            return False
    if selector.get("labelMatch") is not None:
        return _selector_matches(selector["labelMatch"], labels)
    return False


@dataclass(frozen=True)
class HyperNodeTopology:
    tree: TopologyTree
    tiers: tuple[int, ...]
    tier_names: Mapping[str, int]
    """``spec.tierName`` -> tier, for ``networkTopology.highestTierName``."""


def hypernode_tree(table: NodeTable, hypernodes: Sequence[Obj]) -> HyperNodeTopology | None:
    """The tree of ``hypernodes`` over ``table``'s nodes, or None when there is none."""
    tiers: dict[str, int] = {}
    tier_names: dict[str, int] = {}
    members: dict[str, list[Obj]] = {}
    for hn in hypernodes:
        name = str(F.metadata(hn).get("name", ""))
        spec = F.spec(hn)
        try:
            tiers[name] = int(spec["tier"])
        except (KeyError, TypeError, ValueError):
            log.warning("HyperNode %s: no usable tier", name)
            continue
        members[name] = list(spec.get("members") or ())
        if spec.get("tierName"):
            tier_names[str(spec["tierName"])] = tiers[name]
    if not tiers:
        return None
    # The HyperNode directly above each node and each HyperNode (the lowest-tier one wins).
    above: dict[tuple[str, str], str] = {}
    by_tier = sorted(tiers, key=lambda n: (tiers[n], n))
    for parent in by_tier:
        for member in members[parent]:
            if member.get("type") == "HyperNode":
                for other in by_tier:
                    if tiers[other] < tiers[parent] and _matches(member, other, {}):
                        above.setdefault(("HyperNode", other), parent)
            else:
                for i, node in enumerate(table.names):
                    if _matches(member, node, table.labels[i]):
                        above.setdefault(("Node", node), parent)
    levels = tuple(sorted(set(tiers.values()), reverse=True))
    paths: dict[str, tuple[str, ...]] = {}
    for node in table.names:
        chain: dict[int, str] = {}
        current = above.get(("Node", node))
        while current is not None and tiers[current] not in chain:
            chain[tiers[current]] = current
            current = above.get(("HyperNode", current))
        if all(t in chain for t in levels):
            paths[node] = tuple(chain[t] for t in levels)
    tree = TopologyTree.from_paths(table, tuple(tier_level(t) for t in levels), paths)
    return HyperNodeTopology(tree, levels, tier_names)
