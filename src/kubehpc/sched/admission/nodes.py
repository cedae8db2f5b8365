"""The placement check after quota: the pods of an admitted workload must fit on the nodes of
their flavor, using the node-placement core (``sched.placement``).

A pod set's pods go to nodes carrying the flavor's nodeLabels, tolerating its taints through
the flavor's tolerations, and matching the pod set's own selectors and affinity — what the
pods will look like once the job is unsuspended with the flavor's nodeSelector and tolerations
injected. Placement is a transaction per workload: a pod set that does not fit gives back what
the pod sets before it took.

Workloads of one shape often come in runs (the Jobs of one template, one queue). Placing their
pods one call at a time costs a full scoring pass of every node per pod, where one call for
``k`` pods costs about as much as a few single ones (``sched.placement``: ``place`` takes the
nodes placing the pods one by one would take). So the placer looks ahead: while the same shape
repeats, it asks for twice as many pods each time (up to ``_MAX_LOOKAHEAD``) and hands the
nodes out in order. The nodes handed out are the ones single placements would have chosen, as
long as nothing but those pods was charged in between, which is why placing another shape
(or the same one afresh) first drops what was looked ahead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from kubehpc.sched.admission.flavors import Assignment
from kubehpc.sched.admission.model import Flavor, Workload
from kubehpc.sched.model import PodShape, SchedulerConfig
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.placement import Usage, charge, place
from kubehpc.sched.reasons import explain, message

# Pods placed in one call at most while a shape repeats (place(256) costs about ten place(1)).
_MAX_LOOKAHEAD = 256


@dataclass(frozen=True, slots=True)
class NoRoom:
    pod_set: str
    flavor: str
    missing: int
    message: str


class NodePlacer:
    __slots__ = (
        "_ahead",
        "_ahead_shape",
        "_last_shape",
        "_lookahead",
        "_shapes",
        "config",
        "flavors",
        "table",
        "usage",
    )

    def __init__(self, table: NodeTable, config: SchedulerConfig, flavors: dict[str, Flavor]) -> None:
        self.table = table
        self.config = config
        self.flavors = flavors
        self.usage = Usage.of(table)
        self._shapes: dict[tuple[int, tuple[str, ...]], PodShape] = {}
        # Nodes placed ahead for ``_ahead_shape``, in the order its next pods take them.
        self._ahead: list[int] = []
        self._ahead_shape: PodShape | None = None
        self._last_shape: PodShape | None = None
        self._lookahead = 1

    def shape_in(self, shape: PodShape, flavor_names: tuple[str, ...]) -> PodShape:
        """The pod as it will run on these flavors: their labels and tolerations injected."""
        key = (id(shape), flavor_names)
        got = self._shapes.get(key)
        if got is None:
            selector = dict(shape.node_selector)
            tolerations = list(shape.tolerations)
            for name in flavor_names:
                flavor = self.flavors.get(name)
                if flavor is None:
                    continue
                selector.update(flavor.node_labels)
                tolerations.extend(t for t in flavor.tolerations if t not in tolerations)
            got = self._shapes[key] = replace(
                shape, node_selector=tuple(sorted(selector.items())), tolerations=tuple(tolerations)
            )
        return got

    def place(self, wl: Workload, a: Assignment) -> list[tuple[tuple[str, int], ...]] | NoRoom:
        """Nodes per pod set (node, pods), charged; or why the workload does not fit (nothing charged)."""
        done: list[tuple[PodShape, np.ndarray]] = []
        out: list[tuple[tuple[str, int], ...]] = []
        shapes = {ps.name: ps.shape for ps in wl.pod_sets}
        for result in a.pod_sets:
            if result.count == 0:
                out.append(())
                continue
            flavor_names = tuple(sorted(set(result.flavors.values())))
            shape = self.shape_in(shapes[result.name], flavor_names)
            ids = self._nodes_for(shape, result.count)
            if len(ids) < result.count:
                if len(ids):
                    charge(self.table, self.usage, shape, ids)
                text = message(explain(self.table, self.usage.used, shape))
                if len(ids):
                    charge(self.table, self.usage, shape, ids, sign=-1)
                for s, placed in done:
                    charge(self.table, self.usage, s, placed, sign=-1)
                return NoRoom(result.name, ",".join(flavor_names), result.count - len(ids), text)
            charge(self.table, self.usage, shape, ids)
            done.append((shape, ids))
            names = self.table.names
            counts: dict[str, int] = {}  # not a Counter: its constructor runs interpreted
            for i in ids.tolist():
                counts[names[i]] = counts.get(names[i], 0) + 1
            out.append(tuple(sorted(counts.items())))
        return out

    def _nodes_for(self, shape: PodShape, count: int) -> np.ndarray:
        """Nodes for ``count`` pods of ``shape`` (fewer when they do not all fit), from the
        nodes placed ahead when they are this shape's; not charged."""
        ahead = self._ahead
        if self._ahead_shape is shape and len(ahead) >= count:
            taken = ahead[:count]
            del ahead[:count]
            return np.array(taken, dtype=np.int64)
        self._drop_ahead()
        self._lookahead = min(2 * self._lookahead, _MAX_LOOKAHEAD) if shape is self._last_shape else 1
        self._last_shape = shape
        ids = place(self.table, self.usage, shape, max(count, self._lookahead), self.config)
        if len(ids) > count:
            self._ahead = ids[count:].tolist()
            self._ahead_shape = shape
        return ids[:count]

    def _drop_ahead(self) -> None:
        self._ahead = []
        self._ahead_shape = None

    def could_ever_fit(self, wl: Workload, a: Assignment) -> bool:
        """Some node of the flavor could hold one pod of every pod set if it were empty."""
        shapes = {ps.name: ps.shape for ps in wl.pod_sets}
        empty = np.zeros_like(self.usage.used)
        for result in a.pod_sets:
            if result.count == 0:
                continue
            shape = self.shape_in(shapes[result.name], tuple(sorted(set(result.flavors.values()))))
            if explain(self.table, empty, shape).never_fits:
                return False
        return True
