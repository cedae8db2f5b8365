"""Preemption for gangs in the live loop: evict whole lower-priority gangs so a waiting gang fits.

The choice is the pure core's (:func:`kubehpc.sched.gang_preemption.plan_preemptions`): the
fewest lower-priority gangs (a pod outside any gang is a gang of one), every pod of each. This
module lists what runs, deletes the victims' pods through the Client — as kube-scheduler's
preemption does; their controllers requeue the work (a Job makes a new pod, a Volcano Job
applies its PodEvicted policy) — and remembers, per preemptor, the victims still terminating, so
the next cycle waits for them instead of choosing more.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import ApiError, NotFound
from kubehpc.controllers.scheduling.cache import pod_key
from kubehpc.sched.gang import Gang, GangDecisions, GangOptions
from kubehpc.sched.gang_preemption import RunningGang, RunningPod, plan_preemptions
from kubehpc.sched.model import SchedulerConfig
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.podspec import shape_of
from kubehpc.store.client import Client

log = logging.getLogger(__name__)
Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")


def _epoch(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0
    except ValueError:
        return 0.0


def running_gangs(
    pods: Iterable[dict[str, Any]], group: Any, priority: Callable[[dict[str, Any]], int]
) -> list[RunningGang]:
    """Bound, unfinished, not deleting pods as gangs: ``group(pod)`` names a pod's gang (or None:
    the pod alone). A gang's priority is its highest pod's, its age its oldest pod's."""
    members: dict[str, list[tuple[dict[str, Any], RunningPod]]] = {}
    for pod in pods:
        spec = F.spec(pod)
        meta = F.metadata(pod)
        if not spec.get("nodeName") or meta.get("deletionTimestamp"):
            continue
        if F.status(pod).get("phase") in TERMINAL:
            continue
        try:
            shape = shape_of(spec)
        except (ValueError, TypeError):
            continue
        ref = group(pod)
        uid = f"{ref.kind}:{ref}" if ref is not None else f"pod:{pod_key(pod)}"
        members.setdefault(uid, []).append((pod, RunningPod(pod_key(pod), str(spec["nodeName"]), shape)))
    out = []
    for uid, items in sorted(members.items()):
        top = max(priority(p) for p, _ in items)
        created = min(_epoch(str(F.metadata(p).get("creationTimestamp", ""))) for p, _ in items)
        out.append(RunningGang(uid, top, tuple(r for _, r in items), created))
    return out


class GangEvictor:
    def __init__(self, client: Client) -> None:
        self.client = client
        self._terminating: dict[str, set[str]] = {}
        """Preemptor gang -> victim pod keys not yet gone."""

    def _exists(self, key: str) -> bool:
        namespace, name = key.split("/", 1)
        try:
            self.client.get("v1", "Pod", name, namespace)
        except NotFound:
            return False
        except ApiError:
            return True
        return True

    def preempt(
        self,
        table: NodeTable,
        decisions: GangDecisions,
        gangs: list[Gang],
        group: Any,
        priority: Callable[[dict[str, Any]], int],
        config: SchedulerConfig,
        options: GangOptions,
    ) -> dict[str, str]:
        """Evict for the gangs ``decisions`` left waiting for room; the note to add to each
        preemptor's pending message."""
        notes: dict[str, str] = {}
        waiting = {p.gang for p in decisions.pending if not p.held}
        for gang in list(self._terminating):
            if gang not in waiting:
                del self._terminating[gang]  # placed, or gone: nothing to wait for
        for gang, victims in list(self._terminating.items()):
            left = {k for k in victims if self._exists(k)}
            if left:
                self._terminating[gang] = left
                notes[gang] = f"waiting for {len(left)} preempted pods to terminate"
            else:
                del self._terminating[gang]
        candidates = [g for g in gangs if g.uid in waiting and g.uid not in notes and g.size >= g.needed]
        if not candidates:
            return notes
        try:
            pods = self.client.list("v1", "Pod").items
        except ApiError as err:
            log.info("listing pods for preemption: %s", err)
            return notes
        top = max(g.priority for g in candidates)
        running = [r for r in running_gangs(pods, group, priority) if r.priority < top]
        if not running:
            return notes
        pending = [p for p in decisions.pending if p.gang not in notes]
        trimmed = GangDecisions(decisions.placed, decisions.reserved, tuple(pending), decisions.usage)
        for plan in plan_preemptions(table, trimmed, candidates, running, config, options):
            for key in plan.pods:
                namespace, name = key.split("/", 1)
                try:
                    self.client.delete("v1", "Pod", name, namespace)
                except NotFound:
                    continue
                except ApiError as err:
                    log.info("preempting %s for %s: %s", key, plan.preemptor, err)
            self._terminating[plan.preemptor] = set(plan.pods)
            notes[plan.preemptor] = (
                f"preempting {len(plan.pods)} pods of lower-priority gangs {', '.join(plan.victims)}"
            )
        return notes
