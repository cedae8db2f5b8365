"""Quota and usage through the cohort tree, as Kueue's hierarchy keeps them (pkg/cache).

Every ClusterQueue and Cohort is a node. Per (flavor, resource) a node has:

* ``nominal``: its own quota (a Cohort's own resourceGroups, a ClusterQueue's quotas);
* ``subtree``: what the subtree brings to the parent's pool: own nominal plus, per child, the
  child's subtree minus what the child keeps for itself;
* ``guaranteed``: what it keeps for itself, never lent: ``subtree - lendingLimit`` (0 without
  a lending limit);
* ``usage``: what its workloads hold; a parent's usage counts only what children take beyond
  their guaranteed part.

``available`` is what a node may still take: its unused guaranteed part plus what its parent
has available, capped by the node's ``borrowingLimit``. ``potential`` is the same with the
whole tree empty: more than that never fits.

Usage is kept in flat Python lists indexed by integer ids: the hot path does a few list reads
per resource, which beats NumPy scalars at this size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubehpc.sched.admission.model import ClusterQueue, Cohort, FlavorResource, ResourceGroup

INFINITE = 1 << 62


class QuotaTree:
    """Nodes 0..len(cluster_queues)-1 are the ClusterQueues (sorted by name), cohorts follow."""

    __slots__ = (
        "_potential",
        "borrow_limit",
        "children",
        "cohort_ids",
        "cq_ids",
        "defined",
        "fr_index",
        "frs",
        "guaranteed",
        "lend_limit",
        "names",
        "nominal",
        "parent",
        "root",
        "subtree",
        "usage",
        "weight",
    )

    def __init__(self, cluster_queues: Mapping[str, ClusterQueue], cohorts: Mapping[str, Cohort]) -> None:
        cq_names = sorted(cluster_queues)
        cohort_names = sorted(cohorts)
        self.names: list[str] = cq_names + cohort_names
        self.cq_ids = {name: i for i, name in enumerate(cq_names)}
        self.cohort_ids = {name: len(cq_names) + i for i, name in enumerate(cohort_names)}
        n = len(self.names)
        groups: list[tuple[ResourceGroup, ...]] = [cluster_queues[c].resource_groups for c in cq_names]
        groups += [cohorts[c].resource_groups for c in cohort_names]
        self.fr_index: dict[FlavorResource, int] = {}
        self.frs: list[FlavorResource] = []
        for node_groups in groups:
            for group in node_groups:
                for fq in group.flavors:
                    for resource, _ in fq.resources:
                        self.fr_id((fq.flavor, resource))
        self.parent = [-1] * n
        self.weight = [1.0] * n
        for name, cq in cluster_queues.items():
            i = self.cq_ids[name]
            self.weight[i] = cq.fair_weight
            if cq.cohort is not None and cq.cohort in self.cohort_ids:
                self.parent[i] = self.cohort_ids[cq.cohort]
        for name, cohort in cohorts.items():
            i = self.cohort_ids[name]
            self.weight[i] = cohort.fair_weight
            if cohort.parent is not None and cohort.parent in self.cohort_ids:
                self.parent[i] = self.cohort_ids[cohort.parent]
        self._break_cycles()
        self.children: list[list[int]] = [[] for _ in range(n)]
        for i, p in enumerate(self.parent):
            if p >= 0:
                self.children[p].append(i)
        width = len(self.frs)
        self.defined: list[list[int]] = [[] for _ in range(n)]
        """Per node, the flavor-resources its own or its children's quotas name."""
        self.nominal = [[0] * width for _ in range(n)]
        self.borrow_limit: list[list[int | None]] = [[None] * width for _ in range(n)]
        self.lend_limit: list[list[int | None]] = [[None] * width for _ in range(n)]
        for i, node_groups in enumerate(groups):
            for group in node_groups:
                for fq in group.flavors:
                    for resource, quota in fq.resources:
                        fr = self.fr_index[(fq.flavor, resource)]
                        self.nominal[i][fr] = quota.nominal
                        self.borrow_limit[i][fr] = quota.borrowing_limit
                        self.lend_limit[i][fr] = quota.lending_limit
                        self.defined[i].append(fr)
        self.subtree = [[0] * width for _ in range(n)]
        self.guaranteed = [[0] * width for _ in range(n)]
        self.usage = [[0] * width for _ in range(n)]
        self.root = list(range(n))
        self._potential: dict[int, int] = {}
        for i in self._bottom_up():
            self.defined[i] = sorted(
                {*self.defined[i], *(fr for c in self.children[i] for fr in self.defined[c])}
            )
            row = self.subtree[i]
            row[:] = self.nominal[i]
            for child in self.children[i]:
                child_sub, child_g = self.subtree[child], self.guaranteed[child]
                for fr in range(width):
                    row[fr] += child_sub[fr] - child_g[fr]
            lend = self.lend_limit[i]
            self.guaranteed[i] = [
                0 if lend[fr] is None else max(0, row[fr] - lend[fr])  # type: ignore[operator]
                for fr in range(width)
            ]
        for i in range(n):
            r = i
            while self.parent[r] >= 0:
                r = self.parent[r]
            self.root[i] = r

    def fr_id(self, fr: FlavorResource) -> int:
        i = self.fr_index.get(fr)
        if i is None:
            i = self.fr_index[fr] = len(self.frs)
            self.frs.append(fr)
        return i

    def _break_cycles(self) -> None:
        # ClusterQueues under a cohort cycle are inactive (build.py); cut the loop so that
        # walks up the tree end.
        for i in range(len(self.parent)):
            seen = {i}
            j = self.parent[i]
            while j >= 0:
                if j in seen:
                    self.parent[j] = -1
                    break
                seen.add(j)
                j = self.parent[j]

    def _bottom_up(self) -> list[int]:
        order: list[int] = []
        done = [False] * len(self.parent)

        def visit(i: int) -> None:
            if done[i]:
                return
            done[i] = True
            for c in self.children[i]:
                visit(c)
            order.append(i)

        for i in range(len(self.parent)):
            visit(i)
        return order

    # ----------------------------------------------------------------- queries

    def available(self, node: int, fr: int) -> int:
        """What ``node`` may still take of ``fr`` (never below 0)."""
        value = self._available(node, fr)
        return value if value > 0 else 0

    def _available(self, node: int, fr: int) -> int:
        p = self.parent[node]
        if p < 0:
            return self.subtree[node][fr] - self.usage[node][fr]
        g = self.guaranteed[node][fr]
        u = self.usage[node][fr]
        local = g - u if g > u else 0
        from_parent = self._available(p, fr)
        limit = self.borrow_limit[node][fr]
        if limit is not None:
            stored = self.subtree[node][fr] - g
            used_in_parent = u - g if u > g else 0
            cap = stored - used_in_parent + limit
            if cap < from_parent:
                from_parent = cap
        return local + from_parent

    def potential(self, node: int, fr: int) -> int:
        """What ``node`` could take of ``fr`` with every node of the tree empty."""
        key = node * len(self.frs) + fr
        got = self._potential.get(key)
        if got is None:
            got = self._potential[key] = self._potential_of(node, fr)
        return got

    def _potential_of(self, node: int, fr: int) -> int:
        p = self.parent[node]
        if p < 0:
            return self.subtree[node][fr]
        value = self.guaranteed[node][fr] + self.potential(p, fr)
        limit = self.borrow_limit[node][fr]
        if limit is not None:
            value = min(value, self.subtree[node][fr] + limit)
        return value

    def borrowing_with(self, node: int, fr: int, amount: int) -> bool:
        """Taking ``amount`` more would put ``node`` over its nominal quota (and it has a parent
        to borrow from)."""
        return self.parent[node] >= 0 and self.usage[node][fr] + amount > self.subtree[node][fr]

    def is_borrowing(self, node: int, frs: Iterable[int]) -> bool:
        u, s = self.usage[node], self.subtree[node]
        return any(u[fr] > s[fr] for fr in frs)

    def under_nominal(self, node: int, frs: Iterable[int]) -> bool:
        u, q = self.usage[node], self.nominal[node]
        return all(u[fr] < q[fr] for fr in frs)

    def fits(self, node: int, usage: Iterable[tuple[int, int]], allow_borrowing: bool = True) -> bool:
        for fr, amount in usage:
            if not allow_borrowing and self.borrowing_with(node, fr, amount):
                return False
            if amount > self._available(node, fr):
                return False
        return True

    # ----------------------------------------------------------------- changes

    def add(self, node: int, usage: Iterable[tuple[int, int]], sign: int = 1) -> None:
        """Charge (``sign`` 1) or release (-1) ``usage`` on ``node`` and up the tree."""
        for fr, amount in usage:
            self._add(node, fr, sign * amount)

    def _add(self, node: int, fr: int, delta: int) -> None:
        while True:
            row = self.usage[node]
            old = row[fr]
            new = old + delta
            row[fr] = new
            p = self.parent[node]
            if p < 0:
                return
            g = self.guaranteed[node][fr]
            # Only what goes beyond the guaranteed part is held in the parent's pool.
            delta = (new - g if new > g else 0) - (old - g if old > g else 0)
            if delta == 0:
                return
            node = p
