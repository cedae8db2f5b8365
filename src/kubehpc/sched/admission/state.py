"""The mutable working state of one ``decide`` call: who holds quota where."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    priority: int = field(init=False)
    rank: tuple[int, float, str] = field(init=False)
    """Victim order within a ClusterQueue: lower priority, then admitted most recently, then uid."""

    # Written out: mypyc compiles it to a native constructor, where the one @dataclass
    # generates runs interpreted (one per workload holding quota per decision).
    def __init__(
        self,
        wl: Workload,
        cq: int,
        usage: list[tuple[int, int]],
        frs: frozenset[int],
        reserved_at: float,
        evicted: bool = False,
        new: bool = False,
    ) -> None:
        self.wl = wl
        self.cq = cq
        self.usage = usage
        self.frs = frs
        self.reserved_at = reserved_at
        self.evicted = evicted
        self.new = new
        self.priority = wl.priority
        self.rank = (wl.priority, -reserved_at, wl.uid)
