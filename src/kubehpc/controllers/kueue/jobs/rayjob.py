"""The RayJob as a Kueue job (Kueue's ``pkg/controller/jobs/rayjob``).

Pod sets: ``head`` (1 pod), one per worker group named after it (``replicas`` x
``numOfHosts`` pods), and ``submitter`` (1 pod) in K8sJobMode, admitted together as one
Workload, so the Ray cluster starts whole or not at all. Suspension is ``spec.suspend``: the
RayJob controller then deletes the cluster and the submitter. A RayJob that uses an existing
cluster (``clusterSelector``) has no pods of its own to queue, as in Kueue.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubehpc.api import fields as F
from kubehpc.controllers.kueue.jobframework import (
    Integration,
    PodSetInfo,
    SpecJob,
    merge_into_template,
    restore_template,
)

Obj = dict[str, Any]
API_VERSION = "ray.io/v1"
KIND = "RayJob"
HEAD = "head"
SUBMITTER = "submitter"
# The submitter pod KubeRay makes when the RayJob gives no template of its own.
SUBMITTER_TEMPLATE: Obj = {
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {"name": "ray-job-submitter", "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}}}
        ],
    }
}
ACTIVE_STATES = ("Initializing", "Running", "Suspending", "Retrying", "Waiting")


def worker_count(group: Obj) -> int:
    if group.get("suspend"):
        return 0
    lo = int(group.get("minReplicas") or 0)
    hi = group.get("maxReplicas")
    n = int(group["replicas"]) if group.get("replicas") is not None else lo
    n = max(lo, n if hi is None else min(int(hi), n))
    return n * int(group.get("numOfHosts") or 1)


class RayJobAdapter(SpecJob):
    def _templates(self) -> list[tuple[str, Obj, int]]:
        """(pod set name, the template to merge admission into, count)."""
        cluster = F.obj_field(self.spec, "rayClusterSpec")
        out: list[tuple[str, Obj, int]] = []
        head = cluster.get("headGroupSpec")
        if isinstance(head, dict):
            out.append((HEAD, head.setdefault("template", {}), 1))
        for group in cluster.get("workerGroupSpecs") or ():
            out.append((str(group.get("groupName")), group.setdefault("template", {}), worker_count(group)))
        if self.spec.get("submissionMode", "K8sJobMode") == "K8sJobMode":
            template = self.spec.get("submitterPodTemplate")
            out.append((SUBMITTER, template if isinstance(template, dict) else {}, 1))
        return out

    def run_with_pod_set_info(self, infos: Sequence[PodSetInfo]) -> None:
        templates = self._templates()
        if len(infos) != len(templates):
            raise ValueError(f"a RayJob has {len(templates)} pod sets, the admission has {len(infos)}")
        self.spec["suspend"] = False
        for (name, template, _), info in zip(templates, infos, strict=True):
            if name == SUBMITTER and "submitterPodTemplate" not in self.spec:
                continue  # KubeRay builds the submitter; nothing of the user's to change
            merge_into_template(template, info)

    def restore_pod_set_info(self, infos: Sequence[PodSetInfo]) -> bool:
        changed = False
        for (name, template, _), info in zip(self._templates(), infos, strict=False):
            if name == SUBMITTER and "submitterPodTemplate" not in self.spec:
                continue
            changed = restore_template(template, info) or changed
        return changed

    def finished(self) -> tuple[str, bool, bool]:
        status = F.status(self._obj)
        state = status.get("jobDeploymentStatus")
        if state in ("Complete", "Failed", "ValidationFailed"):
            success = state == "Complete"
            message = str(status.get("message") or ("RayJob finished" if success else "RayJob failed"))
            return message, success, True
        return "", False, False

    def pod_sets(self) -> list[Obj]:
        if self.spec.get("clusterSelector"):
            return []
        sets = []
        for name, template, count in self._templates():
            tmpl = template if template else (SUBMITTER_TEMPLATE if name == SUBMITTER else {})
            sets.append({"name": name, "template": tmpl, "count": count})
        return sets

    def is_active(self) -> bool:
        return F.status(self._obj).get("jobDeploymentStatus") in ACTIVE_STATES

    def priority_class(self) -> str:
        head = F.obj_field(F.obj_field(F.obj_field(self.spec, "rayClusterSpec"), "headGroupSpec"), "template")
        return str(F.spec(head).get("priorityClassName") or "")


def new_job(obj: Obj) -> RayJobAdapter:
    return RayJobAdapter(obj)


INTEGRATION: Integration = Integration(API_VERSION, KIND, new_job)
