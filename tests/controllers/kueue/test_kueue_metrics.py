"""Kueue's metrics under the kubehpc_ prefix, in the registry handed to the loop."""

from __future__ import annotations

from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, priority_class, queued_job


def cluster() -> KueueCluster:
    k = KueueCluster()
    k.create(
        flavor("default-flavor"),
        priority_class("high", 1000),
        cluster_queue(
            "cq",
            {"default-flavor": {"cpu": "2", "memory": "1Gi"}},
            preemption={"withinClusterQueue": "LowerPriority"},
        ),
        local_queue("user-queue", "cq"),
    )
    return k


def test_admissions_pending_workloads_and_quota_are_measured() -> None:
    k = cluster()
    k.submit(queued_job("a", parallelism=2), queued_job("b"), queued_job("huge", parallelism=5))
    assert k.metric("kubehpc_admitted_workloads_total", cluster_queue="cq") == 1
    assert k.metric("kubehpc_admission_wait_time_seconds_count", cluster_queue="cq") == 1
    assert k.metric("kubehpc_pending_workloads", cluster_queue="cq", status="inadmissible") == 2
    assert k.metric("kubehpc_pending_workloads", cluster_queue="cq", status="active") == 0
    assert k.metric("kubehpc_admitted_active_workloads", cluster_queue="cq") == 1
    cell = {"cluster_queue": "cq", "flavor": "default-flavor"}
    assert k.metric("kubehpc_cluster_queue_nominal_quota", resource="cpu", **cell) == 2.0
    assert k.metric("kubehpc_cluster_queue_nominal_quota", resource="memory", **cell) == 1024.0**3
    assert k.metric("kubehpc_cluster_queue_resource_reservation", resource="cpu", **cell) == 2.0
    assert k.metric("kubehpc_cluster_queue_resource_usage", resource="cpu", **cell) == 2.0
    assert k.metric("kubehpc_cluster_queue_status", cluster_queue="cq", status="active") == 1
    assert k.metric("kubehpc_cluster_queue_status", cluster_queue="cq", status="pending") == 0
    assert k.metric("kubehpc_admission_attempts_total", result="success") == 1
    assert (k.metric("kubehpc_admission_attempts_total", result="inadmissible") or 0) >= 1
    assert k.metric("kubehpc_admission_attempt_duration_seconds_count", result="success") == 1


def test_preemptions_are_counted_by_the_preemptors_cluster_queue_and_reason() -> None:
    k = cluster()
    k.submit(
        queued_job("low", parallelism=2),
        queued_job("high", parallelism=2, labels={"kueue.x-k8s.io/priority-class": "high"}),
    )
    assert (
        k.metric("kubehpc_preempted_workloads_total", preempting_cluster_queue="cq", reason="InClusterQueue")
        == 1
    )


def test_an_inactive_cluster_queue_is_pending_in_the_status_metric() -> None:
    k = KueueCluster()
    k.create(cluster_queue("cq", {"missing": {"cpu": 1}}))
    k.settle()
    assert k.metric("kubehpc_cluster_queue_status", cluster_queue="cq", status="pending") == 1


def test_a_deleted_cluster_queue_leaves_no_series_behind() -> None:
    k = cluster()
    k.settle()
    k.store.delete("kueue.x-k8s.io/v1beta2", "ClusterQueue", "cq")
    k.settle()
    assert k.metric("kubehpc_cluster_queue_status", cluster_queue="cq", status="active") is None
    cell = {"cluster_queue": "cq", "flavor": "default-flavor", "resource": "cpu"}
    assert k.metric("kubehpc_cluster_queue_nominal_quota", **cell) is None


def test_a_cluster_queue_created_again_is_measured_again() -> None:
    k = cluster()
    k.settle()
    k.store.delete("kueue.x-k8s.io/v1beta2", "ClusterQueue", "cq")
    k.settle()
    k.create(cluster_queue("cq", {"default-flavor": {"cpu": "2", "memory": "1Gi"}}))
    k.settle()
    # the same values as before it went: reported again all the same
    assert k.metric("kubehpc_cluster_queue_status", cluster_queue="cq", status="active") == 1
    cell = {"cluster_queue": "cq", "flavor": "default-flavor", "resource": "cpu"}
    assert k.metric("kubehpc_cluster_queue_nominal_quota", **cell) == 2.0


def test_a_metric_unchanged_between_cycles_keeps_its_value() -> None:
    k = cluster()
    k.submit(queued_job("a"))
    k.submit(queued_job("b"))  # another cycle: cq's quota and status series are as they were
    cell = {"cluster_queue": "cq", "flavor": "default-flavor"}
    assert k.metric("kubehpc_cluster_queue_nominal_quota", resource="cpu", **cell) == 2.0
    assert k.metric("kubehpc_cluster_queue_resource_usage", resource="cpu", **cell) == 2.0
    assert k.metric("kubehpc_admitted_workloads_total", cluster_queue="cq") == 2
