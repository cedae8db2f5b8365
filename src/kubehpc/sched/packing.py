"""Fragmentation: free capacity no waiting shape can use.

A GPU is *stranded* when it is free but sits on a node where no pending pod shape fits even
once (its free GPUs, CPUs or memory fall short of every shape's request). Binpack keeps this
low by filling nodes before opening new ones; spread raises it by leaving a little free on many.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kubehpc.sched.model import PodShape
from kubehpc.sched.nodetable import IntArray, NodeTable
from kubehpc.sched.placement import capacity, request_vector, static_fit


@dataclass(frozen=True)
class Fragmentation:
    resource: str
    total: int
    free: int
    stranded: int
    """Free on nodes where none of the shapes fits."""

    @property
    def fraction(self) -> float:
        """Stranded as a share of what is free (0 when nothing is free)."""
        return self.stranded / self.free if self.free else 0.0


def fragmentation(
    table: NodeTable, used: IntArray, shapes: Sequence[PodShape], resource: str = "nvidia.com/gpu"
) -> Fragmentation:
    col = table.resource_index.get(resource)
    if col is None:
        return Fragmentation(resource, 0, 0, 0)
    free = np.maximum(table.allocatable[:, col] - used[:, col], 0)
    usable = np.zeros(len(table), dtype=np.bool_)
    for shape in set(shapes):
        rows = np.flatnonzero(static_fit(table, shape) & ~usable)
        if len(rows):
            usable[rows] = capacity(table, used, rows, request_vector(table, shape)) > 0
    return Fragmentation(
        resource,
        int(table.allocatable[:, col].sum()),
        int(free.sum()),
        int(free[~usable].sum()),
    )
