"""The mutable working state of one ``decide`` call: who holds quota where."""

from __future__ import annotations

from dataclasses import dataclass

from kubehpc.sched.admission.model import Workload


@dataclass(slots=True, eq=False)
class Holder:
    """A workload holding quota in a ClusterQueue (admitted before, or in this decision)."""

    wl: Workload
    cq: int
    """The ClusterQueue's node id in the quota tree."""
    usage: list[tuple[int, int]]
    frs: frozenset[int]
    reserved_at: float
    evicted: bool = False
    """Already being evicted (Evicted=True, quota not yet released)."""
    new: bool = False
    """Admitted in this decision."""
    priority: int = 0
    rank: tuple[int, float, str] = (0, 0.0, "")
    """Victim order within a ClusterQueue: lower priority, then admitted most recently, then uid."""

    def __post_init__(self) -> None:
        self.priority = self.wl.priority
        self.rank = (self.wl.priority, -self.reserved_at, self.wl.uid)
