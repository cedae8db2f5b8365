"""The placement check after quota: the pods of an admitted workload must fit on the nodes of
their flavor, using the node-placement core (``sched.placement``).

A pod set's pods go to nodes carrying the flavor's nodeLabels, tolerating its taints through
the flavor's tolerations, and matching the pod set's own selectors and affinity — what the
pods will look like once the job is unsuspended with the flavor's nodeSelector and tolerations
injected. Placement is a transaction per workload: a pod set that does not fit gives back what
the pod sets before it took.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from kubehpc.sched.admission.flavors import Assignment
from kubehpc.sched.admission.model import Flavor, Workload
from kubehpc.sched.model import PodShape, SchedulerConfig
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.placement import Usage, charge, place
from kubehpc.sched.reasons import explain, message


@dataclass(frozen=True, slots=True)
class NoRoom:
    pod_set: str
    flavor: str
    missing: int
    message: str


class NodePlacer:
    __slots__ = ("_shapes", "config", "flavors", "table", "usage")

    def __init__(self, table: NodeTable, config: SchedulerConfig, flavors: dict[str, Flavor]) -> None:
        self.table = table
        self.config = config
        self.flavors = flavors
        self.usage = Usage.of(table)
        self._shapes: dict[tuple[int, tuple[str, ...]], PodShape] = {}

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
            ids = place(self.table, self.usage, shape, result.count, self.config)
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
            counts = Counter(names[i] for i in ids.tolist())
            out.append(tuple(sorted(counts.items())))
        return out

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
