"""Placement in the same decision as admission: the nodes the admission core chose are recorded
in the Workload as Kueue's topology assignment (level ``kubernetes.io/hostname``), and the
scheduler loop binds the pods there — or, when a chosen node no longer fits, says so and
places the pod on another node of its flavor."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kueuekit import KUEUE, NS, KueueCluster, cluster_queue, flavor, local_queue, node, queued_job

from kubehpc.controllers.scheduler import PLANNED_NODE_NO_FIT, Scheduler, SchedulerOptions
from kubehpc.sched.admission.model import AdmissionConfig
from kubehpc.sched.model import SchedulerConfig, Scoring
from kubehpc.sched.planned import (
    HOSTNAME_LEVEL,
    PLANNED_NODES_ANNOTATION,
    POD_SET_ANNOTATION,
    WORKLOAD_ANNOTATION,
)
from kubehpc.store.client import DeleteOptions, ListOptions

Obj = dict[str, Any]
BINPACK = AdmissionConfig(placement=SchedulerConfig(scoring=Scoring.MOST_ALLOCATED))


def cluster(*nodes: Obj) -> KueueCluster:
    """Admission packs pods onto as few nodes as it can; the scheduler, left alone, spreads
    them: pods land where admission put them only if the scheduler follows its choice."""
    k = KueueCluster(check_nodes=True, config=BINPACK)
    k.create(*nodes)
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 100}}), local_queue("user-queue", "cq"))
    return k


def scheduler(k: KueueCluster) -> Scheduler:
    s = Scheduler(k.store, SchedulerOptions(config=SchedulerConfig(scoring=Scoring.LEAST_ALLOCATED)))
    s.sync()
    return s


def schedule(k: KueueCluster, s: Scheduler, cycles: int = 4) -> None:
    for _ in range(cycles):
        s.sync()
        s.step()


def pods_per_node(k: KueueCluster, job: str) -> Counter[str]:
    return Counter(p["spec"].get("nodeName") for p in k.kubelet.active(job))


def chosen(k: KueueCluster, job: str) -> Counter[str]:
    """The admission's choice as a v1beta1 client reads it: domains of {values, count}."""
    name = k.workload(job)["metadata"]["name"]
    wl = k.store.get("kueue.x-k8s.io/v1beta1", "Workload", name, NS)
    topology = wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert topology["levels"] == [HOSTNAME_LEVEL]
    return Counter({d["values"][0]: d["count"] for d in topology["domains"]})


def test_the_admission_records_its_node_choice_as_a_hostname_topology_assignment() -> None:
    k = cluster(node("n1"), node("n2"), node("n3"))
    k.submit(queued_job("a", parallelism=3))
    assert sum(chosen(k, "a").values()) == 3
    assert len(chosen(k, "a")) == 1  # packed, as the admission config says
    stored = k.workload("a")["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert stored["levels"] == [HOSTNAME_LEVEL] and stored["slices"]  # v1beta2's compact form


def test_the_pods_of_an_admitted_job_are_bound_to_the_nodes_admission_chose() -> None:
    k = cluster(node("n1"), node("n2"), node("n3"))
    k.submit(queued_job("a", parallelism=3))
    schedule(k, scheduler(k))
    assert pods_per_node(k, "a") == chosen(k, "a")


def test_a_job_spread_over_several_nodes_gets_exactly_the_counts_chosen() -> None:
    k = cluster(node("n1", cpu="4"), node("n2", cpu="2"), node("n3", cpu="2"))
    k.submit(queued_job("a", parallelism=5))
    assert len(chosen(k, "a")) >= 2 and sum(chosen(k, "a").values()) == 5
    schedule(k, scheduler(k))
    assert pods_per_node(k, "a") == chosen(k, "a")


def test_pods_carry_their_workload_and_pod_set() -> None:
    k = cluster(node("n1"), node("n2"))
    k.submit(queued_job("a", parallelism=2))
    pod = k.kubelet.active("a")[0]
    assert pod["metadata"]["annotations"][WORKLOAD_ANNOTATION] == k.workload("a")["metadata"]["name"]
    assert pod["metadata"]["annotations"][POD_SET_ANNOTATION] == "main"
    assert pod["metadata"]["annotations"][PLANNED_NODES_ANNOTATION]


def test_a_pod_whose_chosen_node_no_longer_fits_is_placed_elsewhere_with_a_reason() -> None:
    k = cluster(node("n1"), node("n2"))
    k.submit(queued_job("a", parallelism=1))
    (planned,) = chosen(k, "a")
    # Something else takes the chosen node's room before the pod is bound.
    k.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "squatter", "namespace": NS},
            "spec": {
                "nodeName": planned,
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "4"}}}],
            },
        }
    )
    schedule(k, scheduler(k))
    (pod,) = k.kubelet.active("a")
    assert pod["spec"]["nodeName"] not in ("", None, planned)
    events = k.store.list("v1", "Event", ListOptions(namespace=NS)).items
    reasons = [e for e in events if e["reason"] == PLANNED_NODE_NO_FIT]
    assert len(reasons) == 1
    assert planned in reasons[0]["message"] and "no longer fits" in reasons[0]["message"]


def test_without_nodes_in_the_snapshot_admission_records_no_topology_assignment() -> None:
    k = KueueCluster()  # quota only, as Kueue without TAS
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 10}}), local_queue("user-queue", "cq"))
    k.submit(queued_job("a", parallelism=2))
    assignment = k.workload("a")["status"]["admission"]["podSetAssignments"][0]
    assert "topologyAssignment" not in assignment
    assert PLANNED_NODES_ANNOTATION not in (k.kubelet.active("a")[0]["metadata"].get("annotations") or {})
    assert KUEUE


def test_room_chosen_for_pods_not_bound_yet_is_not_given_to_the_next_workload() -> None:
    k = cluster(node("n1"))
    k.submit(queued_job("a", parallelism=4))  # fills n1; its pods exist but are not bound yet
    assert all(not p["spec"].get("nodeName") for p in k.kubelet.active("a"))
    k.submit(queued_job("b", parallelism=1))
    assert k.condition(k.workload("b"), "QuotaReserved")["status"] == "False"  # type: ignore[index]
    schedule(k, scheduler(k))
    assert pods_per_node(k, "a") == Counter({"n1": 4})
    k.settle()
    assert k.condition(k.workload("b"), "QuotaReserved")["status"] == "False"  # type: ignore[index]


def test_the_promised_room_is_counted_once_when_the_pods_are_bound() -> None:
    k = cluster(node("n1"))
    k.submit(queued_job("a", parallelism=2))  # half of n1
    schedule(k, scheduler(k))
    assert pods_per_node(k, "a") == Counter({"n1": 2})
    k.submit(queued_job("b", parallelism=2))  # the other half: fits only if a is not counted twice
    assert k.condition(k.workload("b"), "QuotaReserved")["status"] == "True"  # type: ignore[index]


def test_a_pod_bound_off_its_plan_releases_the_room_promised_on_its_planned_node() -> None:
    k = cluster(node("n1"), node("n2"))
    k.submit(queued_job("a", parallelism=1))
    (planned,) = chosen(k, "a")
    squatter = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "squatter", "namespace": NS},
        "spec": {
            "nodeName": planned,
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "4"}}}],
        },
    }
    k.create(squatter)
    schedule(k, scheduler(k))  # a's pod falls back to the other node
    k.store.delete("v1", "Pod", "squatter", NS, DeleteOptions(grace_period_seconds=0))
    k.submit(queued_job("b", parallelism=1, cpu="4"))  # fits only on the planned node, if empty
    assert k.condition(k.workload("b"), "QuotaReserved")["status"] == "True"  # type: ignore[index]
    assert chosen(k, "b") == Counter({planned: 1})
