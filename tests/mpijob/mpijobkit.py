"""In-process kit for MPIJob controller tests: the store with the real kinds, the controller
with recorded events, and a hand-moved stand-in for the kubelet and the Job controller."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import Registry
from kubehpc.controllers.mpijob import Embedded, HostCheck, MPIJobController
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store

Obj = dict[str, Any]
NS = "default"


@functools.cache
def registry(extra: tuple[str, ...] = ()) -> Registry:
    return build_registry(("kubehpc.api.kinds.core", "kubehpc.api.kinds.kubeflow", *extra))


def manifest(name: str = "pi", workers: int = 2, **spec: Any) -> Obj:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "slotsPerWorker": 2,
            **spec,
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [{"name": "l", "image": "mpi", "command": ["mpirun", "hostname"]}]
                        }
                    },
                },
                "Worker": {
                    "replicas": workers,
                    "template": {"spec": {"containers": [{"name": "w", "image": "mpi"}]}},
                },
            },
        },
    }


class Harness:
    def __init__(
        self,
        tmp: Path,
        *,
        installed: tuple[str, ...] = ("mpirun",),
        embedded: bool = True,
        kinds: tuple[str, ...] = (),
    ) -> None:
        self.store = Store(registry(kinds), tmp / "store.db")
        self.events: list[tuple[str, str, str]] = []
        host = HostCheck(lambda prog, path: f"/usr/bin/{prog}" if prog in installed else None, "/usr/bin")
        self.controller = MPIJobController(
            self.store,
            embedded=Embedded("/home/x/bin/kubehpc-launch") if embedded else None,
            host=host if embedded else None,
            events=lambda obj, type_, reason, message: self.events.append((type_, reason, message)),
        )

    def apply(self, obj: Obj) -> Obj:
        return self.store.create(copy.deepcopy(obj))

    def sync(self, name: str = "pi") -> Obj:
        self.controller.reconcile(NS, name)
        return self.store.get("kubeflow.org/v2beta1", "MPIJob", name, NS)

    def get(self, api_version: str, kind: str, name: str) -> Obj:
        return self.store.get(api_version, kind, name, NS)

    def pods(self, role: str = "worker") -> list[Obj]:
        sel = f"training.kubeflow.org/job-role={role}"
        return self.store.list("v1", "Pod", ListOptions(namespace=NS, label_selector=sel)).items

    def set_pod_phase(self, name: str, phase: str, ready: bool = False) -> None:
        pod = self.get("v1", "Pod", name)
        pod["status"] = {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        }
        self.store.update_status(pod)

    def launcher_pod(self, phase: str) -> Obj:
        """A pod of the launcher Job (what the Job controller would create)."""
        job = self.get("batch/v1", "Job", "pi-launcher")
        pod = self.store.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "pi-launcher-abcde",
                    "namespace": NS,
                    "ownerReferences": [
                        {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "name": "pi-launcher",
                            "uid": job["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": job["spec"]["template"]["spec"],
            }
        )
        pod["status"] = {"phase": phase}
        return self.store.update_status(pod)

    def finish_launcher(self, condition: str, reason: str = "", message: str = "") -> None:
        job = self.get("batch/v1", "Job", "pi-launcher")
        cond = {"type": condition, "status": "True", "reason": reason or condition, "message": message}
        job["status"] = {
            "conditions": [cond],
            "completionTime": "2026-01-01T00:00:00Z",
            "failed": 1 if condition == "Failed" else 0,
        }
        if condition == "Complete":
            job["status"]["conditions"].insert(0, {"type": "SuccessCriteriaMet", "status": "True"})
        self.store.update_status(job)


def condition(obj: Obj, type_: str) -> Obj | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == type_), None)
