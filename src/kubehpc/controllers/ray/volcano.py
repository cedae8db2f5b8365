"""KubeRay's Volcano batch scheduler: a RayCluster labelled ``ray.io/scheduler-name: volcano``
is one gang.

The RayCluster controller makes the Volcano PodGroup ``ray-<cluster>-pg`` (owned by the
cluster) before any pod, and every pod of the cluster names it. From there the Volcano side of
the control plane takes over, as for any other PodGroup: the queue loop
(:mod:`kubehpc.controllers.volcano.queues`) lets the PodGroup into its queue (``Inqueue``) when
the queue is open and has room, and the scheduler's gang step binds ``minMember`` pods at once
or none (:mod:`kubehpc.controllers.scheduling.gangs`).

As KubeRay: ``minMember`` is the head plus the desired workers (``replicas`` x ``numOfHosts``
per group), or the minimum workers (``minReplicas`` x ``numOfHosts``) when the in-tree
autoscaler may shrink the cluster; ``minResources`` is what those pods request; the queue is the
cluster's ``volcano.sh/queue-name`` label and the priority class its
``ray.io/priority-class-name`` label, which the pods get too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubehpc.api.errors import AlreadyExists, Conflict, NotFound
from kubehpc.controllers.ray import constants as c
from kubehpc.controllers.ray.objects import owner_reference
from kubehpc.controllers.volcano import constants as vc
from kubehpc.controllers.volcano.podgroups import quantity
from kubehpc.sched.podspec import pod_requests
from kubehpc.store.client import Client

Obj = dict[str, Any]
SCHEDULER_NAME_LABEL = "ray.io/scheduler-name"
PRIORITY_CLASS_LABEL = "ray.io/priority-class-name"
VOLCANO = "volcano"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"


def _labels(cluster: Mapping[str, Any]) -> dict[str, str]:
    return dict((cluster.get("metadata") or {}).get("labels") or {})


def uses_volcano(cluster: Mapping[str, Any]) -> bool:
    return _labels(cluster).get(SCHEDULER_NAME_LABEL) == VOLCANO


def pod_group_name(cluster: Mapping[str, Any]) -> str:
    return f"ray-{(cluster.get('metadata') or {}).get('name')}-pg"


def _gang_workers(group: Mapping[str, Any], autoscaled: bool) -> int:
    """Workers of one group the gang waits for (pods, hosts counted)."""
    if group.get("suspend"):
        return 0
    lo = int(group.get("minReplicas") or 0)
    if autoscaled:
        n = lo
    else:
        top = group.get("maxReplicas")
        replicas = group.get("replicas")
        n = lo if replicas is None else int(replicas)
        n = max(lo, n if top is None else min(int(top), n))
    return n * int(group.get("numOfHosts") or 1)


def _members(spec: Mapping[str, Any]) -> list[tuple[Obj, int]]:
    autoscaled = bool(spec.get("enableInTreeAutoscaling"))
    out: list[tuple[Obj, int]] = [((spec.get("headGroupSpec") or {}).get("template") or {}, 1)]
    for group in spec.get("workerGroupSpecs") or ():
        out.append((group.get("template") or {}, _gang_workers(group, autoscaled)))
    return out


def pod_group(cluster: Mapping[str, Any]) -> Obj:
    """The PodGroup KubeRay's Volcano scheduler makes for ``cluster``."""
    spec = cluster.get("spec") or {}
    meta = cluster.get("metadata") or {}
    members = _members(spec)
    totals: dict[str, int] = {}
    for template, count in members:
        for name, units in pod_requests(template.get("spec") or {}).items():
            totals[name] = totals.get(name, 0) + units * count
    pg_spec: Obj = {
        "minMember": sum(count for _, count in members),
        "minResources": {name: quantity(name, units) for name, units in sorted(totals.items()) if units},
    }
    labels = _labels(cluster)
    if labels.get(vc.QUEUE_NAME_KEY):
        pg_spec["queue"] = labels[vc.QUEUE_NAME_KEY]
    if labels.get(PRIORITY_CLASS_LABEL):
        pg_spec["priorityClassName"] = labels[PRIORITY_CLASS_LABEL]
    return {
        "apiVersion": vc.PODGROUP_API_VERSION,
        "kind": vc.PODGROUP_KIND,
        "metadata": {
            "name": pod_group_name(cluster),
            "namespace": meta.get("namespace") or "default",
            "labels": {c.CLUSTER_LABEL: str(meta.get("name"))},
            "ownerReferences": [owner_reference(cluster)],
        },
        "spec": pg_spec,
    }


def join_gang(cluster: Mapping[str, Any], pod: Obj) -> Obj:
    """Make ``pod`` a member of the cluster's PodGroup when the cluster asks for Volcano
    (KubeRay's ``AddMetadataToPod``); returns the pod."""
    if not uses_volcano(cluster):
        return pod
    meta = pod.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    annotations = meta.setdefault("annotations", {})
    annotations[GROUP_NAME_ANNOTATION] = pod_group_name(cluster)
    annotations[TASK_SPEC_ANNOTATION] = str(labels.get(c.GROUP_LABEL) or "")
    cluster_labels = _labels(cluster)
    if cluster_labels.get(vc.QUEUE_NAME_KEY):
        labels[vc.QUEUE_NAME_KEY] = cluster_labels[vc.QUEUE_NAME_KEY]
    spec = pod.setdefault("spec", {})
    if cluster_labels.get(PRIORITY_CLASS_LABEL):
        spec["priorityClassName"] = cluster_labels[PRIORITY_CLASS_LABEL]
    spec["schedulerName"] = VOLCANO
    return pod


def ensure_pod_group(client: Client, cluster: Mapping[str, Any]) -> None:
    """Create the cluster's PodGroup, or bring its spec up to date (workers added or removed
    change the gang); nothing for a cluster that does not ask for Volcano."""
    if not uses_volcano(cluster):
        return
    wanted = pod_group(cluster)
    meta = wanted["metadata"]
    try:
        current = client.get(vc.PODGROUP_API_VERSION, vc.PODGROUP_KIND, meta["name"], meta["namespace"])
    except NotFound:
        try:
            client.create(wanted)
        except AlreadyExists:
            pass  # made meanwhile: the next pass compares it
        return
    if current.get("spec") != {**(current.get("spec") or {}), **wanted["spec"]}:
        current["spec"] = {**(current.get("spec") or {}), **wanted["spec"]}
        try:
            client.update(current)
        except (Conflict, NotFound):
            pass  # the next pass sees the newer object
