"""Volcano's scheduler side for queues: which PodGroups go Inqueue, which gangs are reclaimed
for a queue below its deserved share, and the status of every PodGroup and Queue.

Each cycle reads Queues, PodGroups, their pods and the nodes, computes each PodGroup's phase
from its pods (Running once minMember pods are bound or done; Pending again when a Running
gang lost its pods), asks the pure core (:func:`kubehpc.sched.volcano.decide`) which Pending
PodGroups to admit and which gangs to reclaim, and writes the outcome: admitted PodGroups go
Inqueue (a Volcano Job creates its pods only then), held ones carry an Unschedulable condition
saying why, reclaimed gangs lose all their unfinished pods at once (never a fragment).
Binding pods to nodes is the gang scheduler's work, not this loop's.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from kubehpc.api.errors import AlreadyExists, ApiError, Conflict, NotFound
from kubehpc.api.quantity import resource_units
from kubehpc.controllers.volcano import constants as c
from kubehpc.controllers.volcano.job_controller import EventSink, now_rfc3339
from kubehpc.controllers.volcano.podgroups import quantity
from kubehpc.controllers.watching import Followers
from kubehpc.sched.podspec import pod_requests
from kubehpc.sched.volcano import Decisions, GroupInfo, QueueInfo, Snapshot, decide, with_hierarchy
from kubehpc.sched.volcano import resources as R
from kubehpc.store.client import Client, ListOptions
from kubehpc.store.events import EventRecorder, record_quietly

Obj = dict[str, Any]
log = logging.getLogger(__name__)

COMPONENT = "volcano-scheduler"
CYCLE_MIN_S = 0.2
CYCLE_MAX_S = 2.0
UNSCHEDULABLE = "Unschedulable"


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj.get("metadata") or {}
    return meta


def _units(items: Obj | None) -> dict[str, R.Amount]:
    out: dict[str, R.Amount] = {}
    for name, value in (items or {}).items():
        try:
            out[name] = resource_units(name, value)
        except ValueError:
            continue
    return {k: v for k, v in out.items() if v}


def _quantities(r: R.Resources) -> dict[str, str]:
    return {k: quantity(k, int(v)) for k, v in sorted(r.items())}


def _finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def default_queue() -> Obj:
    """The queue Volcano installs, for work that names none."""
    return {
        "apiVersion": c.QUEUE_API_VERSION,
        "kind": c.QUEUE_KIND,
        "metadata": {"name": c.DEFAULT_QUEUE},
        "spec": {"weight": 1, "reclaimable": True},
    }


@dataclass
class GroupView:
    """A PodGroup and what its pods are doing."""

    obj: Obj
    pods: list[Obj]

    @property
    def key(self) -> str:
        return f"{_meta(self.obj).get('namespace') or 'default'}/{_meta(self.obj)['name']}"

    @property
    def spec(self) -> Obj:
        spec: Obj = self.obj.get("spec") or {}
        return spec

    @property
    def stored_phase(self) -> str:
        return str((self.obj.get("status") or {}).get("phase") or c.PG_PENDING)

    def live(self) -> list[Obj]:
        return [p for p in self.pods if not _meta(p).get("deletionTimestamp")]

    def bound(self) -> list[Obj]:
        return [p for p in self.live() if (p.get("spec") or {}).get("nodeName") and not _finished(p)]

    def count(self, phase: str) -> int:
        return sum(1 for p in self.live() if (p.get("status") or {}).get("phase") == phase)

    def observed_phase(self) -> str:
        """The phase from the pods: Running with minMember pods bound or done; a gang that
        lost pods below that falls back to Pending (to be admitted again), as Volcano's."""
        if self.stored_phase == c.PG_COMPLETED:
            return c.PG_COMPLETED
        placed = len(self.bound()) + self.count("Succeeded")
        min_member = int(self.spec.get("minMember") or 0)
        if (
            self.stored_phase in (c.PG_INQUEUE, c.PG_RUNNING, c.PG_UNKNOWN)
            and placed
            and placed >= min_member
        ):
            return c.PG_RUNNING
        if self.stored_phase == c.PG_INQUEUE:
            return c.PG_INQUEUE
        if self.stored_phase in (c.PG_RUNNING, c.PG_UNKNOWN) and self.bound():
            return c.PG_UNKNOWN
        return c.PG_PENDING

    def info(self, priorities: dict[str, int], phase: str) -> GroupInfo:
        minimum = _units(self.spec.get("minResources"))
        request: dict[str, R.Amount] = {}
        allocated: dict[str, R.Amount] = {}
        for pod in self.live():
            if _finished(pod):
                continue
            needs: dict[str, R.Amount] = dict(pod_requests(pod.get("spec") or {}))
            request = R.add(request, needs)
            if (pod.get("spec") or {}).get("nodeName"):
                allocated = R.add(allocated, needs)
        return GroupInfo(
            key=self.key,
            queue=str(self.spec.get("queue") or c.DEFAULT_QUEUE),
            phase=phase,
            min_resources=minimum,
            request=R.maximum(request, minimum),
            allocated=allocated,
            priority=priorities.get(str(self.spec.get("priorityClassName") or ""), 0),
            created=str(_meta(self.obj).get("creationTimestamp") or ""),
        )


def queue_info(q: Obj) -> QueueInfo:
    spec = q.get("spec") or {}
    state = str((q.get("status") or {}).get("state") or "Open")
    return QueueInfo(
        name=str(_meta(q)["name"]),
        weight=int(spec.get("weight") or 1),
        capability=_units(spec["capability"]) if spec.get("capability") is not None else None,
        guarantee=_units((spec.get("guarantee") or {}).get("resource")),
        deserved=_units(spec["deserved"]) if spec.get("deserved") is not None else None,
        reclaimable=spec.get("reclaimable") is not False,
        state=state if state in ("Open", "Closed", "Closing") else "Open",
        parent=str(spec.get("parent") or "root"),
    )


HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"


def hierarchy_annotations(queues: list[Obj]) -> tuple[dict[str, str], dict[str, str]]:
    """Each queue's ``volcano.sh/hierarchy`` path and ``volcano.sh/hierarchy-weights``."""
    paths: dict[str, str] = {}
    weights: dict[str, str] = {}
    for q in queues:
        annotations = _meta(q).get("annotations") or {}
        if annotations.get(HIERARCHY_ANNOTATION):
            paths[str(_meta(q)["name"])] = str(annotations[HIERARCHY_ANNOTATION])
            weights[str(_meta(q)["name"])] = str(annotations.get(HIERARCHY_WEIGHTS_ANNOTATION) or "")
    return paths, weights


class VolcanoQueueController:
    def __init__(
        self, client: Client, *, events: EventSink | None = None, create_default_queue: bool = True
    ) -> None:
        self.client = client
        self.events: EventSink = events or EventRecorder(client, COMPONENT).record
        self.create_default_queue = create_default_queue
        self._wake = threading.Event()
        self._node_sizes: dict[str, str] = {}

    # --- one cycle ---------------------------------------------------------------------------

    def ensure_default_queue(self) -> None:
        try:
            self.client.get(c.QUEUE_API_VERSION, c.QUEUE_KIND, c.DEFAULT_QUEUE)
        except NotFound:
            try:
                self.client.create(default_queue())
            except AlreadyExists:
                pass

    def cycle(self) -> Decisions:
        queues = self.client.list(c.QUEUE_API_VERSION, c.QUEUE_KIND).items
        groups = self._groups()
        priorities = {
            str(_meta(pc)["name"]): int(pc.get("value") or 0)
            for pc in self.client.list("scheduling.k8s.io/v1", "PriorityClass").items
        }
        phases = {g.key: g.observed_phase() for g in groups}
        snapshot = Snapshot(
            cluster=self._cluster(),
            queues=tuple(with_hierarchy([queue_info(q) for q in queues], *hierarchy_annotations(queues))),
            groups=tuple(g.info(priorities, phases[g.key]) for g in groups),
            fifo_queues=frozenset(
                str(_meta(q)["name"])
                for q in queues
                if (q.get("spec") or {}).get("dequeueStrategy") == "fifo"
            ),
        )
        decisions = decide(snapshot)
        by_key = {g.key: g for g in groups}
        for r in decisions.reclaim:
            self._reclaim(by_key[r.victim], r.message)
            phases[r.victim] = c.PG_PENDING
        for key in decisions.admit:
            phases[key] = c.PG_INQUEUE
        held = {h.key: h for h in decisions.held}
        for g in groups:
            self._write_group(g, phases[g.key], held.get(g.key))
        self._write_queues(queues, groups, phases, decisions)
        return decisions

    def _groups(self) -> list[GroupView]:
        pgs = self.client.list(c.PODGROUP_API_VERSION, c.PODGROUP_KIND).items
        if not pgs:
            return []  # no gang to follow: the cluster's pods are not this loop's business
        # A pod joins a PodGroup of its own namespace only, so only those namespaces are read.
        namespaces = sorted({str(_meta(pg).get("namespace") or "default") for pg in pgs})
        members: dict[tuple[str, str], list[Obj]] = {}
        for namespace in namespaces:
            for pod in self.client.list(c.POD_API_VERSION, "Pod", ListOptions(namespace=namespace)).items:
                group = (_meta(pod).get("annotations") or {}).get(c.GROUP_NAME_ANNOTATION)
                if group:
                    members.setdefault((namespace, str(group)), []).append(pod)
        out = []
        for pg in pgs:
            key = (str(_meta(pg).get("namespace") or "default"), str(_meta(pg)["name"]))
            out.append(GroupView(pg, members.get(key, [])))
        return out

    def _cluster(self) -> dict[str, R.Amount]:
        total: dict[str, R.Amount] = {}
        for node in self.client.list(c.POD_API_VERSION, "Node").items:
            if (node.get("spec") or {}).get("unschedulable"):
                continue
            status = node.get("status") or {}
            total = R.add(total, _units(status.get("allocatable") or status.get("capacity")))
        return total

    def _reclaim(self, g: GroupView, message: str) -> None:
        """Evict the whole gang: every unfinished pod at once."""
        self._event(g.obj, "Normal", "Reclaimed", message)
        for pod in g.live():
            if _finished(pod):
                continue
            meta = _meta(pod)
            try:
                self.client.delete(
                    c.POD_API_VERSION, "Pod", str(meta["name"]), str(meta.get("namespace") or "default")
                )
            except NotFound:
                continue
            except ApiError:
                log.exception("reclaiming pod %s failed", meta.get("name"))

    def _write_group(self, g: GroupView, phase: str, held: Any) -> None:
        status = dict(g.obj.get("status") or {})
        new = dict(status)
        new["phase"] = phase
        new["running"] = g.count("Running")
        new["succeeded"] = g.count("Succeeded")
        new["failed"] = g.count("Failed")
        conditions = [cd for cd in status.get("conditions") or () if cd.get("type") != UNSCHEDULABLE]
        old = next((cd for cd in status.get("conditions") or () if cd.get("type") == UNSCHEDULABLE), None)
        if held is not None and phase == c.PG_PENDING:
            same = old is not None and old.get("reason") == held.reason and old.get("message") == held.message
            conditions.append(
                old
                if same
                else {
                    "type": UNSCHEDULABLE,
                    "status": "True",
                    "reason": held.reason,
                    "message": held.message,
                    "lastTransitionTime": now_rfc3339(),
                }
            )
            if not same:
                self._event(g.obj, "Warning", held.reason, held.message)
        if conditions:
            new["conditions"] = conditions
        else:
            new.pop("conditions", None)
        if new == status:
            return
        try:
            self.client.update({**g.obj, "status": new})  # PodGroups have no status subresource
        except (Conflict, NotFound):
            self._wake.set()  # changed meanwhile: look again soon

    def _write_queues(
        self, queues: list[Obj], groups: list[GroupView], phases: dict[str, str], decisions: Decisions
    ) -> None:
        counts: dict[str, dict[str, int]] = {}
        for g in groups:
            name = str(g.spec.get("queue") or c.DEFAULT_QUEUE)
            bucket = counts.setdefault(name, {})
            bucket[phases[g.key]] = bucket.get(phases[g.key], 0) + 1
        for q in queues:
            name = str(_meta(q)["name"])
            status = dict(q.get("status") or {})
            mine = counts.get(name, {})
            state = str(status.get("state") or "Open")
            if state == "Closing" and not (
                mine.get(c.PG_RUNNING) or mine.get(c.PG_INQUEUE) or mine.get(c.PG_UNKNOWN)
            ):
                state = "Closed"  # closing queues close once their admitted gangs are gone
            elif state not in ("Closed", "Closing"):
                state = "Open"
            new = {
                **status,
                "state": state,
                "pending": mine.get(c.PG_PENDING, 0),
                "inqueue": mine.get(c.PG_INQUEUE, 0),
                "running": mine.get(c.PG_RUNNING, 0),
                "unknown": mine.get(c.PG_UNKNOWN, 0),
                "completed": mine.get(c.PG_COMPLETED, 0),
            }
            figures = decisions.queues.get(name)
            if figures is not None:
                new["allocated"] = _quantities(figures.allocated)
            if new != status:
                try:
                    self.client.update_status({**q, "status": new})
                except (Conflict, NotFound):
                    self._wake.set()

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        record_quietly(self.events, obj, type_, reason, message)

    # --- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        if self.create_default_queue:
            self.ensure_default_queue()
        followers = Followers(self.client, read_only=True)  # handlers only wake the loop
        for api_version, kind in (
            (c.QUEUE_API_VERSION, c.QUEUE_KIND),
            (c.PODGROUP_API_VERSION, c.PODGROUP_KIND),
            (c.POD_API_VERSION, "Pod"),
            (c.POD_API_VERSION, "Node"),
        ):
            followers.start(stop, api_version, kind, self._on_change)
        while not stop.is_set():
            self._wake.wait(CYCLE_MAX_S)
            if stop.is_set():
                break
            self._wake.clear()
            try:
                self.cycle()
            except Exception:
                log.exception("volcano queue cycle failed; retrying")
            # Batch a burst of changes into one cycle.
            stop.wait(CYCLE_MIN_S)
        followers.stop()

    def _on_change(self, event_type: str, obj: Obj) -> None:
        kind = obj.get("kind")
        if kind == "Pod":
            in_gang = bool((_meta(obj).get("annotations") or {}).get(c.GROUP_NAME_ANNOTATION))
            if not in_gang and event_type != "DELETED" and not _finished(obj):
                return  # a pod outside any gang matters only when it frees room
        elif kind == "Node":
            # Heartbeats change nodes all the time; only their size and cordon matter here.
            name = str(_meta(obj).get("name"))
            status = obj.get("status") or {}
            size = repr((status.get("allocatable"), (obj.get("spec") or {}).get("unschedulable")))
            if event_type != "DELETED" and self._node_sizes.get(name) == size:
                return
            self._node_sizes[name] = size
        self._wake.set()


__all__ = ["COMPONENT", "VolcanoQueueController", "default_queue", "queue_info"]
