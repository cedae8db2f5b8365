"""Quota per flavor and resource: what a ClusterQueue admits on its own (no cohort)."""

from __future__ import annotations

from admissionkit import FLAVOR, admitted, flavors_of, one_queue, pending, queue_state, run, workload

from kubehpc.sched.admission import PendingCode


def test_workloads_are_admitted_while_their_requests_fit_the_nominal_quota() -> None:
    d = run(one_queue(cpu="9"), *(workload(f"w{i}", requests={"cpu": "3"}, created=i) for i in range(4)))
    assert admitted(d) == ["w0", "w1", "w2"]
    assert pending(d, "w3").reason.code is PendingCode.INSUFFICIENT_QUOTA


def test_every_covered_resource_must_fit_not_only_cpu() -> None:
    d = run(one_queue(cpu="9", memory="4Gi"), workload("big-memory", requests={"cpu": "1", "memory": "8Gi"}))
    assert admitted(d) == []
    p = pending(d, "big-memory")
    assert (p.reason.resource, p.never_fits) == ("memory", True)


def test_pod_count_multiplies_the_per_pod_request() -> None:
    d = run(
        one_queue(cpu="9"),
        workload("three-pods", count=3, requests={"cpu": "3"}),
        workload("one-more", created=1),
    )
    assert admitted(d) == ["three-pods"]
    [a] = d.admissions
    assert a.pod_sets[0].admission.usage == (("cpu", 9000),)


def test_usage_of_workloads_already_admitted_counts_against_the_quota() -> None:
    running = workload("running", requests={"cpu": "8"}, admitted_in="cluster-queue")
    d = run(one_queue(cpu="9"), running, workload("new", requests={"cpu": "2"}, created=5))
    assert admitted(d) == []
    assert pending(d, "new").reason.in_use == 8000


def test_finished_workloads_release_their_quota() -> None:
    done = workload("done", requests={"cpu": "8"}, admitted_in="cluster-queue", finished=True)
    d = run(one_queue(cpu="9"), done, workload("new", requests={"cpu": "2"}, created=5))
    assert admitted(d) == ["new"]


def test_a_resource_no_resource_group_covers_is_never_admitted() -> None:
    d = run(one_queue(), workload("gpu", requests={"cpu": "1", "nvidia.com/gpu": "1"}))
    p = pending(d, "gpu")
    assert p.reason.code is PendingCode.RESOURCE_NOT_COVERED
    assert p.never_fits
    assert "nvidia.com/gpu is not covered" in p.message


def test_resources_in_different_resource_groups_get_flavors_independently() -> None:
    setup = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: cpu-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: cpu-flavor
      resources: [{name: cpu, nominalQuota: 100}]
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: user-queue}
spec: {clusterQueue: cluster-queue}
"""
    d = run(setup, workload("train", requests={"cpu": "4", "nvidia.com/gpu": "4"}))
    assert flavors_of(d, "train") == {"cpu": "cpu-flavor", "nvidia.com/gpu": "h100"}


def test_pod_sets_of_one_workload_add_up_in_the_same_flavor() -> None:
    def ps(name: str, count: int) -> dict:
        return {
            "name": name,
            "count": count,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}},
        }

    d = run(one_queue(cpu="9"), workload("mpi", pod_sets=[ps("launcher", 1), ps("worker", 4)]))
    assert admitted(d) == []  # 2 + 8 cpu > 9
    d = run(one_queue(cpu="10"), workload("mpi", pod_sets=[ps("launcher", 1), ps("worker", 4)]))
    assert admitted(d) == ["mpi"]
    assert [p.admission.count for p in d.admissions[0].pod_sets] == [1, 4]


def test_pods_count_as_a_resource_only_where_the_queue_puts_a_quota_on_them() -> None:
    setup = (
        FLAVOR
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, pods]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: 100}, {name: pods, nominalQuota: 3}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: user-queue}
spec: {clusterQueue: cluster-queue}
"""
    )
    d = run(setup, workload("a", count=2), workload("b", count=2, created=1))
    assert admitted(d) == ["a"]
    assert pending(d, "b").reason.resource == "pods"


def test_cluster_queue_status_reports_usage_per_flavor_and_resource() -> None:
    d = run(
        one_queue(cpu="9"),
        workload("a", requests={"cpu": "3", "memory": "1Gi"}),
        workload("b", requests={"cpu": "20"}),
    )
    state = queue_state(d, "cluster-queue")
    assert (state.active, state.reason, state.pending, state.admitted) == (True, "Ready", 1, 1)
    assert state.usage == (("default-flavor", "cpu", 3000), ("default-flavor", "memory", 1024**3))
