"""Test kit for Kueue admission on the embedded store: the store with kubehpc's admission hooks,
the real Job controller on a hand-moved clock, the job reconciler, the admission loop, and the
kubelet stand-in of ``jobkit`` to finish pods.

``settle()`` runs every component once per round, in a fixed order, until a round writes
nothing: a deterministic stand-in for the threads that run them in the control plane.
"""

from __future__ import annotations

import copy
import functools
import sys
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from kubehpc.api.kinds import build_registry
from kubehpc.api.registry import Registry
from kubehpc.controllers.job import FakeClock
from kubehpc.controllers.kueue.admission import AdmissionLoop, AdmissionOptions
from kubehpc.controllers.kueue.jobs import batchjob
from kubehpc.controllers.kueue.metrics import KueueMetrics
from kubehpc.controllers.kueue.reconciler import JobReconciler
from kubehpc.controllers.kueue.webhooks import JobWebhook, PodPriorityHook
from kubehpc.controllers.kueue.workloads import workload_name
from kubehpc.sched.planned import HOSTNAME_LEVEL
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store

# jobkit (the Job controller's kit, one directory up) brings the kubelet stand-in.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import jobkit

Obj = dict[str, Any]
NS = "default"
KUEUE = "kueue.x-k8s.io/v1beta2"


@functools.cache
def registry() -> Registry:
    return build_registry()


def node(name: str, cpu: str = "4") -> Obj:
    """A ready Node with its hostname label (the level admission records its choice at)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME_LEVEL: name}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def flavor(name: str, node_labels: dict[str, str] | None = None, tolerations: list[Obj] | None = None) -> Obj:
    spec: Obj = {}
    if node_labels:
        spec["nodeLabels"] = node_labels
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cluster_queue(
    name: str,
    quotas: dict[str, dict[str, Any]],
    *,
    cohort: str | None = None,
    preemption: Obj | None = None,
    **spec: Any,
) -> Obj:
    """``quotas``: flavor -> resource -> nominal quota, flavors in the order to try them."""
    resources = sorted({r for per_flavor in quotas.values() for r in per_flavor})
    body: Obj = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": resources,
                "flavors": [
                    {"name": f, "resources": [{"name": r, "nominalQuota": q} for r, q in per.items()]}
                    for f, per in quotas.items()
                ],
            }
        ],
        **spec,
    }
    if cohort:
        body["cohortName"] = cohort
    if preemption:
        body["preemption"] = preemption
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def local_queue(name: str, cq: str, namespace: str = NS) -> Obj:
    return {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


def priority_class(name: str, value: int) -> Obj:
    return {"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def queued_job(
    name: str,
    queue: str = "user-queue",
    *,
    parallelism: int = 1,
    completions: int | None = None,
    cpu: str = "1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    job = jobkit.job_manifest(
        name,
        parallelism=parallelism,
        completions=completions if completions is not None else parallelism,
        containers=[
            {"name": "main", "image": "busybox", "command": ["true"], "resources": {"requests": {"cpu": cpu}}}
        ],
    )
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue, **(labels or {})}
    if annotations:
        job["metadata"]["annotations"] = annotations
    return job


class KueueCluster:
    def __init__(self, **options: Any) -> None:
        self.clock = FakeClock()
        hooks = [JobWebhook(), PodPriorityHook(lambda: self.store)]
        self.store = Store(registry(), None, admission=hooks)
        self.kubelet = jobkit.Cluster(store=self.store, clock=self.clock)
        self.registry = CollectorRegistry()
        self.metrics = KueueMetrics(self.registry)
        options.setdefault("check_nodes", False)
        options.setdefault("position_refresh_s", 0.0)
        self.admission = AdmissionLoop(
            self.store, AdmissionOptions(**options), clock=self.clock, metrics=self.metrics
        )
        self.admission.sync()
        self.reconciler = JobReconciler(self.store, clock=self.clock)

    # --- writing -----------------------------------------------------------------------------

    def create(self, *objs: Obj) -> list[Obj]:
        return [self.store.create(copy.deepcopy(o)) for o in objs]

    def submit(self, *jobs: Obj) -> None:
        """Create jobs one at a time, settling after each: creation times have whole seconds
        and ties go by uid, so jobs created together would be admitted in a random order."""
        for job in jobs:
            self.create(job)
            self.settle()

    def apply_yaml(self, text: str) -> list[Obj]:
        docs = [d for d in yaml.safe_load_all(text) if d]
        return self.create(*docs)

    # --- running the components --------------------------------------------------------------

    def settle(self, rounds: int = 30) -> None:
        """Run reconciler, Job controller and admission until a full round writes nothing."""
        for _ in range(rounds):
            before = self._state_version()
            for job in self.store.list("batch/v1", "Job", ListOptions(namespace=NS)).items:
                name = job["metadata"]["name"]
                self.reconciler.reconcile(batchjob.INTEGRATION, NS, name)
                self.kubelet.controller.reconcile(NS, name)
            self.admission.sync()
            while self.admission.step() is not None or self.admission._backlog:
                pass
            if self._state_version() == before:
                return
        raise AssertionError("the cluster did not settle")

    def _state_version(self) -> int:
        """The newest write to anything but Events (a repeated event is no progress)."""
        newest = 0
        for api_version, kind in (
            ("batch/v1", "Job"),
            ("v1", "Pod"),
            (KUEUE, "Workload"),
            (KUEUE, "ClusterQueue"),
            (KUEUE, "LocalQueue"),
        ):
            for obj in self.store.list(api_version, kind).items:
                newest = max(newest, int(obj["metadata"]["resourceVersion"]))
        return newest

    def finish_pods(self, job_name: str, succeeded: bool = True) -> None:
        for pod in self.kubelet.active(job_name):
            self.kubelet.finish(pod, 0 if succeeded else 1)

    # --- reading -----------------------------------------------------------------------------

    def job(self, name: str) -> Obj:
        return self.store.get("batch/v1", "Job", name, NS)

    def workload(self, job_name: str) -> Obj:
        job = self.job(job_name)
        name = workload_name(job_name, job["metadata"]["uid"], "batch/v1", "Job")
        return self.store.get(KUEUE, "Workload", name, NS)

    def condition(self, obj: Obj, ctype: str) -> Obj | None:
        for cond in (obj.get("status") or {}).get("conditions") or ():
            if cond["type"] == ctype:
                return dict(cond)
        return None

    def cluster_queue(self, name: str) -> Obj:
        return self.store.get(KUEUE, "ClusterQueue", name)

    def local_queue(self, name: str) -> Obj:
        return self.store.get(KUEUE, "LocalQueue", name, NS)

    def events(self, name: str) -> list[tuple[str, str]]:
        return self.kubelet.events(name)

    def metric(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)
