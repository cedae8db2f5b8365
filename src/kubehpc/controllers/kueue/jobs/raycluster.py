"""The RayCluster as a Kueue job (Kueue's ``pkg/controller/jobs/raycluster``).

Pod sets: ``head`` (1 pod), then one per worker group named after it (``replicas`` x
``numOfHosts`` pods, as the RayJob adapter counts them), admitted together as one Workload, so
the cluster starts whole or not at all. Suspension is ``spec.suspend``: the RayCluster
controller then deletes every pod of the cluster.

A RayCluster made by a RayJob is the RayJob's: the RayJob's Workload covers its pods. The
RayJob controller does not copy the ``kueue.x-k8s.io/*`` labels onto the cluster it makes, so
such a cluster never names a queue and gets no Workload of its own, as in Kueue.
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
from kubehpc.controllers.kueue.jobs.rayjob import HEAD, worker_count

Obj = dict[str, Any]
API_VERSION = "ray.io/v1"
KIND = "RayCluster"


class RayClusterAdapter(SpecJob):
    def _templates(self) -> list[tuple[str, Obj, int]]:
        """(pod set name, the template to merge admission into, count)."""
        out: list[tuple[str, Obj, int]] = []
        head = self.spec.get("headGroupSpec")
        if isinstance(head, dict):
            out.append((HEAD, head.setdefault("template", {}), 1))
        for group in self.spec.get("workerGroupSpecs") or ():
            out.append((str(group.get("groupName")), group.setdefault("template", {}), worker_count(group)))
        return out

    def run_with_pod_set_info(self, infos: Sequence[PodSetInfo]) -> None:
        templates = self._templates()
        if len(infos) != len(templates):
            raise ValueError(f"a RayCluster has {len(templates)} pod sets, the admission has {len(infos)}")
        self.spec["suspend"] = False
        for (_, template, _), info in zip(templates, infos, strict=True):
            merge_into_template(template, info)

    def restore_pod_set_info(self, infos: Sequence[PodSetInfo]) -> bool:
        changed = False
        for (_, template, _), info in zip(self._templates(), infos, strict=False):
            changed = restore_template(template, info) or changed
        return changed

    def finished(self) -> tuple[str, bool, bool]:
        # As in Kueue, a RayCluster never finishes: it holds its quota until suspended or deleted.
        return "", False, False

    def pod_sets(self) -> list[Obj]:
        return [
            {"name": name, "template": template, "count": count}
            for name, template, count in self._templates()
        ]

    def is_active(self) -> bool:
        # The controller writes zero counts and state "suspended" once the pods are gone.
        status = F.status(self._obj)
        workers = int(status.get("readyWorkerReplicas") or 0) + int(
            status.get("availableWorkerReplicas") or 0
        )
        return workers > 0 or status.get("state") == "ready"

    def priority_class(self) -> str:
        head = F.obj_field(F.obj_field(self.spec, "headGroupSpec"), "template")
        return str(F.spec(head).get("priorityClassName") or "")


def new_job(obj: Obj) -> RayClusterAdapter:
    return RayClusterAdapter(obj)


INTEGRATION: Integration = Integration(API_VERSION, KIND, new_job)
