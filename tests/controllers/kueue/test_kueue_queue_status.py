"""ClusterQueue and LocalQueue status: counts, quota per flavor and resource, Active."""

from __future__ import annotations

from datetime import UTC, datetime

from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.controllers.kueue.queuestatus import LocalQueueTally, local_queue_status


def test_cluster_queue_status_counts_workloads_and_the_quota_they_hold() -> None:
    k = KueueCluster()
    k.create(
        flavor("default-flavor"),
        cluster_queue("cq", {"default-flavor": {"cpu": 3, "memory": "4Gi"}}),
        local_queue("user-queue", "cq"),
    )
    k.submit(queued_job("a", parallelism=2), queued_job("b", parallelism=1), queued_job("c", parallelism=2))
    status = k.cluster_queue("cq")["status"]
    assert (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"]) == (
        1,
        2,
        2,
    )
    expected = [
        {
            "name": "default-flavor",
            "resources": [
                {"name": "cpu", "total": "3", "borrowed": "0"},
                {"name": "memory", "total": "0", "borrowed": "0"},
            ],
        }
    ]
    assert status["flavorsReservation"] == expected
    assert status["flavorsUsage"] == expected
    active = k.condition(k.cluster_queue("cq"), "Active")
    assert active is not None
    assert (active["status"], active["reason"], active["message"]) == (
        "True",
        "Ready",
        "Can admit new workloads",
    )


def test_local_queue_status_counts_its_own_workloads_only() -> None:
    k = KueueCluster()
    k.create(
        flavor("default-flavor"),
        cluster_queue("cq", {"default-flavor": {"cpu": 2}}),
        local_queue("team-a", "cq"),
        local_queue("team-b", "cq"),
    )
    k.submit(
        queued_job("a1", "team-a"), queued_job("a2", "team-a"), queued_job("b1", "team-b", parallelism=2)
    )
    a, b = k.local_queue("team-a")["status"], k.local_queue("team-b")["status"]
    assert (a["pendingWorkloads"], a["reservingWorkloads"], a["admittedWorkloads"]) == (0, 2, 2)
    assert (b["pendingWorkloads"], b["reservingWorkloads"], b["admittedWorkloads"]) == (1, 0, 0)
    assert a["flavorsReservation"] == [
        {"name": "default-flavor", "resources": [{"name": "cpu", "total": "2"}]}
    ]
    assert b["flavorsUsage"] == [{"name": "default-flavor", "resources": [{"name": "cpu", "total": "0"}]}]
    active = k.condition(k.local_queue("team-a"), "Active")
    assert active is not None
    assert (active["status"], active["reason"]) == ("True", "Ready")


def test_finished_workloads_leave_the_counts() -> None:
    k = KueueCluster()
    k.create(flavor("f"), cluster_queue("cq", {"f": {"cpu": 2}}), local_queue("user-queue", "cq"))
    k.create(queued_job("a"))
    k.settle()
    k.finish_pods("a")
    k.settle()
    status = k.cluster_queue("cq")["status"]
    assert (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"]) == (
        0,
        0,
        0,
    )


def test_a_new_queue_status_leaves_the_stored_one_untouched() -> None:
    # The status is computed from the cached LocalQueue, which other readers share.
    active = {"type": "Active", "status": "True", "reason": "Ready", "message": "ready"}
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "team-a", "namespace": "default", "generation": 2},
        "spec": {"clusterQueue": "cq", "stopPolicy": "Hold"},
        "status": {"conditions": [dict(active)], "pendingWorkloads": 3},
    }
    status = local_queue_status(lq, None, False, LocalQueueTally(), datetime(2026, 1, 1, tzinfo=UTC))
    assert status["conditions"][0]["status"] == "False"
    assert lq["status"] == {"conditions": [active], "pendingWorkloads": 3}
