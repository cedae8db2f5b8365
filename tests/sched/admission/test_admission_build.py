"""From stored objects to the admission snapshot, and decisions back to Kueue's status shapes."""

from __future__ import annotations

from admissionkit import (
    FLAVOR,
    admitted,
    cohort_queue,
    one_queue,
    queue_state,
    run,
    snapshot,
    stamp,
    workload,
)

from kubehpc.sched.admission import PendingCode
from kubehpc.sched.admission.build import table_of
from kubehpc.sched.admission.status import admission_status, cluster_queue_status


def test_quotas_are_parsed_as_quantities() -> None:
    snap = snapshot(one_queue(cpu="500m", memory="1.5Gi"))
    [group] = snap.cluster_queues["cluster-queue"].resource_groups
    assert [(r, q.nominal) for r, q in group.flavors[0].resources] == [
        ("cpu", 500),
        ("memory", 1536 * 1024**2),
    ]


def test_a_cohort_named_only_by_a_cluster_queue_exists_implicitly() -> None:
    snap = snapshot(FLAVOR + cohort_queue("team-a", "implicit", "1"))
    assert snap.cohorts["implicit"].parent is None


def test_cluster_queues_under_a_cohort_cycle_are_inactive() -> None:
    setup = (
        FLAVOR
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: x}
spec: {parentName: y}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: y}
spec: {parentName: x}
"""
        + cohort_queue("team-a", "x", "4")
    )
    d = run(setup, workload("w", "team-a"))
    assert (queue_state(d, "team-a").active, queue_state(d, "team-a").reason) == (False, "CohortCycle")
    assert d.pending[0].reason.code is PendingCode.CLUSTER_QUEUE_INACTIVE


def test_reserved_usage_without_resource_usage_is_the_requests_times_count() -> None:
    wl = workload("r", count=2, requests={"cpu": "2"}, admitted_in="cluster-queue")
    del wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
    d = run(one_queue(cpu="9"), wl, workload("new", requests={"cpu": "6"}, created=1))
    assert queue_state(d, "cluster-queue").usage[0] == ("default-flavor", "cpu", 4000)
    assert admitted(d) == []


def test_deactivated_workloads_take_no_part() -> None:
    wl = workload("off")
    wl["spec"]["active"] = False
    d = run(one_queue(), wl)
    assert (d.admissions, d.pending) == ((), ())


def test_a_requeued_workload_is_ordered_by_its_eviction_time() -> None:
    evicted = workload("evicted", requests={"cpu": "4"}, created=0)
    evicted["status"] = {
        "conditions": [
            {
                "type": "Evicted",
                "status": "True",
                "reason": "Preempted",
                "message": "",
                "lastTransitionTime": stamp(50),
            }
        ]
    }
    d = run(one_queue(cpu="4"), evicted, workload("waiting", requests={"cpu": "4"}, created=10))
    assert admitted(d) == ["waiting"]


def test_admission_status_has_kueues_shape() -> None:
    d = run(one_queue(), workload("w", count=2, requests={"cpu": "1500m", "memory": "1Gi"}))
    assert admission_status(d.admissions[0]) == {
        "clusterQueue": "cluster-queue",
        "podSetAssignments": [
            {
                "name": "main",
                "flavors": {"cpu": "default-flavor", "memory": "default-flavor"},
                "resourceUsage": {"cpu": "3", "memory": "2Gi"},
                "count": 2,
            }
        ],
    }


def test_cluster_queue_status_has_kueues_shape() -> None:
    d = run(one_queue(cpu="2"), workload("w", requests={"cpu": "2"}), workload("x", created=1))
    status = cluster_queue_status(queue_state(d, "cluster-queue"))
    assert (status["pendingWorkloads"], status["admittedWorkloads"]) == (1, 1)
    assert status["flavorsReservation"] == [
        {
            "name": "default-flavor",
            "resources": [
                {"name": "cpu", "total": "2", "borrowed": "0"},
                {"name": "memory", "total": "0", "borrowed": "0"},
            ],
        }
    ]


def test_a_nodes_used_room_adds_its_pods_use_and_the_room_promised_there() -> None:
    node = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "8", "pods": "10"}}}
    table = table_of([node], {"n": {"cpu": 1000}}, {"n": {"cpu": 2000, "pods": 1}})
    row = table.index["n"]
    assert table.used[row, table.resource_index["cpu"]] == 3000
    assert table.used[row, table.resource_index["pods"]] == 1
