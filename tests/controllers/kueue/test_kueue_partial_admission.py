"""Partial admission: kueue.x-k8s.io/job-min-parallelism lets a Job start with fewer pods."""

from __future__ import annotations

import pytest
from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, priority_class, queued_job

from kubehpc.api.errors import Invalid

MIN = "kueue.x-k8s.io/job-min-parallelism"


def cluster(cpu: int) -> KueueCluster:
    k = KueueCluster()
    k.create(
        flavor("default-flavor"),
        priority_class("high", 1000),
        cluster_queue(
            "cq", {"default-flavor": {"cpu": cpu}}, preemption={"withinClusterQueue": "LowerPriority"}
        ),
        local_queue("user-queue", "cq"),
    )
    return k


def test_the_workload_pod_set_carries_the_minimum_as_min_count() -> None:
    k = cluster(cpu=20)
    k.create(queued_job("p", parallelism=20, annotations={MIN: "5"}))
    k.settle()
    [pod_set] = k.workload("p")["spec"]["podSets"]
    assert (pod_set["count"], pod_set["minCount"]) == (20, 5)


def test_a_job_that_does_not_fit_whole_runs_with_the_admitted_parallelism() -> None:
    k = cluster(cpu=8)
    k.create(queued_job("p", parallelism=20, completions=20, annotations={MIN: "5"}))
    k.settle()
    assignment = k.workload("p")["status"]["admission"]["podSetAssignments"][0]
    assert assignment["count"] == 8
    job = k.job("p")
    assert (job["spec"]["suspend"], job["spec"]["parallelism"], job["spec"]["completions"]) == (False, 8, 20)
    assert len(k.kubelet.active("p")) == 8


def test_a_partially_admitted_job_stopped_by_preemption_gets_its_parallelism_back() -> None:
    k = cluster(cpu=8)
    k.create(queued_job("p", parallelism=20, completions=20, annotations={MIN: "5"}))
    k.settle()
    k.create(queued_job("urgent", parallelism=8, labels={"kueue.x-k8s.io/priority-class": "high"}))
    k.settle()
    job = k.job("p")
    assert (job["spec"]["suspend"], job["spec"]["parallelism"]) == (True, 20)


@pytest.mark.parametrize("value", ["0", "20", "25", "lots"])
def test_a_min_parallelism_outside_one_to_parallelism_minus_one_is_refused(value: str) -> None:
    k = cluster(cpu=8)
    with pytest.raises(Invalid) as err:
        k.create(queued_job("p", parallelism=20, annotations={MIN: value}))
    assert err.value.causes[0].field == "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]"


def test_a_job_admitted_with_exactly_its_minimum_starts() -> None:
    k = cluster(cpu=5)
    k.create(queued_job("p", parallelism=20, completions=20, annotations={MIN: "5"}))
    k.settle()
    job = k.job("p")
    assert (job["spec"]["suspend"], job["spec"]["parallelism"]) == (False, 5)
