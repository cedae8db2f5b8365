"""From stored objects (plain dicts, Kueue v1beta2 as stored) to an :class:`AdmissionSnapshot`.

Pure conversion: quantities through ``api.quantity``, pod templates through
``sched.podspec``. Problems Kueue reports rather than rejects are kept as data: a
ClusterQueue naming a ResourceFlavor that does not exist is inactive (FlavorNotFound), a
Workload whose LocalQueue or ClusterQueue is missing stays pending with that reason.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import orjson

from kubehpc.api import fields as F
from kubehpc.api.quantity import parse_quantity, resource_units
from kubehpc.sched.admission.model import (
    HOLD,
    HOLD_AND_DRAIN,
    MAY_STOP_SEARCH,
    NEVER,
    STOP_NONE,
    AdmissionConfig,
    AdmissionSnapshot,
    ClusterQueue,
    Cohort,
    Flavor,
    FlavorQuotas,
    Fungibility,
    LabelSelector,
    LocalQueue,
    PodSet,
    PodSetAdmission,
    PreemptionPolicy,
    Quota,
    Requirement,
    ResourceGroup,
    Workload,
)
from kubehpc.sched.admission.reservations import (
    INVALID_BACKFILL_POLICY,
    backfill_policy_of,
    runtime_estimate_of,
)
from kubehpc.sched.model import PODS, NodeInfo, PodShape, Taint, Toleration
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.planned import POD_SET_ANNOTATION, WORKLOAD_ANNOTATION, plan_of_assignment
from kubehpc.sched.podspec import pod_requests, shape_of

Obj = dict[str, Any]
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
TERMINAL_PHASES = ("Succeeded", "Failed")

# Kueue's ClusterQueue Active condition reasons and messages.
FLAVOR_NOT_FOUND = "FlavorNotFound"
STOPPED = "Stopped"
COHORT_CYCLE = "CohortCycle"


@functools.lru_cache(maxsize=65536)
def epoch(timestamp: str) -> float:
    """RFC 3339 -> seconds since the epoch (0.0 when absent or unreadable)."""
    if not timestamp:
        return 0.0
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _weight(fair_sharing: Obj | None) -> float:
    if not fair_sharing or fair_sharing.get("weight") is None:
        return 1.0
    return float(parse_quantity(fair_sharing["weight"]).amount)


def _quota(resource: str, value: Any) -> int | None:
    return None if value is None else resource_units(resource, value)


def resource_groups(groups: Iterable[Obj] | None) -> tuple[ResourceGroup, ...]:
    out = []
    for group in groups or ():
        flavors = tuple(
            FlavorQuotas(
                flavor=str(f["name"]),
                resources=tuple(
                    (
                        str(r["name"]),
                        Quota(
                            nominal=resource_units(str(r["name"]), r.get("nominalQuota", 0)),
                            borrowing_limit=_quota(str(r["name"]), r.get("borrowingLimit")),
                            lending_limit=_quota(str(r["name"]), r.get("lendingLimit")),
                        ),
                    )
                    for r in f.get("resources") or ()
                ),
            )
            for f in group.get("flavors") or ()
        )
        out.append(ResourceGroup(tuple(str(r) for r in group.get("coveredResources") or ()), flavors))
    return tuple(out)


def label_selector(selector: Obj | None) -> LabelSelector | None:
    if selector is None:
        return None
    return LabelSelector(
        match_labels=tuple(sorted((str(k), str(v)) for k, v in F.obj_field(selector, "matchLabels").items())),
        match_expressions=tuple(
            Requirement(str(e.get("key", "")), str(e.get("operator", "")), tuple(e.get("values") or ()))
            for e in selector.get("matchExpressions") or ()
        ),
    )


def _taints(items: Iterable[Obj] | None) -> tuple[Taint, ...]:
    return tuple(
        Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect", ""))) for t in items or ()
    )


def _tolerations(items: Iterable[Obj] | None) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in items or ()
    )


def flavor_of(obj: Obj) -> Flavor:
    spec = F.spec(obj)
    return Flavor(
        name=str(F.metadata(obj).get("name", "")),
        node_labels=tuple(sorted((str(k), str(v)) for k, v in F.obj_field(spec, "nodeLabels").items())),
        node_taints=_taints(spec.get("nodeTaints")),
        tolerations=_tolerations(spec.get("tolerations")),
    )


def cohort_of(obj: Obj) -> Cohort:
    spec = F.spec(obj)
    return Cohort(
        name=str(F.metadata(obj).get("name", "")),
        parent=spec.get("parentName") or None,
        resource_groups=resource_groups(spec.get("resourceGroups")),
        fair_weight=_weight(spec.get("fairSharing")),
    )


def _fungibility_value(value: Any, default: str) -> str:
    # v1beta1's Borrow / Preempt are the old spellings of MayStopSearch.
    if value in ("Borrow", "Preempt"):
        return MAY_STOP_SEARCH
    return str(value) if value else default


def cluster_queue_of(obj: Obj, flavors: Mapping[str, Flavor]) -> ClusterQueue:
    spec = F.spec(obj)
    name = str(F.metadata(obj).get("name", ""))
    groups = resource_groups(spec.get("resourceGroups"))
    preemption = F.obj_field(spec, "preemption")
    borrow = F.obj_field(preemption, "borrowWithinCohort")
    fungibility = F.obj_field(spec, "flavorFungibility")
    stop = str(spec.get("stopPolicy") or STOP_NONE)
    missing = sorted({f.flavor for g in groups for f in g.flavors if f.flavor not in flavors})
    reason = message = ""
    if missing:
        reason = FLAVOR_NOT_FOUND
        message = f"Can't admit new workloads: references missing ResourceFlavor(s): {', '.join(missing)}."
    elif stop in (HOLD, HOLD_AND_DRAIN):
        reason, message = STOPPED, "Can't admit new workloads: is stopped."
    # kubehpc: the ClusterQueue's backfill policy (sched/admission/reservations.py).
    backfill, backfill_problem = backfill_policy_of(F.annotations(obj))
    if backfill_problem and not reason:
        reason, message = INVALID_BACKFILL_POLICY, backfill_problem
    threshold = borrow.get("maxPriorityThreshold")
    return ClusterQueue(
        name=name,
        resource_groups=groups,
        cohort=spec.get("cohortName") or spec.get("cohort") or None,
        queueing_strategy=str(spec.get("queueingStrategy") or "BestEffortFIFO"),
        namespace_selector=label_selector(spec.get("namespaceSelector")),
        preemption=PreemptionPolicy(
            within_cluster_queue=str(preemption.get("withinClusterQueue") or NEVER),
            reclaim_within_cohort=str(preemption.get("reclaimWithinCohort") or NEVER),
            borrow_within_cohort=str(borrow.get("policy") or NEVER),
            borrow_max_priority_threshold=None if threshold is None else int(threshold),
        ),
        fungibility=Fungibility(
            when_can_borrow=_fungibility_value(fungibility.get("whenCanBorrow"), MAY_STOP_SEARCH),
            when_can_preempt=_fungibility_value(fungibility.get("whenCanPreempt"), "TryNextFlavor"),
        ),
        stop_policy=stop,
        fair_weight=_weight(spec.get("fairSharing")),
        backfill=backfill,
        inactive_reason=reason,
        inactive_message=message,
    )


def local_queue_of(obj: Obj) -> LocalQueue:
    meta, spec = F.metadata(obj), F.spec(obj)
    return LocalQueue(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name", "")),
        cluster_queue=str(spec.get("clusterQueue") or ""),
        stop_policy=str(spec.get("stopPolicy") or STOP_NONE),
    )


# --- workloads -----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _template(spec_json: bytes) -> tuple[tuple[tuple[str, int], ...], PodShape]:
    spec = orjson.loads(spec_json)
    requests = tuple(sorted((r, a) for r, a in pod_requests(spec).items() if r != PODS))
    return requests, shape_of(spec)


def _pod_set(ps: Obj) -> PodSet:
    template_spec = F.spec(F.obj_field(ps, "template"))
    # Workloads of one job kind repeat the same template thousands of times: parse it once.
    requests, shape = _template(orjson.dumps(template_spec, option=orjson.OPT_SORT_KEYS))
    count = int(ps.get("count", 1))
    min_count = ps.get("minCount")
    return PodSet(
        name=str(ps.get("name") or "main"),
        count=count,
        requests=requests,
        shape=shape,
        min_count=None if min_count is None else int(min_count),
    )


def _conditions(status: Obj) -> dict[str, Obj]:
    # ``dict``, not ``Mapping``: an ABC's isinstance check runs interpreted (decoded JSON is dicts).
    return {str(c.get("type")): c for c in F.list_field(status, "conditions") if isinstance(c, dict)}


def _is_true(conditions: dict[str, Obj], kind: str) -> bool:
    c = conditions.get(kind)
    return c is not None and c.get("status") == "True"


def _reserved(admission: Obj, pod_sets: Sequence[PodSet]) -> tuple[PodSetAdmission, ...]:
    by_name = {ps.name: ps for ps in pod_sets}
    out = []
    for psa in F.object_list(admission, "podSetAssignments"):
        name = str(psa.get("name") or "main")
        ps = by_name.get(name)
        count = psa.get("count")
        count = int(count) if count is not None else (ps.count if ps else 0)
        flavors = tuple(sorted((str(r), str(f)) for r, f in F.obj_field(psa, "flavors").items()))
        usage_obj = psa.get("resourceUsage")
        if usage_obj:
            usage = tuple(sorted((str(r), resource_units(str(r), v)) for r, v in usage_obj.items()))
        else:
            usage = tuple((r, a * count) for r, a in (ps.requests if ps else ()))
        out.append(PodSetAdmission(name, flavors, count, usage))
    return tuple(out)


def workload_of(
    obj: Obj,
    local_queues: Mapping[str, LocalQueue],
    cluster_queues: Mapping[str, ClusterQueue],
) -> Workload | None:
    """The workload as admission sees it; None when it takes no part (finished, or deactivated
    and holding no quota)."""
    meta, spec = F.metadata(obj), F.spec(obj)
    status = F.status(obj)
    conditions = _conditions(status)
    if _is_true(conditions, "Finished"):
        return None
    admission = F.obj_field(status, "admission")
    holds_quota = _is_true(conditions, "QuotaReserved") and bool(admission)
    if spec.get("active") is False and not holds_quota:
        return None
    namespace = str(meta.get("namespace") or "default")
    queue_name = str(spec.get("queueName") or "")
    pod_sets = tuple(_pod_set(ps) for ps in F.object_list(spec, "podSets"))
    lq = local_queues.get(f"{namespace}/{queue_name}")
    problem = problem_message = ""
    cq_name = ""
    if not queue_name:
        problem, problem_message = "LocalQueueNotFound", "Workload names no LocalQueue (spec.queueName)"
    elif lq is None:
        problem, problem_message = "LocalQueueNotFound", f"LocalQueue {queue_name} doesn't exist"
    elif lq.cluster_queue not in cluster_queues:
        cq_name = lq.cluster_queue
        problem, problem_message = "ClusterQueueNotFound", f"ClusterQueue {lq.cluster_queue} doesn't exist"
    else:
        cq_name = lq.cluster_queue
    reserved = None
    reserved_in = ""
    reserved_at = 0.0
    if holds_quota and admission:
        reserved = _reserved(admission, pod_sets)
        reserved_in = str(admission.get("clusterQueue") or "")
        reserved_at = epoch(str(conditions["QuotaReserved"].get("lastTransitionTime") or ""))
    created = epoch(str(meta.get("creationTimestamp") or ""))
    return Workload(
        namespace=namespace,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid") or f"{namespace}/{meta.get('name', '')}"),
        queue_name=queue_name,
        priority=int(spec.get("priority") or 0),
        created=created,
        pod_sets=pod_sets,
        cluster_queue=cq_name,
        reserved=reserved,
        reserved_in=reserved_in,
        reserved_at=reserved_at or created,
        evicted=holds_quota and _is_true(conditions, "Evicted"),
        requeued_at=0.0
        if holds_quota or not _is_true(conditions, "Evicted")
        else epoch(str(conditions["Evicted"].get("lastTransitionTime") or "")),
        problem=problem,
        problem_message=problem_message,
        job_uid=str(F.obj_field(meta, "labels").get(JOB_UID_LABEL) or ""),
        runtime_estimate=runtime_estimate_of(meta, spec),  # kubehpc: for backfill and estimates
    )


class WorkloadMemo:
    """Workloads converted in earlier snapshots, reused while their object is the same.

    The admission loop's cache replaces an object (never changes it in place) whenever a new
    version arrives, so "the same dict as last time" means "nothing to convert again": a cycle
    converts only the workloads that changed since the previous one, not all of them. Any
    change of the local or cluster queues (rare) starts afresh, because a workload's queue
    problem is read from them.
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Obj, Workload | None]] = {}
        self._queues: object = None
        self.converted = 0  # objects converted so far (the others were reused)

    def workloads(
        self,
        objects: Iterable[Obj],
        local_queues: Mapping[str, LocalQueue],
        cluster_queues: Mapping[str, ClusterQueue],
    ) -> list[Workload]:
        queues = (tuple(local_queues.values()), tuple(cluster_queues.values()))
        previous = self._seen if queues == self._queues else {}
        self._queues = queues
        seen: dict[int, tuple[Obj, Workload | None]] = {}
        out = []
        for obj in objects:
            hit = previous.get(id(obj))
            # The object itself is kept in the entry, so its id cannot be reused meanwhile.
            if hit is not None and hit[0] is obj:
                wl = hit[1]
            else:
                wl = workload_of(obj, local_queues, cluster_queues)
                self.converted += 1
            seen[id(obj)] = (obj, wl)
            if wl is not None:
                out.append(wl)
        self._seen = seen
        return out


# --- nodes ---------------------------------------------------------------------------------------


def _units(resources: Obj) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, value in resources.items():
        try:
            out[str(name)] = resource_units(str(name), value)
        except ValueError:
            continue  # an unreadable amount offers nothing
    return out


Group = tuple[str, str, str]
"""A pod set of a Workload: namespace, workload name, pod set name."""


@dataclass(frozen=True, slots=True)
class PodUse:
    """What one bound, running pod takes from its node, and the pod set it belongs to."""

    node: str
    requests: tuple[tuple[str, int], ...]
    group: Group | None


@dataclass(frozen=True, slots=True)
class Promise:
    """An admitted pod set's node choice: ``plan`` pods on each node, each taking ``requests``."""

    group: Group
    plan: tuple[tuple[str, int], ...]
    requests: tuple[tuple[str, int], ...]


def pod_use(pod: Obj) -> PodUse | None:
    """None for a pod that takes no room (not bound, or finished)."""
    meta, spec = F.metadata(pod), F.spec(pod)
    node = spec.get("nodeName")
    if not node or F.status(pod).get("phase") in TERMINAL_PHASES:
        return None
    requests = {**pod_requests(spec), PODS: 1}
    annotations = F.obj_field(meta, "annotations")
    workload = annotations.get(WORKLOAD_ANNOTATION)
    group = None
    if workload:
        pod_set = str(annotations.get(POD_SET_ANNOTATION) or "main")
        group = (str(meta.get("namespace") or "default"), str(workload), pod_set)
    return PodUse(str(node), tuple(sorted(requests.items())), group)


def promises_of(wl: Obj) -> tuple[Promise, ...]:
    """The node choices of an admitted, unfinished workload (none for the others)."""
    status = F.status(wl)
    conditions = _conditions(status)
    admission = F.obj_field(status, "admission")
    if not _is_true(conditions, "QuotaReserved") or _is_true(conditions, "Finished") or not admission:
        return ()
    meta = F.metadata(wl)
    namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name", ""))
    templates = {
        str(ps.get("name") or "main"): F.obj_field(ps, "template")
        for ps in F.object_list(F.spec(wl), "podSets")
    }
    out = []
    for psa in F.object_list(admission, "podSetAssignments"):
        plan = plan_of_assignment(psa)
        if plan:
            pod_set = str(psa.get("name") or "main")
            spec = F.spec(templates.get(pod_set) or {})
            requests = _template(orjson.dumps(spec, option=orjson.OPT_SORT_KEYS))[0]
            out.append(Promise((namespace, name, pod_set), plan, requests))
    return tuple(out)


def bound_key(group: Group, node: str) -> tuple[str, str, str, str]:
    return (*group, node)


def promised_room(
    promises: Iterable[Promise], bound: Mapping[tuple[str, str, str, str], int]
) -> dict[str, Counter[str]]:
    """Per node, the room admitted pod sets were given there and have not taken yet.

    ``bound`` counts the bound pods of each pod set per node (node ``""``: anywhere). A pod
    bound off its plan (it fell back, or a gang placed it) still uses up one pod of the plan,
    so what stays promised never exceeds the pods not bound at all."""
    out: dict[str, Counter[str]] = {}
    for promise in promises:
        unbound = sum(n for _, n in promise.plan) - bound.get(bound_key(promise.group, ""), 0)
        for node, count in promise.plan:
            if unbound <= 0:
                break
            left = min(count - bound.get(bound_key(promise.group, node), 0), unbound)
            if left > 0:
                unbound -= left
                into = out.setdefault(node, Counter())
                for r, a in promise.requests:
                    into[r] += a * left
                into[PODS] += left
    return out


def node_table(nodes: Sequence[Obj], pods: Iterable[Obj], workloads: Iterable[Obj] = ()) -> NodeTable:
    """Nodes with what their bound, still running pods use — plus, for ``workloads`` admitted
    with a node choice (a hostname topology assignment), the pods chosen for a node and not
    bound there yet: admission promised that room, so later cycles must not give it away."""
    used: dict[str, Counter[str]] = {}
    bound: Counter[tuple[str, str, str, str]] = Counter()
    for pod in pods:
        use = pod_use(pod)
        if use is None:
            continue
        used.setdefault(use.node, Counter()).update(dict(use.requests))
        if use.group is not None:
            bound[bound_key(use.group, use.node)] += 1
            bound[bound_key(use.group, "")] += 1
    promised = promised_room((p for wl in workloads for p in promises_of(wl)), bound)
    return table_of(nodes, used, promised)


def _positive_sum(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """``a + b`` per key, keeping the positive sums (as ``Counter``'s ``+``, whose code runs
    interpreted: this runs per node on every rebuild of the node table)."""
    out = dict(a)
    for key, amount in b.items():
        out[key] = out.get(key, 0) + amount
    return {key: amount for key, amount in out.items() if amount > 0}


def table_of(
    nodes: Sequence[Obj], used: Mapping[str, Mapping[str, int]], promised: Mapping[str, Mapping[str, int]]
) -> NodeTable:
    """The node table of ``nodes`` with ``used`` and ``promised`` room taken."""
    infos = []
    for node in nodes:
        meta, spec, status = F.metadata(node), F.spec(node), F.status(node)
        name = str(meta.get("name", ""))
        infos.append(
            NodeInfo(
                name=name,
                allocatable=_units(status.get("allocatable") or status.get("capacity") or {}),
                used=_positive_sum(used.get(name, {}), promised.get(name, {})),
                labels=dict(F.obj_field(meta, "labels")),
                taints=_taints(spec.get("taints")),
                unschedulable=bool(spec.get("unschedulable")),
            )
        )
    return NodeTable.build(infos)


# --- the snapshot --------------------------------------------------------------------------------


def _cyclic(cohorts: dict[str, Cohort]) -> set[str]:
    """Cohorts that lie on (or under) a parent cycle: Kueue refuses to admit through them."""
    bad: set[str] = set()
    for name in cohorts:
        seen: set[str] = set()
        current: str | None = name
        while current is not None and current in cohorts:
            if current in seen:
                bad.add(name)
                break
            seen.add(current)
            current = cohorts[current].parent
    return bad


def snapshot_from_objects(
    *,
    cluster_queues: Sequence[Obj],
    cohorts: Sequence[Obj],
    resource_flavors: Sequence[Obj],
    local_queues: Sequence[Obj],
    workloads: Sequence[Obj],
    namespaces: Sequence[Obj],
    nodes: Sequence[Obj] = (),
    pods: Sequence[Obj] = (),
    table: NodeTable | None = None,
    config: AdmissionConfig | None = None,
    memo: WorkloadMemo | None = None,
) -> AdmissionSnapshot:
    """The admission snapshot of these objects (all Kueue kinds in the storage version, v1beta2).

    ``table`` may replace ``nodes``/``pods`` when the caller keeps a NodeTable already
    (the scheduling loop's cache). Empty nodes: quota only, no placement check. ``memo``
    reuses the workloads converted by earlier calls (objects unchanged since).
    """
    flavors = {f.name: f for f in map(flavor_of, resource_flavors)}
    cohort_map = {c.name: c for c in map(cohort_of, cohorts)}
    cqs = {}
    cyclic = _cyclic(cohort_map)
    for obj in cluster_queues:
        cq = cluster_queue_of(obj, flavors)
        if cq.cohort in cyclic and cq.active:
            message = f"Can't admit new workloads: cohort {cq.cohort} has a cycle."
            cq = replace(cq, inactive_reason=COHORT_CYCLE, inactive_message=message)
        cqs[cq.name] = cq
    # A cohort named by a ClusterQueue or as a parent, without an object, exists implicitly.
    for name in [cq.cohort for cq in cqs.values()] + [c.parent for c in list(cohort_map.values())]:
        if name and name not in cohort_map:
            cohort_map[name] = Cohort(name=name)
    lqs = {lq.key: lq for lq in map(local_queue_of, local_queues)}
    if memo is None:
        memo = WorkloadMemo()
    wls = memo.workloads(workloads, lqs, cqs)
    ns_labels: dict[str, dict[str, str]] = {}
    for ns in namespaces:
        meta = F.metadata(ns)
        name = str(meta.get("name", ""))
        ns_labels[name] = {**F.obj_field(meta, "labels"), NAMESPACE_NAME_LABEL: name}
    if table is None and nodes:
        table = node_table(nodes, pods)
    return AdmissionSnapshot(
        cluster_queues=cqs,
        cohorts=cohort_map,
        flavors=flavors,
        local_queues=lqs,
        workloads=tuple(wls),
        namespaces=ns_labels,
        nodes=table if table is not None and len(table) else None,
        config=config or AdmissionConfig(),
    )
