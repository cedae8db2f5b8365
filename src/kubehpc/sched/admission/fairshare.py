"""Dominant resource share (Kueue's fair sharing).

A ClusterQueue's share is, over the resources it borrows (usage beyond its subtree quota,
summed over flavors per resource name), the largest ratio of borrowed amount to what its
parent could lend of that resource, in per mille, divided by its fair-sharing weight. A node
that borrows nothing has share 0; a weight of 0 makes any borrowing infinitely unfair.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubehpc.sched.admission.quota import QuotaTree

UNFAIR = 1 << 62


class Shares:
    """Dominant resource shares over one quota tree; lendable amounts cached per parent."""

    __slots__ = ("_lendable", "tree")

    def __init__(self, tree: QuotaTree) -> None:
        self.tree = tree
        self._lendable: dict[int, dict[str, int]] = {}

    def lendable(self, parent: int) -> dict[str, int]:
        got = self._lendable.get(parent)
        if got is None:
            got = {}
            for fr, (_, resource) in enumerate(self.tree.frs):
                got[resource] = got.get(resource, 0) + self.tree.potential(parent, fr)
            self._lendable[parent] = got
        return got

    def share(self, node: int, extra: Iterable[tuple[int, int]] = (), sign: int = 1) -> int:
        """The node's share with ``extra`` usage added (``sign`` 1) or taken away (-1)."""
        tree = self.tree
        parent = tree.parent[node]
        if parent < 0:
            return 0
        weight = tree.weight[node]
        usage, quota = tree.usage[node], tree.subtree[node]
        delta = dict(extra)
        borrowed: dict[str, int] = {}
        frs = tree.frs
        for fr in tree.defined[node]:
            resource = frs[fr][1]
            b = usage[fr] + sign * delta.get(fr, 0) - quota[fr]
            if b > 0:
                borrowed[resource] = borrowed.get(resource, 0) + b
        if not borrowed:
            return 0
        if weight <= 0:
            return UNFAIR
        lendable = self.lendable(parent)
        dominant = 0
        for resource, b in borrowed.items():
            lr = lendable.get(resource, 0)
            if lr > 0:
                dominant = max(dominant, b * 1000 // lr)
        return int(dominant * 1000 // max(1, round(weight * 1000)))
