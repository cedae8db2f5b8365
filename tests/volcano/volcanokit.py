"""Test kit for Volcano: the Job controller and the queue loop on an in-memory Store with the
full registry, nodes of a given size, and a hand-driven scheduler and kubelet (bind a pod,
run it, finish it) — the gang scheduler itself is not part of these tests."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

from kubehpc.api.errors import NotFound
from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import Registry
from kubehpc.controllers.volcano import VolcanoJobController, VolcanoQueueController
from kubehpc.sched.volcano import Decisions
from kubehpc.store.client import ListOptions
from kubehpc.store.events import EventRecorder
from kubehpc.store.store import Store

Obj = dict[str, Any]
NS = "default"
JOB = "batch.volcano.sh/v1alpha1"
SCHED = "scheduling.volcano.sh/v1beta1"
SAMPLES = Path("/work/shared/samples/manifests/volcano")


@functools.cache
def registry() -> Registry:
    return build_registry()


def container(name: str = "main", cpu: str = "1", command: list[str] | None = None) -> Obj:
    return {
        "name": name,
        "image": "busybox",
        "command": command or ["true"],
        "resources": {"requests": {"cpu": cpu}},
    }


def task(name: str, replicas: int, cpu: str = "1", **extra: Any) -> Obj:
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"restartPolicy": "Never", "containers": [container(cpu=cpu)]}},
        **extra,
    }


def vcjob(name: str, *tasks: Obj, **spec: Any) -> Obj:
    return {
        "apiVersion": JOB,
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulerName": "volcano", "tasks": list(tasks), **spec},
    }


def queue(name: str, **spec: Any) -> Obj:
    return {"apiVersion": SCHED, "kind": "Queue", "metadata": {"name": name}, "spec": spec}


class Volcano:
    """A Store with nodes, the Volcano controllers, and a hand-driven kubelet."""

    def __init__(self, nodes: dict[str, str] | None = None) -> None:
        self.store = Store(registry(), None)
        self.jobs = VolcanoJobController(self.store, events=EventRecorder(self.store, "vc-controller").record)
        self.queues = VolcanoQueueController(
            self.store, events=EventRecorder(self.store, "vc-scheduler").record
        )
        self.queues.ensure_default_queue()
        for name, cpu in (nodes or {"node-0": "8"}).items():
            self.add_node(name, cpu)
        self.last: Decisions | None = None
        self.reclaimed: list[str] = []  # victims of every cycle so far

    def add_node(self, name: str, cpu: str) -> None:
        node = self.store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}})
        allocatable = {"cpu": cpu, "memory": "64Gi", "pods": "110"}
        node["status"] = {"allocatable": allocatable, "capacity": allocatable}
        self.store.update_status(node)

    # --- objects ---------------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        return self.store.create(copy.deepcopy(obj))

    def job(self, name: str) -> Obj:
        return self.store.get(JOB, "Job", name, NS)

    def phase(self, name: str) -> str:
        return str(((self.job(name).get("status") or {}).get("state") or {}).get("phase") or "")

    def state(self, name: str) -> Obj:
        return dict((self.job(name).get("status") or {}).get("state") or {})

    def podgroup(self, job_name: str) -> Obj:
        job = self.job(job_name)
        return self.store.get(SCHED, "PodGroup", f"{job_name}-{job['metadata']['uid']}", NS)

    def pg_phase(self, job_name: str) -> str:
        return str((self.podgroup(job_name).get("status") or {}).get("phase") or "")

    def queue_status(self, name: str) -> Obj:
        return dict(self.store.get(SCHED, "Queue", name).get("status") or {})

    def pods(self, job_name: str) -> dict[str, Obj]:
        listed = self.store.list(
            "v1", "Pod", ListOptions(namespace=NS, label_selector=f"volcano.sh/job-name={job_name}")
        )
        return {p["metadata"]["name"]: p for p in listed.items}

    def pod(self, name: str) -> Obj:
        return self.store.get("v1", "Pod", name, NS)

    def events(self, name: str) -> list[tuple[str, str]]:
        items = self.store.list("v1", "Event", ListOptions(namespace=NS)).items
        mine = [e for e in items if e["involvedObject"].get("name") == name]
        return [
            (e["reason"], e["message"])
            for e in sorted(mine, key=lambda e: int(e["metadata"]["resourceVersion"]))
        ]

    # --- driving the controllers ------------------------------------------------------------

    def sync(self, *names: str, rounds: int = 8) -> None:
        """Queue cycles and Job reconciles, in turn, until nothing changes."""
        for _ in range(rounds):
            before = self._fingerprint()
            self.last = self.queues.cycle()
            self.reclaimed += [r.victim for r in self.last.reclaim]
            for name in names:
                self.jobs.reconcile(NS, name)
            if self._fingerprint() == before:
                return

    def _fingerprint(self) -> list[tuple[str, str]]:
        out = []
        for av, kind in ((JOB, "Job"), (SCHED, "PodGroup"), (SCHED, "Queue"), ("v1", "Pod")):
            for o in self.store.list(av, kind).items:
                out.append(
                    (
                        f"{kind}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}",
                        o["metadata"]["resourceVersion"],
                    )
                )
        return sorted(out)

    # --- scheduler and kubelet stand-ins -----------------------------------------------------

    def bind(self, pod_name: str, node: str = "node-0") -> None:
        self.store.create(
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod_name, "namespace": NS},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            }
        )

    def bind_all(self, job_name: str, node: str = "node-0") -> None:
        for name, pod in self.pods(job_name).items():
            if not pod["spec"].get("nodeName"):
                self.bind(name, node)

    def set_phase(self, pod_name: str, phase: str, exit_code: int | None = None) -> None:
        pod = self.pod(pod_name)
        status: Obj = {"phase": phase}
        if exit_code is not None:
            status["containerStatuses"] = [
                {
                    "name": ct["name"],
                    "image": ct.get("image", ""),
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed"}
                    },
                }
                for ct in pod["spec"]["containers"]
            ]
        pod["status"] = {**(pod.get("status") or {}), **status}
        self.store.update_status(pod)

    def run_all(self, job_name: str) -> None:
        self.bind_all(job_name)
        for name in self.pods(job_name):
            self.set_phase(name, "Running")

    def finish(self, pod_name: str, exit_code: int = 0) -> None:
        self.set_phase(pod_name, "Succeeded" if exit_code == 0 else "Failed", exit_code)

    def evict(self, pod_name: str) -> None:
        """Someone other than the Job controller deletes the pod (preemption, drain)."""
        self.store.delete("v1", "Pod", pod_name, NS)

    def gone(self, pod_name: str) -> bool:
        """The kubelet confirms the deletion of a pod that was on a node."""
        try:
            pod = self.pod(pod_name)
        except NotFound:
            return True
        if pod["metadata"].get("deletionTimestamp"):
            from kubehpc.store.client import DeleteOptions

            self.store.delete("v1", "Pod", pod_name, NS, DeleteOptions(grace_period_seconds=0))
            return True
        return False

    def reap(self, job_name: str) -> None:
        for name in list(self.pods(job_name)):
            self.gone(name)


def sample(name: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d]
