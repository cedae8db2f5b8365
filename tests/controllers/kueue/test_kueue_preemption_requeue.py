"""Preemption through the job framework: the victim's Job is suspended, its pods go, its
Workload is requeued, and it runs again once there is room."""

from __future__ import annotations

from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, priority_class, queued_job

PRIORITY = "kueue.x-k8s.io/priority-class"


def cluster() -> KueueCluster:
    k = KueueCluster()
    k.create(
        flavor("default-flavor", {"pool": "batch"}),
        priority_class("high", 1000),
        priority_class("low", 10),
        cluster_queue(
            "cq", {"default-flavor": {"cpu": 2}}, preemption={"withinClusterQueue": "LowerPriority"}
        ),
        local_queue("user-queue", "cq"),
    )
    return k


def test_a_higher_priority_job_preempts_and_the_victim_is_suspended_and_requeued() -> None:
    k = cluster()
    k.create(queued_job("low", parallelism=2, labels={PRIORITY: "low"}))
    k.settle()
    assert len(k.kubelet.active("low")) == 2
    k.create(queued_job("high", parallelism=2, labels={PRIORITY: "high"}))
    k.settle()
    low = k.job("low")
    assert low["spec"]["suspend"] is True
    assert k.kubelet.active("low") == []
    assert "nodeSelector" not in low["spec"]["template"]["spec"]  # the queued template is back
    wl = k.workload("low")
    high_wl = k.workload("high")
    message = (
        f"Preempted to accommodate a workload (UID: {high_wl['metadata']['uid']}, "
        f"JobUID: {k.job('high')['metadata']['uid']}) due to prioritization in the ClusterQueue"
    )
    evicted, preempted = k.condition(wl, "Evicted"), k.condition(wl, "Preempted")
    assert evicted is not None and preempted is not None
    assert (evicted["status"], evicted["reason"], evicted["message"]) == ("True", "Preempted", message)
    assert (preempted["status"], preempted["reason"], preempted["message"]) == (
        "True",
        "InClusterQueue",
        message,
    )
    assert k.condition(wl, "QuotaReserved")["status"] == "False"  # type: ignore[index]
    assert "admission" not in wl["status"]
    assert k.condition(wl, "Requeued")["status"] == "True"  # type: ignore[index]
    assert ("Stopped", message) in k.events("low")
    assert k.job("high")["spec"]["suspend"] is False
    assert len(k.kubelet.active("high")) == 2


def test_the_preempted_job_runs_again_when_the_preemptor_finishes() -> None:
    k = cluster()
    k.create(queued_job("low", parallelism=2, labels={PRIORITY: "low"}))
    k.settle()
    k.create(queued_job("high", parallelism=2, labels={PRIORITY: "high"}))
    k.settle()
    k.finish_pods("high")
    k.settle()
    wl = k.workload("low")
    assert k.condition(wl, "Evicted")["status"] == "False"  # type: ignore[index]
    assert k.condition(wl, "Evicted")["message"].startswith("Previously: Preempted")  # type: ignore[index]
    assert k.job("low")["spec"]["suspend"] is False
    assert len(k.kubelet.active("low")) == 2


def test_equal_priority_does_not_preempt() -> None:
    k = cluster()
    k.create(queued_job("first", parallelism=2, labels={PRIORITY: "low"}))
    k.settle()
    k.create(queued_job("second", parallelism=2, labels={PRIORITY: "low"}))
    k.settle()
    assert k.job("first")["spec"]["suspend"] is False
    assert k.job("second")["spec"]["suspend"] is True


def test_the_workload_takes_its_priority_from_the_workload_priority_class() -> None:
    k = cluster()
    k.create(queued_job("a", labels={PRIORITY: "high"}))
    k.settle()
    spec = k.workload("a")["spec"]
    assert spec["priority"] == 1000
    assert spec["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }


def test_the_workload_takes_its_priority_from_the_pods_priority_class_otherwise() -> None:
    k = cluster()
    k.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "urgent"},
            "value": 500,
        }
    )
    job = queued_job("a")
    job["spec"]["template"]["spec"]["priorityClassName"] = "urgent"
    k.create(job)
    k.settle()
    spec = k.workload("a")["spec"]
    assert spec["priority"] == 500
    assert spec["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "urgent",
    }
    assert {p["spec"]["priority"] for p in k.kubelet.active("a")} == {500}  # the pod admission hook


def test_a_missing_workload_priority_class_holds_the_job_with_an_event() -> None:
    k = cluster()
    k.create(queued_job("a", labels={PRIORITY: "not-there"}))
    k.settle()
    assert k.job("a")["spec"]["suspend"] is True
    assert (
        "ErrWorkloadCompose",
        'workloadpriorityclasses.kueue.x-k8s.io "not-there" not found',
    ) in k.events("a")
    k.create(priority_class("not-there", 5))
    k.settle()
    assert k.workload("a")["spec"]["priority"] == 5


def test_a_cluster_queue_stopped_with_hold_and_drain_stops_its_running_jobs() -> None:
    k = KueueCluster()
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 2}}), local_queue("user-queue", "cq"))
    k.submit(queued_job("a"))
    k.store.patch("kueue.x-k8s.io/v1beta2", "ClusterQueue", "cq", {"spec": {"stopPolicy": "HoldAndDrain"}})
    k.settle()
    assert k.job("a")["spec"]["suspend"] is True
    assert k.kubelet.active("a") == []
    wl = k.workload("a")
    evicted = k.condition(wl, "Evicted")
    assert evicted is not None and (evicted["status"], evicted["reason"]) == ("True", "ClusterQueueStopped")
    assert k.condition(wl, "Requeued")["status"] == "False"  # type: ignore[index]  # only preemption requeues
    assert k.condition(wl, "QuotaReserved")["reason"] == "Inadmissible"  # type: ignore[index]
    active = k.condition(k.cluster_queue("cq"), "Active")
    assert active is not None and (active["status"], active["reason"]) == ("False", "Stopped")
