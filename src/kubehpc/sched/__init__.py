"""The pure scheduling core: ``decide(snapshot, now) -> Decisions`` (no I/O, clock or randomness)."""

from kubehpc.sched.decide import Binding, Decisions, Pending, Snapshot, decide, queue_key
from kubehpc.sched.devices import DeviceState
from kubehpc.sched.model import (
    NodeInfo,
    NodeSelectorTerm,
    PodSet,
    PodShape,
    PreferredTerm,
    Requirement,
    SchedulerConfig,
    Scoring,
    Taint,
    Toleration,
)
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.reasons import NodeRejections

__all__ = [
    "Binding",
    "Decisions",
    "DeviceState",
    "NodeInfo",
    "NodeRejections",
    "NodeSelectorTerm",
    "NodeTable",
    "Pending",
    "PodSet",
    "PodShape",
    "PreferredTerm",
    "Requirement",
    "SchedulerConfig",
    "Scoring",
    "Snapshot",
    "Taint",
    "Toleration",
    "decide",
    "queue_key",
]
