"""Volcano's queue rules in the pure core: deserved shares by weight (proportion), which
PodGroups a queue admits, and which gangs are reclaimed for a queue below its share."""

from kubehpc.sched.volcano.enqueue import Decisions, GroupInfo, Held, QueueFigures, Reclaim, Snapshot, decide
from kubehpc.sched.volcano.proportion import ROOT, QueueInfo, deserved_shares, split, with_hierarchy

__all__ = [
    "ROOT",
    "Decisions",
    "GroupInfo",
    "Held",
    "QueueFigures",
    "QueueInfo",
    "Reclaim",
    "Snapshot",
    "decide",
    "deserved_shares",
    "split",
    "with_hierarchy",
]
