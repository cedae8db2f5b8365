"""The PodGroup a Volcano Job runs as: its gang size, per-task minimums and the resources the
gang's first ``minAvailable`` pods request (what its queue must have room for)."""

from __future__ import annotations

from typing import Any

from kubehpc.controllers.volcano import constants as c
from kubehpc.controllers.volcano.view import JobView
from kubehpc.sched.podspec import pod_requests

Obj = dict[str, Any]


def min_resources(view: JobView) -> dict[str, int]:
    """Requests of the pods the gang needs at least: each task's minAvailable first, then
    more pods in task order until the Job's minAvailable (as Volcano's calcPGMinResources)."""
    total: dict[str, int] = {}
    counted = {t.name: 0 for t in view.tasks}

    def take(task_name: str, n: int) -> None:
        task = view.task(task_name)
        if task is None or n <= 0:
            return
        per_pod = pod_requests(task.template.get("spec") or {})
        for k, v in per_pod.items():
            total[k] = total.get(k, 0) + v * n
        counted[task_name] += n

    left = view.min_available
    for t in view.tasks:
        n = min(t.min_available, left)
        take(t.name, n)
        left -= n
    for t in view.tasks:
        n = min(t.replicas - counted[t.name], left)
        take(t.name, n)
        left -= max(n, 0)
    return total


def quantity(name: str, units: int) -> str:
    """``resource_units`` back to a quantity string (cpu is counted in millicores)."""
    return f"{units}m" if name == "cpu" else str(units)


def podgroup_for(job: Obj, view: JobView) -> Obj:
    spec = job.get("spec") or {}
    pg_spec: Obj = {
        "minMember": view.min_available,
        "minTaskMember": {t.name: t.min_available for t in view.tasks},
        "minResources": {k: quantity(k, v) for k, v in sorted(min_resources(view).items())},
        "queue": view.queue,
    }
    if view.priority_class_name:
        pg_spec["priorityClassName"] = view.priority_class_name
    if spec.get("networkTopology"):
        pg_spec["networkTopology"] = spec["networkTopology"]
    meta = job["metadata"]
    return {
        "apiVersion": c.PODGROUP_API_VERSION,
        "kind": c.PODGROUP_KIND,
        "metadata": {
            "name": view.podgroup_name,
            "namespace": view.namespace,
            "labels": {c.JOB_NAME_KEY: view.name, c.JOB_NAMESPACE_KEY: view.namespace},
            "annotations": {c.JOB_NAME_KEY: view.name},
            "ownerReferences": [
                {
                    "apiVersion": c.JOB_API_VERSION,
                    "kind": c.JOB_KIND,
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": pg_spec,
        "status": {"phase": c.PG_PENDING},
    }
