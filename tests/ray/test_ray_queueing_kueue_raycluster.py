"""A RayCluster in a Kueue LocalQueue: suspended on create, one Workload for head and workers,
started whole on admission, and held while the queue's quota is taken.

Runs Kueue's webhook, admission and job reconciler on an in-memory store; no Ray starts (the
RayCluster controller is not run: Kueue's part ends at ``spec.suspend``)."""

from __future__ import annotations

import copy
from typing import Any

from raykit import NS, RAY, cluster_spec, raycluster, worker_group

from kubehpc.api.kinds import build_registry
from kubehpc.controllers.job import FakeClock
from kubehpc.controllers.kueue.admission import AdmissionLoop, AdmissionOptions
from kubehpc.controllers.kueue.jobframework import PodSetInfo
from kubehpc.controllers.kueue.jobs import raycluster as rc
from kubehpc.controllers.kueue.reconciler import JobReconciler
from kubehpc.controllers.kueue.webhooks import DEFAULT_INTEGRATIONS, JobWebhook
from kubehpc.controllers.kueue.workloads import workload_name
from kubehpc.controllers.ray.rayjob import RayJobController
from kubehpc.store.store import Store

Obj = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def queued_cluster(name: str, queue: str = "ray-queue", hosts: int = 2) -> Obj:
    group = worker_group("gpu", 2, 0, 4)
    group["numOfHosts"] = hosts
    obj = raycluster(name, cluster_spec([group]))
    obj["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return obj


class Kueue:
    """Kueue's webhook, admission loop and job reconciler over one store, stepped by hand."""

    def __init__(self, cpu_quota: str) -> None:
        self.clock = FakeClock()
        self.store = Store(build_registry(), None, admission=[JobWebhook()])
        self.admission = AdmissionLoop(
            self.store, AdmissionOptions(check_nodes=False, position_refresh_s=0.0), clock=self.clock
        )
        self.reconciler = JobReconciler(self.store, clock=self.clock)
        self.store.create(
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": {"name": "pool-a"},
                "spec": {"nodeLabels": {"pool": "a"}},
            }
        )
        self.store.create(
            {
                "apiVersion": KUEUE,
                "kind": "ClusterQueue",
                "metadata": {"name": "cq"},
                "spec": {
                    "namespaceSelector": {},
                    "preemption": {"withinClusterQueue": "LowerPriority"},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": "pool-a",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": cpu_quota},
                                        {"name": "memory", "nominalQuota": "100Gi"},
                                    ],
                                }
                            ],
                        }
                    ],
                },
            }
        )
        self.store.create(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": "ray-queue", "namespace": NS},
                "spec": {"clusterQueue": "cq"},
            }
        )
        self.store.create(
            {
                "apiVersion": KUEUE,
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": "high"},
                "value": 1000,
            }
        )
        self.admission.sync()

    def settle(self) -> None:
        for _ in range(20):
            for obj in self.store.list(RAY, "RayCluster").items:
                self.reconciler.reconcile(rc.INTEGRATION, NS, obj["metadata"]["name"])
            self.admission.sync()
            while self.admission.step() is not None or self.admission._backlog:
                pass
        for obj in self.store.list(RAY, "RayCluster").items:
            self.reconciler.reconcile(rc.INTEGRATION, NS, obj["metadata"]["name"])

    def cluster(self, name: str) -> Obj:
        return self.store.get(RAY, "RayCluster", name, NS)

    def workload(self, name: str) -> Obj:
        uid = self.cluster(name)["metadata"]["uid"]
        return self.store.get(KUEUE, "Workload", workload_name(name, uid, RAY, "RayCluster"), NS)

    def workloads(self) -> list[Obj]:
        return list(self.store.list(KUEUE, "Workload").items)


def admitted(wl: Obj) -> bool:
    return any(
        c.get("type") == "Admitted" and c.get("status") == "True"
        for c in (wl.get("status") or {}).get("conditions") or ()
    )


def test_the_raycluster_integration_is_registered_with_kueue() -> None:
    assert rc.INTEGRATION in DEFAULT_INTEGRATIONS


def test_a_queued_raycluster_is_created_suspended() -> None:
    kueue = Kueue("100")
    kueue.store.create(queued_cluster("a"))
    assert kueue.cluster("a")["spec"]["suspend"] is True


def test_a_raycluster_without_a_queue_is_left_alone() -> None:
    kueue = Kueue("100")
    obj = raycluster("free", cluster_spec([worker_group("w", 1, 0, 1)]))
    kueue.store.create(obj)
    kueue.settle()
    assert not kueue.cluster("free")["spec"].get("suspend")
    assert kueue.workloads() == []


def test_one_workload_has_the_head_and_each_worker_group_times_its_hosts() -> None:
    kueue = Kueue("100")
    kueue.store.create(queued_cluster("a", hosts=2))
    kueue.settle()
    pod_sets = kueue.workload("a")["spec"]["podSets"]
    assert [(p["name"], p["count"]) for p in pod_sets] == [("head", 1), ("gpu", 4)]
    assert len(kueue.workloads()) == 1


def test_admission_unsuspends_the_cluster_with_the_flavors_node_selector_on_every_template() -> None:
    kueue = Kueue("100")
    kueue.store.create(queued_cluster("a"))
    kueue.settle()
    spec = kueue.cluster("a")["spec"]
    assert admitted(kueue.workload("a"))
    assert spec["suspend"] is False
    assert spec["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"pool": "a"}
    assert spec["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] == {"pool": "a"}


def test_a_second_cluster_over_quota_waits_suspended_until_the_first_is_deleted() -> None:
    # Each cluster asks 100m (head) + 4 x 100m (2 workers x 2 hosts) = 500m; the quota holds one.
    kueue = Kueue("800m")
    kueue.store.create(queued_cluster("first"))
    kueue.settle()
    kueue.store.create(queued_cluster("second"))
    kueue.settle()
    assert kueue.cluster("first")["spec"]["suspend"] is False
    assert kueue.cluster("second")["spec"]["suspend"] is True
    assert not admitted(kueue.workload("second"))

    first_wl = kueue.workload("first")["metadata"]["name"]
    kueue.store.delete(RAY, "RayCluster", "first", NS)
    kueue.store.delete(KUEUE, "Workload", first_wl, NS)  # the garbage collector's part (owner gone)
    kueue.settle()
    assert admitted(kueue.workload("second"))
    assert kueue.cluster("second")["spec"]["suspend"] is False


def test_eviction_suspends_the_cluster_and_restores_its_templates() -> None:
    job = rc.RayClusterAdapter(copy.deepcopy(queued_cluster("a")))
    job.suspend()
    queued = [PodSetInfo.original(p) for p in job.pod_sets()]
    job.run_with_pod_set_info([PodSetInfo(p.name, p.count, node_selector={"pool": "a"}) for p in queued])
    assert job.is_suspended() is False
    job.suspend()
    assert job.restore_pod_set_info(queued)
    assert job.is_suspended()
    assert "nodeSelector" not in job.object["spec"]["headGroupSpec"]["template"]["spec"]


def test_a_cluster_being_suspended_stays_active_until_its_controller_reports_no_pods() -> None:
    obj = queued_cluster("a")
    obj["status"] = {"state": "ready", "readyWorkerReplicas": 4, "availableWorkerReplicas": 4}
    assert rc.RayClusterAdapter(obj).is_active()
    obj["status"] = {"state": "suspended", "readyWorkerReplicas": 0, "availableWorkerReplicas": 0}
    assert not rc.RayClusterAdapter(obj).is_active()


def test_the_cluster_of_a_queued_rayjob_gets_no_workload_of_its_own() -> None:
    # The RayJob's Workload covers the cluster's pods; the cluster it makes names no queue.
    kueue = Kueue("100")
    job = kueue.store.create(
        {
            "apiVersion": RAY,
            "kind": "RayJob",
            "metadata": {"name": "j", "namespace": NS, "labels": {QUEUE_LABEL: "ray-queue"}},
            "spec": {"entrypoint": "true", "rayClusterSpec": cluster_spec([worker_group("w", 1, 0, 1)])},
        }
    )
    RayJobController(kueue.store)._create_cluster(job, {"rayClusterName": "j-cluster"})
    kueue.settle()
    cluster = kueue.cluster("j-cluster")
    assert cluster["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    assert not cluster["spec"].get("suspend")
    assert kueue.workloads() == []  # only RayClusters are reconciled here: the RayJob's is not made


def test_a_preempted_cluster_is_suspended_with_its_templates_restored_and_its_quota_freed() -> None:
    kueue = Kueue("800m")
    kueue.store.create(queued_cluster("low"))
    kueue.settle()
    assert kueue.cluster("low")["spec"]["suspend"] is False
    urgent = queued_cluster("urgent")
    urgent["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    kueue.store.create(urgent)
    kueue.settle()
    low = kueue.cluster("low")["spec"]
    assert low["suspend"] is True
    assert "nodeSelector" not in low["headGroupSpec"]["template"]["spec"]
    assert not admitted(kueue.workload("low"))
    assert admitted(kueue.workload("urgent"))
    assert kueue.cluster("urgent")["spec"]["suspend"] is False
