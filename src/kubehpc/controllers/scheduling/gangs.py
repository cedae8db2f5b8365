"""The scheduler loop's gang step: pods that belong to a gang are bound all together or not at all.

A waiting pod belongs to a gang when

* Volcano: ``spec.schedulerName: volcano`` and the ``scheduling.k8s.io/group-name`` annotation name
  a ``scheduling.volcano.sh/v1beta1`` PodGroup in the pod's namespace (``minMember``, and
  ``minTaskMember`` per task named by the ``volcano.sh/task-spec`` annotation; pods are
  held while the group is ``Pending`` or has no phase yet, i.e. not yet let in by its queue;
  ``networkTopology`` places the gang within one HyperNode of the tier allowed, :mod:`.hypernodes`);
* scheduler-plugins coscheduling: the ``scheduling.x-k8s.io/pod-group`` label names a
  ``scheduling.x-k8s.io/v1alpha1`` PodGroup (``minMember``, ``scheduleTimeoutSeconds``);
* Kueue: the ``kueue.x-k8s.io/pod-group-name`` label with ``kueue.x-k8s.io/pod-group-total-count``
  (Kueue's plain-pod groups), or a pod of a batch/v1 Job that Kueue admitted (label
  ``kueue.x-k8s.io/podset``) or whose template asks for a topology
  (``kueue.x-k8s.io/podset-*-topology``): the Job's ``parallelism`` pods form the gang.

PodGroups and Topologies are read through the Client as plain objects, each cycle that has gang
pods waiting. Members already bound count toward the minimum, so a gang that lost a pod does not
wait for its whole size again. The rules themselves — all-or-nothing, topology, reservations and
their timeout — are the pure core's (:mod:`kubehpc.sched.gang`); this module only gathers the
gangs and turns the core's answer back into bindings and pending reasons, and evicts the
victims the core picks for a gang that does not fit (:mod:`.gang_eviction`). Bindings are
written pod by pod, so a refused one can leave a gang running short of its minimum; if its
missing pods are not bound within its timeout, its running pods are deleted and it starts again
whole (:func:`kubehpc.sched.gang.gives_up_running_members`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import ApiError, NotFound
from kubehpc.controllers.scheduling.cache import DEFAULT_SCHEDULER, ClusterCache, Waiting, pod_key
from kubehpc.controllers.scheduling.gang_eviction import GangEvictor
from kubehpc.controllers.scheduling.hypernodes import HyperNodeTopology, hypernode_tree
from kubehpc.controllers.scheduling.priority import resolve_priority
from kubehpc.sched.decide import Binding, Decisions, Pending, Snapshot, decide
from kubehpc.sched.gang import Gang, GangOptions, GangPodSet, decide_with_gangs, gives_up_running_members
from kubehpc.sched.reasons import NodeRejections
from kubehpc.sched.topology import (
    Mode,
    Packing,
    TopologyRequest,
    TopologyTree,
    request_from_annotations,
    volcano_request,
)
from kubehpc.store.client import Client, ListOptions

log = logging.getLogger(__name__)
Obj = dict[str, Any]

VOLCANO_SCHEDULER = "volcano"
SERVED_SCHEDULERS = (DEFAULT_SCHEDULER, VOLCANO_SCHEDULER)
"""What the embedded control plane answers to: it is the only scheduler there."""
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
VOLCANO_PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
COSCHEDULING_PODGROUP = ("scheduling.x-k8s.io/v1alpha1", "PodGroup")
KUEUE_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_PODSET_LABEL = "kueue.x-k8s.io/podset"
"""Set by Kueue on an admitted Job's pod template (the Workload's pod set name)."""
KUEUE_TOPOLOGY = ("kueue.x-k8s.io/v1beta2", "Topology")
VOLCANO_HYPERNODE = ("topology.volcano.sh/v1alpha1", "HyperNode")
HYPERNODE_TREE = "volcano.sh/hypernodes"
"""The name the HyperNode tree goes by among the Topologies (never a valid Topology name)."""
TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True, order=True)
class GroupRef:
    kind: str  # "volcano", "coscheduling", "kueue", "job"
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def group_of(pod: dict[str, Any]) -> GroupRef | None:
    meta = F.metadata(pod)
    spec = F.spec(pod)
    ns = str(meta.get("namespace") or "default")
    labels = F.obj_field(meta, "labels")
    annotations = F.obj_field(meta, "annotations")
    if spec.get("schedulerName") == VOLCANO_SCHEDULER and annotations.get(VOLCANO_GROUP_ANNOTATION):
        return GroupRef("volcano", ns, str(annotations[VOLCANO_GROUP_ANNOTATION]))
    if labels.get(COSCHEDULING_LABEL):
        return GroupRef("coscheduling", ns, str(labels[COSCHEDULING_LABEL]))
    if labels.get(KUEUE_GROUP_LABEL):
        return GroupRef("kueue", ns, str(labels[KUEUE_GROUP_LABEL]))
    if labels.get(KUEUE_PODSET_LABEL) or request_from_annotations(annotations) is not None:
        for owner in F.object_list(meta, "ownerReferences"):
            if owner.get("controller") and owner.get("kind") == "Job":
                return GroupRef("job", ns, str(owner.get("name")))
    return None


@dataclass(frozen=True)
class GroupSpec:
    """What the gang's own object says; ``held`` when it cannot start whatever the nodes offer."""

    min_member: int | None = None
    timeout_s: float | None = None
    held: str = ""
    network: dict[str, Any] | None = None
    """Volcano's ``spec.networkTopology`` (mode, highestTierAllowed / highestTierName)."""
    task_minimums: Mapping[str, int] | None = None
    """Volcano's ``spec.minTaskMember``: per task, the pods that must start with the gang."""


class GangStep:
    """Splits each cycle's waiting pods into gangs and the rest, and decides both."""

    def __init__(
        self, client: Client, cache: ClusterCache, packing: Packing = Packing.BINPACK, preempt: bool = True
    ) -> None:
        self.client = client
        self.cache = cache
        self.packing = packing
        self.preempt = preempt
        """Evict whole lower-priority gangs for a gang that does not fit (kube-scheduler
        preempts by priority by default; pods with ``preemptionPolicy: Never`` never do)."""
        self.evictor = GangEvictor(client)
        self._since: dict[GroupRef, float] = {}
        self._short: dict[GroupRef, float] = {}
        """Gangs a refused binding may have left below their minimum, and since when."""
        self.on_error: Callable[[str], None] = lambda text: log.info("%s", text)

    # ----------------------------------------------------------------- reading the groups

    def _get(self, api_version: str, kind: str, name: str, namespace: str) -> Obj | None:
        try:
            return self.client.get(api_version, kind, name, namespace)
        except ApiError:
            return None

    def _spec(self, ref: GroupRef, members: list[Waiting]) -> GroupSpec:
        if ref.kind in ("volcano", "coscheduling"):
            api_version, kind = VOLCANO_PODGROUP if ref.kind == "volcano" else COSCHEDULING_PODGROUP
            group = self._get(api_version, kind, ref.name, ref.namespace)
            if group is None:
                return GroupSpec(held=f"PodGroup {ref} ({api_version}) not found")
            spec = F.spec(group)
            # A PodGroup the Volcano queue loop has not looked at yet has no phase: it is as
            # Pending as one the loop holds, or pods applied with it would start before their queue.
            phase = F.status(group).get("phase") or "Pending"
            if ref.kind == "volcano" and phase == "Pending":
                return GroupSpec(held=f"PodGroup {ref} is Pending: not yet let in by its queue")
            timeout = spec.get("scheduleTimeoutSeconds")
            tasks = spec.get("minTaskMember") if ref.kind == "volcano" else None
            return GroupSpec(
                int(spec.get("minMember") or 0) or None,
                float(timeout) if timeout else None,
                network=spec.get("networkTopology") if ref.kind == "volcano" else None,
                task_minimums={str(t): int(n) for t, n in tasks.items() if n} if tasks else None,
            )
        if ref.kind == "kueue":
            if not members:
                return GroupSpec()  # the total is read off a waiting member; none waits
            annotations = (members[0].obj.get("metadata") or {}).get("annotations") or {}
            try:
                total = int(annotations.get(KUEUE_TOTAL_ANNOTATION, ""))
            except ValueError:
                return GroupSpec(held=f"pod group {ref}: annotation {KUEUE_TOTAL_ANNOTATION} is not a number")
            return GroupSpec(total)
        job = self._get("batch/v1", "Job", ref.name, ref.namespace)
        if job is None:
            return GroupSpec(held=f"Job {ref} not found")
        spec = F.spec(job)
        given = spec.get("parallelism")
        parallelism = 1 if given is None else int(given)
        completions = spec.get("completions")
        if completions is not None:
            done = int(F.status(job).get("succeeded") or 0)
            parallelism = min(parallelism, max(0, int(completions) - done))
        return GroupSpec(parallelism)

    def _bound_members(self, groups: set[GroupRef]) -> dict[GroupRef, dict[str, int]]:
        """Members on a node, not finished and not being deleted, per group and Volcano task
        (they count toward minMember and minTaskMember)."""
        counts: dict[GroupRef, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for ns in sorted({g.namespace for g in groups}):
            try:
                pods = self.client.list("v1", "Pod", ListOptions(namespace=ns)).items
            except ApiError as err:
                self.on_error(f"listing pods of {ns}: {err}")
                continue
            for pod in pods:
                if not _running(pod):
                    continue
                ref = group_of(pod)
                if ref in groups:
                    task = str(F.annotations(pod).get(VOLCANO_TASK_ANNOTATION, ""))
                    counts[ref][task] += 1
        return counts

    def _trees(self, snapshot: Snapshot) -> tuple[tuple[str, TopologyTree], ...]:
        try:
            topologies = self.client.list(*KUEUE_TOPOLOGY).items
        except ApiError:
            return ()
        out = []
        for topo in sorted(topologies, key=lambda t: str(F.metadata(t).get("name"))):
            levels = [str(level.get("nodeLabel")) for level in F.spec(topo).get("levels") or ()]
            if levels:
                name = str(F.metadata(topo).get("name"))
                out.append((name, TopologyTree.from_labels(snapshot.nodes, levels)))
        return tuple(out)

    # ----------------------------------------------------------------- one cycle

    def decide(self, snapshot: Snapshot, now: float) -> Decisions:
        """The cycle's decisions: gangs first, whole or not at all, then every other pod."""
        groups: dict[GroupRef, list[Waiting]] = defaultdict(list)
        for waiting in self.cache.waiting.values():
            ref = group_of(waiting.obj)
            if ref is not None:
                groups[ref].append(waiting)
        for gone in [g for g in self._since if g not in groups]:
            del self._since[gone]
        if not groups:
            if self._short:
                self._settle_short({}, {}, now)
            return decide(snapshot, now)
        members = {w.key for ws in groups.values() for w in ws}
        rest = tuple(ps for ps in snapshot.pod_sets if not set(ps.pod_ids) & members)
        # Every gang with waiting pods takes part in every cycle, parked or not: an incomplete
        # gang's reservation must hold against whatever pod the cycle is for.
        ready = groups
        specs = {ref: self._spec(ref, ws) for ref, ws in ready.items()}
        # Before counting the running members: a gang that gives them up waits for its whole size.
        notes = self._settle_short(groups, specs, now) if self._short else {}
        bound = self._bound_members(set(ready))
        trees = self._trees(snapshot) if any(self._wants_topology(ws) for ws in ready.values()) else ()
        hyper = None
        if any(spec.network is not None for spec in specs.values()):
            hyper = self._hypernodes(snapshot)
            if hyper is not None:
                trees += ((HYPERNODE_TREE, hyper.tree),)
        gangs: list[Gang] = []
        held: list[tuple[GroupRef, str]] = []
        for ref, ws in sorted(ready.items()):
            self._since.setdefault(ref, now)
            built = self._gang(ref, ws, specs[ref], bound.get(ref, {}), trees, hyper)
            if isinstance(built, str):
                held.append((ref, built))
            else:
                gangs.append(built)
        options = GangOptions(self.packing, trees)
        gang_decisions, decisions = decide_with_gangs(replace(snapshot, pod_sets=rest), gangs, now, options)
        if self.preempt and gang_decisions.pending:
            notes |= self.evictor.preempt(
                snapshot.nodes, gang_decisions, gangs, group_of, self._priority, snapshot.config, options
            )
        bindings: list[Binding] = list(gang_decisions.bindings()) + list(decisions.bindings)
        no_rejections = NodeRejections(total_nodes=len(snapshot.nodes))
        pending: list[Pending] = []
        for ref, text in held:
            pods = tuple(sorted(w.key for w in groups[ref]))
            pending.append(
                Pending(str(ref), len(pods), pods, 0, no_rejections, f"gang {ref.kind}:{ref}: {text}")
            )
        for p in gang_decisions.pending:
            text = f"{p.message}; {notes[p.gang]}" if p.gang in notes else p.message
            pending.append(Pending(p.gang, len(p.pods), p.pods, 0, no_rejections, text))
        pending.extend(decisions.pending)
        pending = [replace(p, position=i) for i, p in enumerate(pending)]
        return Decisions(tuple(bindings), tuple(pending))

    # ----------------------------------------------------------------- refused bindings

    def binding_refused(self, pod: dict[str, Any], now: float) -> None:
        """The API refused ``pod``'s binding. Others of its gang may be bound already (bindings
        are written pod by pod): the gang is watched until it runs whole again, and gives up its
        running pods if it is still short when its timeout passes."""
        ref = group_of(pod)
        if ref is not None:
            self._short.setdefault(ref, now)

    def _settle_short(
        self,
        groups: Mapping[GroupRef, list[Waiting]],
        specs: Mapping[GroupRef, GroupSpec],
        now: float,
    ) -> dict[str, str]:
        """Forget the watched gangs that are whole again; delete the running pods of those still
        short of their minimum past their timeout, so that they start again whole (their
        controllers make the pods anew). The note to add to each such gang's pending message."""
        notes: dict[str, str] = {}
        for ref, since in sorted(self._short.items()):
            uid = f"{ref.kind}:{ref}"
            spec = specs.get(ref) or self._spec(ref, groups.get(ref, []))
            running = self._running_members(ref)
            if spec.min_member is None or not running or len(running) >= spec.min_member:
                del self._short[ref]  # whole, or nothing runs that could be half of it
                continue
            if not gives_up_running_members(since, spec.timeout_s, now):
                continue
            del self._short[ref]
            for namespace, name in running:
                try:
                    self.client.delete("v1", "Pod", name, namespace)
                except NotFound:
                    continue
                except ApiError as err:
                    log.info("deleting %s/%s of short gang %s: %s", namespace, name, uid, err)
            text = (
                f"{len(running)} of its {spec.min_member} pods ran without the rest for {now - since:g}s "
                "after a refused binding: they were deleted so that the gang starts again whole"
            )
            log.warning("gang %s: %s", uid, text)
            notes[uid] = text
        return notes

    def _running_members(self, ref: GroupRef) -> list[tuple[str, str]]:
        """(namespace, name) of the gang's pods on a node, not finished and not deleting."""
        try:
            pods = self.client.list("v1", "Pod", ListOptions(namespace=ref.namespace)).items
        except ApiError as err:
            log.info("listing the pods of gang %s: %s", ref, err)
            return []
        return [
            (ref.namespace, str(p["metadata"].get("name")))
            for p in pods
            if _running(p) and group_of(p) == ref
        ]

    def _priority(self, pod: dict[str, Any]) -> int:
        """A pod's priority as the cache gives it: ``spec.priority``, else from its class."""
        spec = F.spec(pod)
        if spec.get("priority") is not None:
            return int(spec["priority"])
        try:
            return resolve_priority(spec, self.cache.classes).priority
        except ApiError:
            return 0

    def _hypernodes(self, snapshot: Snapshot) -> HyperNodeTopology | None:
        try:
            items = self.client.list(*VOLCANO_HYPERNODE).items
        except ApiError:
            return None
        return hypernode_tree(snapshot.nodes, items)

    @staticmethod
    def _wants_topology(ws: list[Waiting]) -> bool:
        return any(request_from_annotations(_annotations(w)) is not None for w in ws)

    def _gang(
        self,
        ref: GroupRef,
        ws: list[Waiting],
        spec: GroupSpec,
        bound_by_task: Mapping[str, int],
        trees: tuple[tuple[str, TopologyTree], ...],
        hyper: HyperNodeTopology | None,
    ) -> Gang | str:
        if spec.held:
            return spec.held
        network = _network_request(spec.network, hyper) if spec.network is not None else None
        if isinstance(network, str):
            return network
        # Identical pods of one task and one topology request form a pod set.
        sets: dict[tuple[str, TopologyRequest | None, int], list[Waiting]] = defaultdict(list)
        for w in sorted(ws, key=lambda w: (w.created, w.arrival)):
            annotations = _annotations(w)
            task = str(annotations.get(VOLCANO_TASK_ANNOTATION, ""))
            sets[(task, request_from_annotations(annotations) or network, id(w.shape))].append(w)
        # Each task's minTaskMember less its pods already bound, taken by its pod sets in turn.
        task_left = {t: max(0, n - bound_by_task.get(t, 0)) for t, n in (spec.task_minimums or {}).items()}
        for t, n in task_left.items():
            have = sum(len(m) for (task, _, _), m in sets.items() if task == t)
            if have < n:
                return (
                    f"task {t} has {have} pods waiting; minTaskMember needs {n} more to start with the gang"
                )
        topology = ""
        pod_sets: list[GangPodSet] = []
        for i, ((task, request, _), members) in enumerate(sets.items()):
            if request is not None and request is network:
                topology = HYPERNODE_TREE
            elif request is not None and request.level and request.mode is not Mode.UNCONSTRAINED:
                names = [name for name, tree in trees if tree.level_index(request.level) is not None]
                if not names:
                    return f"no Topology has the level {request.level}"
                topology = topology or names[0]
            elif request is not None and trees:
                topology = topology or trees[0][0]
            elif request is not None:
                request = None  # unconstrained, and no topology declared: anywhere at all
            min_count = None
            if task in task_left:
                min_count = min(task_left[task], len(members))
                task_left[task] -= min_count
            pod_sets.append(
                GangPodSet(
                    name=task or f"set{i}",
                    shape=members[0].shape,
                    count=len(members),
                    min_count=min_count,
                    topology=request,
                    pod_ids=tuple(w.key for w in members),
                )
            )
        bound = sum(bound_by_task.values())
        min_member = None if spec.min_member is None else max(0, spec.min_member - bound)
        return Gang(
            uid=f"{ref.kind}:{ref}",
            pod_sets=tuple(pod_sets),
            priority=max(w.priority for w in ws),
            created=min(w.created for w in ws),
            min_member=min_member,
            topology=topology,
            timeout_s=spec.timeout_s,
            waiting_since=self._since[ref],
        )


def _network_request(
    network: dict[str, Any], hyper: HyperNodeTopology | None
) -> TopologyRequest | str | None:
    """A Volcano PodGroup's ``networkTopology`` as a request on the HyperNode tree; a reason
    when it cannot be met whatever the nodes offer; None when it asks for nothing binding."""
    mode = str(network.get("mode") or "hard")
    if hyper is None:
        return "networkTopology is hard but no HyperNode exists" if mode == "hard" else None
    tier = network.get("highestTierAllowed")
    name = network.get("highestTierName")
    if tier is None and name:
        tier = hyper.tier_names.get(str(name))
        if tier is None:
            return f"networkTopology.highestTierName {name} names no HyperNode tier"
    try:
        return volcano_request(mode, int(tier) if tier is not None else max(hyper.tiers), hyper.tiers)
    except ValueError as err:
        return str(err)


def _running(pod: dict[str, Any]) -> bool:
    """On a node, not finished and not being deleted: a member the gang can count on."""
    if not F.spec(pod).get("nodeName") or F.metadata(pod).get("deletionTimestamp"):
        return False
    return F.status(pod).get("phase") not in TERMINAL


def _annotations(w: Waiting) -> Mapping[str, str]:
    annotations: Mapping[str, str] = F.annotations(w.obj)
    return annotations


__all__ = ["SERVED_SCHEDULERS", "GangStep", "GroupRef", "group_of", "pod_key"]
