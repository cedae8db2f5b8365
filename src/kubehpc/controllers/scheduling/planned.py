"""The scheduler loop's record of pods whose nodes admission already chose.

Pods created from a template carrying ``kubehpc.io/planned-nodes`` (set by the Kueue job
reconciler when it starts an admitted job) belong to one pod set of one Workload: their group.
This keeps, per group, the plan and how many of its pods are bound or assumed on each node, so
each cycle pins every waiting pod of the group to a node of the plan that still has a slot
(``sched.planned``). A pinned pod the core cannot place there falls back: it is never pinned
again and gets an ordinary placement in its flavor's nodes (the caller records why).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from kubehpc.api import fields as F
from kubehpc.controllers.scheduling.cache import TERMINAL_PHASES, Waiting
from kubehpc.sched.model import PodShape
from kubehpc.sched.planned import (
    PLANNED_NODES_ANNOTATION,
    POD_SET_ANNOTATION,
    WORKLOAD_ANNOTATION,
    Plan,
    assign,
    decode,
    pin,
)

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Group = tuple[str, str, str]  # namespace, workload, pod set


def _plan_of(key: str, pod: dict[str, Any]) -> tuple[Group, Plan] | None:
    meta = F.metadata(pod)
    annotations = F.obj_field(meta, "annotations")
    text = annotations.get(PLANNED_NODES_ANNOTATION)
    if not text:
        return None
    try:
        plan = decode(str(text))
    except ValueError as err:
        log.warning("pod %s: %s; placing it without the plan", key, err)
        return None
    group = (
        str(meta.get("namespace") or "default"),
        str(annotations.get(WORKLOAD_ANNOTATION) or ""),
        str(annotations.get(POD_SET_ANNOTATION) or ""),
    )
    return group, plan


class PlannedNodes:
    def __init__(self) -> None:
        self._plans: dict[str, tuple[Group, Plan]] = {}  # pod key -> its group and plan
        self._on: dict[str, str] = {}  # pod key -> node, for pods of a group bound or assumed
        # Plain dicts, not Counters: Counter's constructor and __missing__ run interpreted
        # around the compiled scheduler, once per pod placed.
        self._placed: dict[Group, dict[str, int]] = {}
        self._fell_back: set[str] = set()
        self._pinned: dict[str, str] = {}  # pinned in the current cycle: pod key -> node
        self._shapes: dict[PodShape, PodShape] = {}
        # (id of a waiting pod's shape, node) -> (that shape, kept alive so the id stays its
        # own; the shape pinned to the node). Waiting pods' shapes are interned, so this is
        # one entry per shape and node: pinning a pod costs a lookup, where building and
        # hashing the pinned shape (its terms, its requests) cost ~20 us.
        self._pinned_shapes: dict[tuple[int, str], tuple[PodShape, PodShape]] = {}

    # --- events ------------------------------------------------------------------------------

    def observe(self, key: str, pod: Obj) -> None:
        """A pod as the watch shows it now."""
        planned = _plan_of(key, pod)
        if planned is None:
            self.forget(key)
            return
        self._plans[key] = planned
        node = F.spec(pod).get("nodeName")
        running = bool(node) and F.status(pod).get("phase") not in TERMINAL_PHASES
        self._place(key, str(node) if running else None)

    def forget(self, key: str) -> None:
        self._place(key, None)
        self._plans.pop(key, None)
        self._fell_back.discard(key)

    def assumed(self, key: str, node: str) -> None:
        if key in self._plans:
            self._place(key, node)

    def unassumed(self, key: str) -> None:
        self._place(key, None)

    def _place(self, key: str, node: str | None) -> None:
        before = self._on.get(key)
        if before == node:
            return
        planned = self._plans.get(key)
        if before is not None:
            del self._on[key]
            if planned is not None:
                was = self._placed[planned[0]]
                was[before] = was.get(before, 0) - 1
        if node is not None and planned is not None:
            self._on[key] = node
            now = self._placed.get(planned[0])
            if now is None:
                now = self._placed[planned[0]] = {}
            now[node] = now.get(node, 0) + 1

    # --- a cycle -----------------------------------------------------------------------------

    def pin(
        self, ready: list[Waiting], placed_elsewhere: Callable[[Obj], bool] = lambda pod: False
    ) -> list[Waiting]:
        """``ready`` with the pods of planned groups narrowed to their node; pods for which
        ``placed_elsewhere`` says so (gang members: the gang step places them) are left as
        they are."""
        self._pinned = {}
        groups: dict[Group, list[Waiting]] = {}
        for w in ready:
            planned = self._plans.get(w.key)
            if planned is not None and w.key not in self._fell_back and not placed_elsewhere(w.obj):
                groups.setdefault(planned[0], []).append(w)
        if not groups:
            return ready
        for group, members in groups.items():
            plan = self._plans[members[0].key][1]
            members.sort(key=lambda w: w.arrival)
            self._pinned.update(assign(plan, self._placed.get(group, {}), [w.key for w in members]))
        out = []
        for w in ready:
            node = self._pinned.get(w.key)
            if node is not None:
                w = w.with_shape(self._pinned_shape(w.shape, node))
            out.append(w)
        return out

    def _pinned_shape(self, shape: PodShape, node: str) -> PodShape:
        """``shape`` pinned to ``node``, one object per equal result (the core takes runs of
        one shape object together)."""
        key = (id(shape), node)
        known = self._pinned_shapes.get(key)
        if known is not None and known[0] is shape:
            return known[1]
        pinned = pin(shape, node)
        pinned = self._shapes.setdefault(pinned, pinned)
        self._pinned_shapes[key] = (shape, pinned)
        return pinned

    def fall_back(self, pending: Iterable[str]) -> dict[str, str]:
        """Of the pods left pending, those that were pinned (pod key -> node): they are placed
        without the plan from now on."""
        out = {key: self._pinned[key] for key in pending if key in self._pinned}
        self._fell_back.update(out)
        return out
