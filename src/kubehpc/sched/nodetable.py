"""Node state as NumPy arrays indexed by an integer node id.

Resources are an ``[nodes x resources]`` int64 matrix of allocatable and one of used amounts;
labels become one integer column per label key (a code per distinct value, -1 when absent);
taints become an ``[nodes x max taints]`` matrix of taint ids. Every filter and score is then a
few array operations over all nodes at once, and a predicate (a node selector, a set of
tolerations) is evaluated once per distinct value and cached as a boolean mask.

A table is a value: :meth:`NodeTable.with_changes` returns a new table that copies the arrays
(a 5,000-node matrix is a few hundred kilobytes) and rewrites only the changed rows. Cached
masks survive a change that leaves labels, taints and cordons alone — the common case, where
only usage moved because pods were bound or finished.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kubehpc.sched.model import NodeInfo, Taint

IntArray = npt.NDArray[np.int64]
MEMO_LIMIT = 1024
BoolArray = npt.NDArray[np.bool_]


class LabelColumn:
    """One label key across all nodes: ``codes[i]`` indexes ``values`` (-1: node lacks the key)."""

    __slots__ = ("_numbers", "codes", "index", "values")

    def __init__(self, codes: npt.NDArray[np.int32], values: list[str]) -> None:
        self.codes = codes
        self.values = values
        self.index = {v: i for i, v in enumerate(values)}
        self._numbers: tuple[IntArray, BoolArray] | None = None

    def numbers(self) -> tuple[IntArray, BoolArray]:
        """Each node's value as an integer, and whether it is one (for Gt and Lt)."""
        if self._numbers is None:
            parsed = np.zeros(len(self.values) + 1, dtype=np.int64)
            valid = np.zeros(len(self.values) + 1, dtype=np.bool_)
            for i, v in enumerate(self.values):
                try:
                    parsed[i] = int(v)
                    valid[i] = True
                except ValueError:
                    pass
            # code -1 picks the last, always invalid, entry
            self._numbers = (parsed[self.codes], valid[self.codes])
        return self._numbers


def _resources_of(node: NodeInfo) -> set[str]:
    return {*node.allocatable, *node.used, *(node.scored_used or {})}


def _fill_row(
    node: NodeInfo,
    row: int,
    rindex: Mapping[str, int],
    allocatable: IntArray,
    used: IntArray,
    scored: IntArray,
) -> None:
    allocatable[row] = 0
    used[row] = 0
    scored[row] = 0
    for r, amount in node.allocatable.items():
        allocatable[row, rindex[r]] = amount
    for r, amount in node.used.items():
        used[row, rindex[r]] = amount
    for r, amount in (node.used if node.scored_used is None else node.scored_used).items():
        scored[row, rindex[r]] = amount


class NodeTable:
    """All nodes of a snapshot. Treat as immutable: derive new tables with ``with_changes``."""

    __slots__ = (
        "_label_columns",
        "_memo",
        "allocatable",
        "index",
        "labels",
        "names",
        "resource_index",
        "resources",
        "scored",
        "taint_ids",
        "taint_matrix",
        "taints",
        "taints_of",
        "unschedulable",
        "used",
    )

    def __init__(
        self,
        names: list[str],
        resources: list[str],
        allocatable: IntArray,
        used: IntArray,
        scored: IntArray,
        labels: list[Mapping[str, str]],
        taints_of: list[tuple[Taint, ...]],
        unschedulable: BoolArray,
    ) -> None:
        self.names = names
        self.index = {name: i for i, name in enumerate(names)}
        self.resources = resources
        self.resource_index = {r: i for i, r in enumerate(resources)}
        self.allocatable = allocatable
        self.used = used
        self.scored = scored
        self.labels = labels
        self.taints_of = taints_of
        self.unschedulable = unschedulable
        self.taints: list[Taint] = []
        self.taint_ids: dict[Taint, int] = {}
        width = max((len(t) for t in taints_of), default=0)
        self.taint_matrix = np.full((len(names), width), -1, dtype=np.int32)
        for row, node_taints in enumerate(taints_of):
            for col, taint in enumerate(node_taints):
                tid = self.taint_ids.get(taint)
                if tid is None:
                    tid = self.taint_ids[taint] = len(self.taints)
                    self.taints.append(taint)
                self.taint_matrix[row, col] = tid
        self._label_columns: dict[str, LabelColumn] = {}
        self._memo: dict[Any, Any] = {}

    # ----------------------------------------------------------------- building

    @classmethod
    def build(cls, nodes: Sequence[NodeInfo]) -> NodeTable:
        """A table of ``nodes``; node ids follow the order given."""
        names = [n.name for n in nodes]
        if len(set(names)) != len(names):
            raise ValueError("node names must be unique")
        resources = sorted({r for n in nodes for r in _resources_of(n)})
        rindex = {r: i for i, r in enumerate(resources)}
        # Column-major: filters read one resource across all nodes at a time.
        allocatable = np.zeros((len(nodes), len(resources)), dtype=np.int64, order="F")
        used = np.zeros_like(allocatable)
        scored = np.zeros_like(allocatable)
        for row, node in enumerate(nodes):
            _fill_row(node, row, rindex, allocatable, used, scored)
        return cls(
            names,
            resources,
            allocatable,
            used,
            scored,
            [dict(n.labels) for n in nodes],
            [tuple(n.taints) for n in nodes],
            np.array([n.unschedulable for n in nodes], dtype=np.bool_),
        )

    def with_changes(self, upserts: Iterable[NodeInfo] = (), removals: Iterable[str] = ()) -> NodeTable:
        """A new table with ``upserts`` added or replaced and ``removals`` gone.

        Rows of unchanged nodes are copied as they are; node ids of surviving nodes keep their
        order, new nodes are appended. Cached masks are kept when no label, taint or cordon
        changed and no node came or went.
        """
        upserts = list(upserts)
        removed = {name for name in removals if name in self.index}
        new_names = [n.name for n in upserts if n.name not in self.index]
        resources = list(self.resources)
        for node in upserts:
            for r in _resources_of(node):
                if r not in self.resource_index and r not in resources:
                    resources.append(r)
        keep = [i for i, name in enumerate(self.names) if name not in removed]
        names = [self.names[i] for i in keep] + new_names
        rows = len(names)
        allocatable = np.zeros((rows, len(resources)), dtype=np.int64, order="F")
        used = np.zeros_like(allocatable)
        scored = np.zeros_like(allocatable)
        width = len(self.resources)
        allocatable[: len(keep), :width] = self.allocatable[keep]
        used[: len(keep), :width] = self.used[keep]
        scored[: len(keep), :width] = self.scored[keep]
        labels = [self.labels[i] for i in keep] + [{} for _ in new_names]
        taints_of = [self.taints_of[i] for i in keep] + [() for _ in new_names]
        unschedulable = np.zeros(rows, dtype=np.bool_)
        unschedulable[: len(keep)] = self.unschedulable[keep]
        position = {name: i for i, name in enumerate(names)}
        rindex = {r: i for i, r in enumerate(resources)}
        predicates_changed = bool(removed or new_names) or len(resources) != len(self.resources)
        for node in upserts:
            row = position[node.name]
            _fill_row(node, row, rindex, allocatable, used, scored)
            taints = tuple(node.taints)
            if (
                labels[row] != node.labels
                or taints_of[row] != taints
                or unschedulable[row] != node.unschedulable
            ):
                predicates_changed = True
            labels[row] = dict(node.labels)
            taints_of[row] = taints
            unschedulable[row] = node.unschedulable
        table = NodeTable(names, resources, allocatable, used, scored, labels, taints_of, unschedulable)
        if not predicates_changed:
            table._label_columns = self._label_columns
            table._memo = self._memo
        return table

    # ----------------------------------------------------------------- queries

    def __len__(self) -> int:
        return len(self.names)

    def node_info(self, i: int) -> NodeInfo:
        return NodeInfo(
            name=self.names[i],
            allocatable={r: int(self.allocatable[i, j]) for j, r in enumerate(self.resources)},
            used={r: int(self.used[i, j]) for j, r in enumerate(self.resources) if self.used[i, j]},
            scored_used={
                r: int(self.scored[i, j]) for j, r in enumerate(self.resources) if self.scored[i, j]
            },
            labels=self.labels[i],
            taints=self.taints_of[i],
            unschedulable=bool(self.unschedulable[i]),
        )

    def label_column(self, key: str) -> LabelColumn:
        column = self._label_columns.get(key)
        if column is None:
            values: list[str] = []
            seen: dict[str, int] = {}
            codes = np.full(len(self.names), -1, dtype=np.int32)
            for row, labels in enumerate(self.labels):
                value = labels.get(key)
                if value is not None:
                    code = seen.get(value)
                    if code is None:
                        code = seen[value] = len(values)
                        values.append(value)
                    codes[row] = code
            column = self._label_columns[key] = LabelColumn(codes, values)
        return column

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """A value derived only from labels, taints, names, cordons and the resource columns,
        computed once per table lineage (see ``with_changes``). The oldest entries go first
        once there are ``MEMO_LIMIT``, so a long-lived scheduler seeing ever new pod shapes
        keeps a bounded cache."""
        try:
            return self._memo[key]
        except KeyError:
            if len(self._memo) >= MEMO_LIMIT:
                for old in list(self._memo)[: MEMO_LIMIT // 4]:
                    del self._memo[old]
            value = self._memo[key] = compute()
            return value
