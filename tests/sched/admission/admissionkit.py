"""Builders for the admission core's scenario tests: manifests as a user writes them.

Queues, flavors and cohorts are YAML strings (what ``kubectl apply -f`` takes); Workloads are
made by ``workload(...)`` in Kueue's stored shape — what the Job adapter creates for a Job, and
what ``kubectl get workload -o yaml`` shows once it is admitted.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import yaml

from kubehpc.sched.admission import AdmissionConfig, AdmissionDecisions, build, decide
from kubehpc.sched.admission.model import AdmissionSnapshot

Obj = dict[str, Any]
KINDS = ("ClusterQueue", "Cohort", "ResourceFlavor", "LocalQueue", "Workload", "Namespace", "Node", "Pod")


def stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def manifests(text: str) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def workload(
    name: str,
    queue: str = "user-queue",
    *,
    namespace: str = "default",
    priority: int = 0,
    created: float = 0.0,
    count: int = 1,
    min_count: int | None = None,
    requests: dict[str, Any] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[Obj] | None = None,
    affinity: Obj | None = None,
    pod_sets: list[Obj] | None = None,
    admitted_in: str | None = None,
    flavors: dict[str, str] | None = None,
    admitted_at: float | None = None,
    evicted: bool = False,
    finished: bool = False,
) -> Obj:
    """A Workload of one pod set ``main`` (or ``pod_sets``), optionally already admitted to
    ``admitted_in`` with ``flavors`` (resource -> flavor)."""
    if pod_sets is None:
        spec: Obj = {
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": requests or {"cpu": "1"}}}
            ]
        }
        if node_selector:
            spec["nodeSelector"] = node_selector
        if tolerations:
            spec["tolerations"] = tolerations
        if affinity:
            spec["affinity"] = affinity
        ps: Obj = {"name": "main", "count": count, "template": {"spec": spec}}
        if min_count is not None:
            ps["minCount"] = min_count
        pod_sets = [ps]
    obj: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": stamp(created),
        },
        "spec": {"queueName": queue, "priority": priority, "podSets": pod_sets},
    }
    conditions: list[Obj] = []
    if admitted_in is not None:
        assignments = []
        for p in pod_sets:
            per_pod = _requests(p)
            n = p.get("count", 1)
            assignments.append(
                {
                    "name": p["name"],
                    "flavors": {r: (flavors or {}).get(r, "default-flavor") for r in per_pod},
                    "resourceUsage": {r: _times(r, v, n) for r, v in per_pod.items()},
                    "count": n,
                }
            )
        obj["status"] = {"admission": {"clusterQueue": admitted_in, "podSetAssignments": assignments}}
        at = stamp(created if admitted_at is None else admitted_at)
        conditions.append(_condition("QuotaReserved", at))
        conditions.append(_condition("Admitted", at))
        if evicted:
            conditions.append(_condition("Evicted", at, "Preempted"))
    if finished:
        conditions.append(_condition("Finished", stamp(created)))
    if conditions:
        obj.setdefault("status", {})["conditions"] = conditions
    return obj


def _condition(kind: str, at: str, reason: str = "Admitted") -> Obj:
    return {"type": kind, "status": "True", "reason": reason, "message": "", "lastTransitionTime": at}


def _requests(pod_set: Obj) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in pod_set["template"]["spec"]["containers"]:
        out.update((c.get("resources") or {}).get("requests") or {})
    return out


def _times(resource: str, value: Any, n: int) -> str:
    from kubehpc.api.quantity import resource_units

    units = resource_units(resource, value) * n
    return f"{units}m" if resource == "cpu" else str(units)


def snapshot(
    setup: str | Iterable[Obj],
    *workloads: Obj,
    config: AdmissionConfig | None = None,
    namespaces: Iterable[Obj] = (),
) -> AdmissionSnapshot:
    objs = manifests(setup) if isinstance(setup, str) else list(setup)
    objs += list(workloads)
    by_kind: dict[str, list[Obj]] = {k: [] for k in KINDS}
    for o in objs:
        by_kind[o["kind"]].append(o)
    ns = list(namespaces) + by_kind["Namespace"]
    return build.snapshot_from_objects(
        cluster_queues=by_kind["ClusterQueue"],
        cohorts=by_kind["Cohort"],
        resource_flavors=by_kind["ResourceFlavor"],
        local_queues=by_kind["LocalQueue"],
        workloads=by_kind["Workload"],
        namespaces=ns,
        nodes=by_kind["Node"],
        pods=by_kind["Pod"],
        config=config,
    )


def run(
    setup: str | Iterable[Obj], *workloads: Obj, config: AdmissionConfig | None = None, now: float = 1000.0
) -> AdmissionDecisions:
    return decide(snapshot(setup, *workloads, config=config), now)


def admitted(decisions: AdmissionDecisions) -> list[str]:
    """Names of the admitted workloads, in the order admitted."""
    return [a.workload.split("/", 1)[1] for a in decisions.admissions]


def flavors_of(decisions: AdmissionDecisions, name: str) -> dict[str, str]:
    for a in decisions.admissions:
        if a.workload.endswith("/" + name):
            out: dict[str, str] = {}
            for ps in a.pod_sets:
                out.update(dict(ps.admission.flavors))
            return out
    raise AssertionError(f"{name} was not admitted")


def victims(decisions: AdmissionDecisions) -> dict[str, str]:
    """Victim name -> reason."""
    return {p.victim.split("/", 1)[1]: str(p.reason) for p in decisions.preemptions}


def pending(decisions: AdmissionDecisions, name: str) -> Any:
    for p in decisions.pending:
        if p.workload.endswith("/" + name):
            return p
    raise AssertionError(f"{name} is not pending")


def queue_state(decisions: AdmissionDecisions, name: str) -> Any:
    for cq in decisions.cluster_queues:
        if cq.name == name:
            return cq
    raise AssertionError(f"no ClusterQueue {name}")


def one_queue(cpu: str = "9", memory: str = "36Gi", extra: str = "") -> str:
    """Kueue's single-clusterqueue-setup sample, with its quota as given."""
    return f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: default-flavor}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: cluster-queue}}
spec:
  namespaceSelector: {{}}
  {extra}
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: default-flavor
      resources:
      - {{name: cpu, nominalQuota: {cpu}}}
      - {{name: memory, nominalQuota: {memory}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: user-queue}}
spec: {{clusterQueue: cluster-queue}}
"""


def cohort_queue(
    name: str,
    cohort: str,
    cpu: str,
    *,
    borrowing_limit: str | None = None,
    lending_limit: str | None = None,
    preemption: str = "",
    extra: str = "",
    flavor: str = "default-flavor",
) -> str:
    """A ClusterQueue in ``cohort`` with a LocalQueue of the same name in namespace default."""
    limits = ""
    if borrowing_limit is not None:
        limits += f", borrowingLimit: {borrowing_limit}"
    if lending_limit is not None:
        limits += f", lendingLimit: {lending_limit}"
    return f"""
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  namespaceSelector: {{}}
  cohortName: {cohort}
  {preemption}
  {extra}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: {flavor}
      resources:
      - {{name: cpu, nominalQuota: {cpu}{limits}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: {name}}}
spec: {{clusterQueue: {name}}}
"""


FLAVOR = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
"""


def storage_objects(text: str) -> list[Obj]:
    """Manifests validated as the API server would and converted to the storage version
    (v1beta1 Kueue objects become v1beta2 through the registry's conversion)."""
    from kubehpc.api.kinds import build_registry
    from kubehpc.api.registry import FieldValidation

    registry = build_registry()
    out = []
    for obj in manifests(text):
        rt, version = registry.for_kind(obj["apiVersion"], obj["kind"])
        version.validate(obj, FieldValidation.STRICT)
        out.append(rt.to_storage(obj))
    return out


def job_workload(job: Obj, priority: int = 0, created: float = 0.0) -> Obj:
    """The Workload Kueue makes for a batch/v1 Job: one pod set of ``parallelism`` pods,
    ``minCount`` from kueue.x-k8s.io/job-min-parallelism (what the Job adapter does)."""
    meta = job["metadata"]
    name = meta.get("name") or meta["generateName"] + "x1"
    spec = job["spec"]
    ps: Obj = {"name": "main", "count": spec.get("parallelism", 1), "template": spec["template"]}
    min_par = (meta.get("annotations") or {}).get("kueue.x-k8s.io/job-min-parallelism")
    if min_par is not None:
        ps["minCount"] = int(min_par)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"job-{name}",
            "namespace": meta.get("namespace", "default"),
            "uid": f"uid-{name}",
            "creationTimestamp": stamp(created),
        },
        "spec": {
            "queueName": meta["labels"]["kueue.x-k8s.io/queue-name"],
            "priority": priority,
            "podSets": [ps],
        },
    }


def settle(
    setup: Iterable[Obj], workloads: list[Obj], config: AdmissionConfig | None = None, calls: int = 30
) -> list[Obj]:
    """Run ``decide`` repeatedly, applying its decisions the way the runtime does between
    calls (admitted workloads get status.admission; victims release their quota and queue
    again), until nothing changes. Returns the workloads as they end up."""
    import copy

    by_key = {f"{w['metadata']['namespace']}/{w['metadata']['name']}": copy.deepcopy(w) for w in workloads}
    for step in range(calls):
        d = decide(snapshot(list(setup), *by_key.values(), config=config), float(100 + step))
        if not d.admissions and not d.preemptions:
            return list(by_key.values())
        for a in d.admissions:
            wl = by_key[a.workload]
            wl["status"] = {
                "admission": {
                    "clusterQueue": a.cluster_queue,
                    "podSetAssignments": [
                        {
                            "name": ps.admission.name,
                            "flavors": dict(ps.admission.flavors),
                            "resourceUsage": {r: _usage_text(r, v) for r, v in ps.admission.usage},
                            "count": ps.admission.count,
                        }
                        for ps in a.pod_sets
                    ],
                },
                "conditions": [_condition("QuotaReserved", stamp(100 + step))],
            }
        for p in d.preemptions:
            by_key[p.victim]["status"] = {
                "conditions": [_condition("Evicted", stamp(100 + step), "Preempted")]
            }
            by_key[p.victim]["status"]["conditions"][0]["status"] = "True"
    raise AssertionError(f"no steady state after {calls} calls")


def _usage_text(resource: str, value: int) -> str:
    return f"{value}m" if resource == "cpu" else str(value)


def admitted_in(workloads: list[Obj]) -> dict[str, int]:
    """ClusterQueue -> how many of ``workloads`` hold quota there."""
    out: dict[str, int] = {}
    for w in workloads:
        adm = (w.get("status") or {}).get("admission")
        if adm:
            out[adm["clusterQueue"]] = out.get(adm["clusterQueue"], 0) + 1
    return out
