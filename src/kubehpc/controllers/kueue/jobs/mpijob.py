"""The MPIJob as a Kueue job (Kueue's ``pkg/controller/jobs/mpijob``).

Pod sets in the operator's replica order: ``launcher`` (1 pod) then ``worker`` (``replicas``
pods), admitted together as one Workload, so the whole gang starts or nothing does. Suspension
is ``spec.runPolicy.suspend`` (the MPI Operator then deletes the workers and suspends the
launcher Job). The priority class is ``runPolicy.schedulingPolicy.priorityClass``, else the
launcher's, else the worker's ``priorityClassName``.
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
API_VERSION = "kubeflow.org/v2beta1"
KIND = "MPIJob"
ROLES = ("Launcher", "Worker")


class MPIJobAdapter(SpecJob):
    def _replicas(self) -> list[tuple[str, Obj]]:
        specs = F.obj_field(self.spec, "mpiReplicaSpecs")
        return [(role, specs[role]) for role in ROLES if isinstance(specs.get(role), dict)]

    def is_suspended(self) -> bool:
        return bool(F.obj_field(self.spec, "runPolicy").get("suspend"))

    def suspend(self) -> None:
        self.spec.setdefault("runPolicy", {})["suspend"] = True

    def run_with_pod_set_info(self, infos: Sequence[PodSetInfo]) -> None:
        replicas = self._replicas()
        if len(infos) != len(replicas):
            raise ValueError(f"an MPIJob has {len(replicas)} pod sets, the admission has {len(infos)}")
        self.spec.setdefault("runPolicy", {})["suspend"] = False
        for (_, replica), info in zip(replicas, infos, strict=True):
            merge_into_template(replica.setdefault("template", {}), info)

    def restore_pod_set_info(self, infos: Sequence[PodSetInfo]) -> bool:
        changed = False
        for (_, replica), info in zip(self._replicas(), infos, strict=False):
            changed = restore_template(replica.setdefault("template", {}), info) or changed
        return changed

    def finished(self) -> tuple[str, bool, bool]:
        for cond in F.object_list(F.status(self._obj), "conditions"):
            if cond.get("type") in ("Succeeded", "Failed") and cond.get("status") == "True":
                success = cond["type"] == "Succeeded"
                message = str(cond.get("message") or ("MPIJob finished" if success else "MPIJob failed"))
                return message, success, True
        return "", False, False

    def pod_sets(self) -> list[Obj]:
        return [
            {
                "name": role.lower(),
                "template": replica.get("template") or {},
                "count": 1 if role == "Launcher" else int(replica.get("replicas", 1) or 0),
            }
            for role, replica in self._replicas()
        ]

    def is_active(self) -> bool:
        statuses = F.obj_field(F.status(self._obj), "replicaStatuses")
        return any(int((s or {}).get("active") or 0) > 0 for s in statuses.values())

    def priority_class(self) -> str:
        policy = F.obj_field(F.obj_field(self.spec, "runPolicy"), "schedulingPolicy")
        if policy.get("priorityClass"):
            return str(policy["priorityClass"])
        for _, replica in self._replicas():
            name = F.spec(F.obj_field(replica, "template")).get("priorityClassName")
            if name:
                return str(name)
        return ""


def new_job(obj: Obj) -> MPIJobAdapter:
    return MPIJobAdapter(obj)


INTEGRATION: Integration = Integration(API_VERSION, KIND, new_job)
