"""A RayCluster labelled ``ray.io/scheduler-name: volcano`` is one Volcano gang, as KubeRay
makes it: the PodGroup ``ray-<cluster>-pg``, pods that name it, admission by its queue, and
binding all-or-none.

The RayCluster controller (pods as plain objects, no Ray started), Volcano's queue loop and the
scheduler with its gang step run on an in-memory store with one 8-CPU node; each is stepped by
hand, so nothing runs in the background and no pod starts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from raykit import NS, RAY, cluster_spec, node_template, raycluster, worker_group

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "volcano"))
from volcanogangkit import SCHED, GangPlane
from volcanogangkit import capped_queue as queue

from kubehpc.controllers.ray import volcano as V
from kubehpc.controllers.ray.cluster import RayClusterController
from kubehpc.controllers.ray.rayjob import RayJobController
from kubehpc.store.client import ListOptions

Obj = dict[str, Any]


def volcano_cluster(name: str, queue: str, *, workers: int = 2, hosts: int = 1, **labels: str) -> Obj:
    group = worker_group("cpu", workers, 1, 4)
    group["numOfHosts"] = hosts
    group["template"] = node_template("ray-worker", cpu="1")
    group["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1", "memory": "1Gi"}
    spec = cluster_spec([group])
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {
        "cpu": "1",
        "memory": "1Gi",
    }
    obj = raycluster(name, spec)
    obj["metadata"]["labels"] = {V.SCHEDULER_NAME_LABEL: "volcano", "volcano.sh/queue-name": queue, **labels}
    return obj


class Plane(GangPlane):
    def __init__(self) -> None:
        super().__init__(self._reconcile)
        self.rays = RayClusterController(self.store)

    def _reconcile(self) -> None:
        for cluster in self.store.list(RAY, "RayCluster").items:
            self.rays.reconcile(NS, cluster["metadata"]["name"])

    def pods(self, cluster: str) -> list[Obj]:
        return list(
            self.store.list(
                "v1", "Pod", ListOptions(namespace=NS, label_selector=f"ray.io/cluster={cluster}")
            ).items
        )

    def bound(self, cluster: str) -> int:
        return sum(1 for p in self.pods(cluster) if (p.get("spec") or {}).get("nodeName"))

    def pod_group(self, cluster: str) -> Obj:
        return self.store.get(SCHED, "PodGroup", f"ray-{cluster}-pg", NS)


@pytest.fixture
def plane() -> Iterator[Plane]:
    p = Plane()
    try:
        yield p
    finally:
        p.scheduler.stop()


def test_the_pod_group_is_named_and_sized_as_kuberay_makes_it() -> None:
    cluster = volcano_cluster("c", "q", workers=2, hosts=2, **{V.PRIORITY_CLASS_LABEL: "high"})
    cluster["metadata"]["uid"] = "u-1"
    pg = V.pod_group(cluster)
    assert pg["metadata"]["name"] == "ray-c-pg"
    assert pg["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
    # head + 2 replicas x 2 hosts; each pod requests 1 CPU and 1Gi
    assert pg["spec"] == {
        "minMember": 5,
        "minResources": {"cpu": "5000m", "memory": str(5 * 2**30)},
        "queue": "q",
        "priorityClassName": "high",
    }


def test_an_autoscaled_cluster_gangs_only_its_minimum_workers() -> None:
    cluster = volcano_cluster("c", "q", workers=3)
    cluster["spec"]["enableInTreeAutoscaling"] = True
    assert V.pod_group(cluster)["spec"]["minMember"] == 1 + 1  # head + minReplicas 1


def test_a_cluster_without_the_volcano_label_gets_no_pod_group_and_plain_pods(plane: Plane) -> None:
    plane.store.create(raycluster("plain", cluster_spec([worker_group("w", 1, 0, 1)])))
    plane.settle(rounds=2)
    assert plane.store.list(SCHED, "PodGroup").items == []
    assert all(p["spec"].get("schedulerName") != "volcano" for p in plane.pods("plain"))


def test_every_pod_names_the_pod_group_and_the_volcano_scheduler(plane: Plane) -> None:
    plane.add_queue(queue("closed", "64", state="Closed"))
    plane.store.create(volcano_cluster("c", "closed"))
    plane.settle(rounds=2)
    pods = plane.pods("c")
    assert len(pods) == 3
    for pod in pods:
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-c-pg"
        assert pod["metadata"]["labels"]["volcano.sh/queue-name"] == "closed"


def test_a_cluster_fitting_its_queue_is_bound_whole(plane: Plane) -> None:
    plane.add_queue(queue("roomy", "4"))
    plane.store.create(volcano_cluster("c", "roomy"))
    plane.settle()
    assert plane.pod_group("c")["status"]["phase"] in ("Inqueue", "Running")
    assert plane.bound("c") == 3


def test_a_cluster_in_a_closed_queue_stays_unbound(plane: Plane) -> None:
    plane.add_queue(queue("closed", "64", state="Closed"))
    plane.store.create(volcano_cluster("c", "closed"))
    plane.settle()
    assert plane.pod_group("c")["status"]["phase"] == "Pending"
    assert plane.bound("c") == 0


def test_a_cluster_over_its_queues_capability_stays_wholly_unbound_though_one_pod_would_fit(
    plane: Plane,
) -> None:
    # 3 CPUs of pods, a 2-CPU queue, an 8-CPU node: without the gang, two pods would start.
    plane.add_queue(queue("small", "2"))
    plane.store.create(volcano_cluster("c", "small"))
    plane.settle()
    assert plane.pod_group("c")["status"]["phase"] == "Pending"
    assert plane.bound("c") == 0


def test_the_cluster_of_a_rayjob_labelled_for_volcano_is_a_gang_too(plane: Plane) -> None:
    plane.add_queue(queue("closed", "64", state="Closed"))
    labels = {V.SCHEDULER_NAME_LABEL: "volcano", "volcano.sh/queue-name": "closed"}
    job = plane.store.create(
        {
            "apiVersion": RAY,
            "kind": "RayJob",
            "metadata": {"name": "j", "namespace": NS, "labels": labels},
            "spec": {"entrypoint": "true", "rayClusterSpec": volcano_cluster("x", "closed")["spec"]},
        }
    )
    RayJobController(plane.store)._create_cluster(job, {"rayClusterName": "j-cluster"})
    plane.settle()
    assert plane.pod_group("j-cluster")["spec"]["minMember"] == 3
    assert plane.bound("j-cluster") == 0
