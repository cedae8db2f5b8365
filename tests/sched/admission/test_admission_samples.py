"""Every Kueue sample in shared/samples/manifests/kueue (v1beta1 and v1beta2) builds a valid
snapshot and admits workloads as its comments describe."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from admissionkit import (
    admitted,
    admitted_in,
    flavors_of,
    job_workload,
    pending,
    run,
    settle,
    snapshot,
    storage_objects,
    workload,
)

from kubehpc.sched.admission import AdmissionConfig, PendingCode, decide


def sample(shared_dir: Path, name: str) -> str:
    return (shared_dir / "samples" / "manifests" / "kueue" / name).read_text()


def all_samples(shared_dir: Path) -> list[Path]:
    return sorted((shared_dir / "samples" / "manifests" / "kueue").glob("v1beta*/*.yaml"))


def test_every_sample_is_valid_and_converts_to_the_storage_version(shared_dir: Path) -> None:
    paths = all_samples(shared_dir)
    assert {p.parent.name for p in paths} == {"v1beta1", "v1beta2"}
    for path in paths:
        for obj in storage_objects(path.read_text()):
            if obj["apiVersion"].startswith("kueue.x-k8s.io"):
                assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2", path


def kueue_only(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o["apiVersion"].startswith("kueue.x-k8s.io") and o["kind"] != "Topology"]


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_single_cluster_queue_setup_admits_the_sample_job_three_times_in_nine_cpu(
    shared_dir: Path, version: str
) -> None:
    setup = kueue_only(storage_objects(sample(shared_dir, f"{version}/single-clusterqueue-setup.yaml")))
    [job] = storage_objects(sample(shared_dir, "v1beta2/sample-job.yaml"))
    jobs = [
        job_workload({**job, "metadata": {**job["metadata"], "generateName": f"sample-job-{i}"}}, created=i)
        for i in range(4)
    ]
    d = run(setup, *jobs)
    assert len(d.admissions) == 3  # 3 pods x 1 cpu each, 9 cpu of quota
    assert all(
        flavors_of(d, a.workload.split("/")[1]) == {"cpu": "default-flavor", "memory": "default-flavor"}
        for a in d.admissions
    )
    [waiting] = d.pending
    assert waiting.message.startswith("ClusterQueue cluster-queue: 3 cpu missing in flavor default-flavor")


def test_sample_job_partial_admission_starts_with_the_pods_that_fit(shared_dir: Path) -> None:
    setup = kueue_only(storage_objects(sample(shared_dir, "v1beta2/single-clusterqueue-setup.yaml")))
    [job] = storage_objects(sample(shared_dir, "v1beta2/sample-job-partial-admission.yaml"))
    d = run(setup, job_workload(job))
    [a] = d.admissions
    # parallelism 20 at 1 cpu each, job-min-parallelism 5: 9 pods fit the 9 cpu.
    assert (a.pod_sets[0].admission.count, a.partial) == (9, True)


def test_cq_lending_limit_snippet_lends_at_most_one_cpu(shared_dir: Path) -> None:
    [team_b] = storage_objects(sample(shared_dir, "v1beta1/docsnippet-cq-lendinglimit.yaml"))
    assert team_b["spec"]["cohortName"] == "team-ab"
    team_a = copy.deepcopy(team_b)
    team_a["metadata"]["name"] = "team-a-cq"
    team_a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0] = {"name": "cpu", "nominalQuota": 9}
    rest = storage_objects(sample(shared_dir, "v1beta1/single-clusterqueue-setup.yaml"))
    flavor = [o for o in rest if o["kind"] == "ResourceFlavor"]
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"namespace": "default", "name": "team-a"},
        "spec": {"clusterQueue": "team-a-cq"},
    }
    setup = [*flavor, team_a, team_b, lq]
    assert admitted(run(setup, workload("ten", "team-a", requests={"cpu": "10"}))) == ["ten"]
    p = pending(run(setup, workload("eleven", "team-a", requests={"cpu": "11"})), "eleven")
    assert p.never_fits


def test_cq_preemption_snippet_reclaims_and_borrows_below_priority_100(shared_dir: Path) -> None:
    [team_a] = storage_objects(sample(shared_dir, "v1beta2/docsnippet-cq-preemption.yaml"))
    flavors = kueue_only(storage_objects(sample(shared_dir, "v1beta2/single-clusterqueue-setup.yaml")))[:1]

    def with_quota(cq: dict[str, Any], name: str, cpu: int) -> dict[str, Any]:
        cq = copy.deepcopy(cq)
        cq["metadata"]["name"] = name
        cq["spec"].update(
            namespaceSelector={},
            cohortName="co",
            resourceGroups=[
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": cpu}]}
                    ],
                }
            ],
        )
        return cq

    lqs = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"namespace": "default", "name": n},
            "spec": {"clusterQueue": n},
        }
        for n in ("team-a-cq", "team-b-cq")
    ]
    team_b = with_quota(
        {"metadata": {}, "spec": {}, "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue"},
        "team-b-cq",
        2,
    )
    setup = [*flavors, with_quota(team_a, "team-a-cq", 6), team_b, *lqs]

    def b(name: str, priority: int) -> dict[str, Any]:
        return workload(name, "team-b-cq", requests={"cpu": "3"}, priority=priority, admitted_in="team-b-cq")

    # team-a borrows 1 cpu beyond its 6: only team-b's workloads at or below priority 100 may go.
    d = run(
        setup,
        b("b-low", 50),
        b("b-mid", 100),
        workload("a", "team-a-cq", requests={"cpu": "7"}, priority=1000),
    )
    assert sorted(p.victim for p in d.preemptions) == ["default/b-low", "default/b-mid"]
    d = run(
        setup,
        b("b-low", 50),
        b("b-high", 500),
        workload("a", "team-a-cq", requests={"cpu": "7"}, priority=1000),
    )
    assert d.preemptions == ()


def test_cohort_tree_sample_gives_the_important_org_the_larger_share(shared_dir: Path) -> None:
    cohorts = storage_objects(sample(shared_dir, "v1beta2/docsnippet-cohort-tree-fairsharing.yaml"))
    flavors = kueue_only(storage_objects(sample(shared_dir, "v1beta2/single-clusterqueue-setup.yaml")))[:1]

    def cq(name: str, cohort: str, cpu: int) -> dict[str, Any]:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {},
                "cohortName": cohort,
                "preemption": {"reclaimWithinCohort": "Any"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": cpu}]}
                        ],
                    }
                ],
            },
        }

    queues = [
        cq("lender", "root-cohort", 8),
        cq("important", "important-org", 0),
        cq("regular", "regular-org", 0),
    ]
    lqs = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"namespace": "default", "name": n},
            "spec": {"clusterQueue": n},
        }
        for n in ("important", "regular")
    ]
    wls = [
        workload(f"{q}-{i}", q, requests={"cpu": "1"}, created=i)
        for q in ("important", "regular")
        for i in range(8)
    ]
    setup = [*flavors, *cohorts, *queues, *lqs]
    # The first call admits a head of each queue per cycle: 4 and 4. Fair-sharing preemption
    # then moves the lender's 8 cpu towards the weights 0.75 : 0.25.
    first = decide(snapshot(setup, *wls, config=AdmissionConfig(fair_sharing=True)), 0.0)
    assert sorted(a.cluster_queue for a in first.admissions) == ["important"] * 4 + ["regular"] * 4
    final = settle(setup, wls, AdmissionConfig(fair_sharing=True))
    assert admitted_in(final) == {"important": 6, "regular": 2}


def test_workload_priority_classes_order_admission(shared_dir: Path) -> None:
    classes = {
        o["metadata"]["name"]: o["value"]
        for o in storage_objects(sample(shared_dir, "v1beta2/kueueviz-07-workload-priority-classes.yaml"))
    }
    assert classes == {"human-critical": 1000000, "business-impacting": 1000, "long-term-research": 1}
    setup = kueue_only(storage_objects(sample(shared_dir, "v1beta2/single-clusterqueue-setup.yaml")))
    wls = [
        workload(n, requests={"cpu": "5"}, priority=v, created=i)
        for i, (n, v) in enumerate(sorted(classes.items()))
    ]
    assert admitted(run(setup, *wls)) == ["human-critical"]
    assert [pending(run(setup, *wls), n).position for n in ("business-impacting", "long-term-research")] == [
        0,
        1,
    ]


def test_resource_flavor_taints_sample_admits_only_pods_tolerating_spot(shared_dir: Path) -> None:
    [spot] = storage_objects(sample(shared_dir, "v1beta2/resource-flavor-taints.yaml"))
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "spot", "resources": [{"name": "cpu", "nominalQuota": 8}]}],
                }
            ],
        },
    }
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"namespace": "default", "name": "user-queue"},
        "spec": {"clusterQueue": "cluster-queue"},
    }
    tolerant = workload(
        "tolerant",
        tolerations=[{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
    )
    d = run([spot, cq, lq], tolerant, workload("intolerant"))
    assert admitted(d) == ["tolerant"]
    assert pending(d, "intolerant").reason.code is PendingCode.NO_MATCHING_FLAVOR
    # "PreferNoSchedule is ignored": such a taint does not keep pods out.
    soft = copy.deepcopy(spot)
    soft["spec"]["nodeTaints"][0]["effect"] = "PreferNoSchedule"
    assert admitted(run([soft, cq, lq], workload("intolerant"))) == ["intolerant"]


def test_shared_quota_setup_fills_on_demand_then_spot(shared_dir: Path) -> None:
    setup = storage_objects(sample(shared_dir, "v1beta2/shared-quota-setup.yaml"))
    wls = [workload(f"w{i}", "team-queue", requests={"cpu": "3"}, created=i) for i in range(7)]
    d = run(setup, *wls)
    assert [flavors_of(d, f"w{i}")["cpu"] for i in range(6)] == ["on-demand"] * 3 + ["spot"] * 3
    assert pending(d, "w6").reason.code is PendingCode.INSUFFICIENT_QUOTA
    # The cpu_credits cap needs Kueue's resource transformations (a Configuration setting);
    # workloads that carry the credits themselves are held to the 14 credits.
    credited = [
        workload(f"c{i}", "team-queue", requests={"cpu": "3", "cpu_credits": "3"}, created=i)
        for i in range(6)
    ]
    d = run(setup, *credited)
    assert len(d.admissions) == 4
    assert pending(d, "c4").reason.resource == "cpu_credits"


def test_tas_sample_queue_admits_the_required_topology_job_by_quota(shared_dir: Path) -> None:
    setup = kueue_only(storage_objects(sample(shared_dir, "v1beta2/tas-sample-queues.yaml")))
    [job] = storage_objects(sample(shared_dir, "v1beta2/tas-sample-job-required.yaml"))
    job["metadata"]["namespace"] = "default"
    d = run(setup, job_workload(job))
    [a] = d.admissions
    assert (a.cluster_queue, a.pod_sets[0].admission.count) == ("tas-cluster-queue", 10)
    assert dict(a.pod_sets[0].admission.flavors) == {"cpu": "tas-flavor", "memory": "tas-flavor"}


def test_tas_sample_job_pods_go_only_to_the_flavors_node_group(shared_dir: Path) -> None:
    setup = kueue_only(storage_objects(sample(shared_dir, "v1beta2/tas-sample-queues.yaml")))
    [job] = storage_objects(sample(shared_dir, "v1beta2/tas-sample-job-required.yaml"))
    job["metadata"]["namespace"] = "default"

    def node(name: str, group: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"cloud.provider.com/node-group": group}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
        }

    nodes = [node("tas-1", "tas-group"), node("other", "general"), node("tas-2", "tas-group")]
    d = run([*setup, *nodes], job_workload(job))
    [a] = d.admissions
    placed = dict(a.pod_sets[0].nodes)
    assert set(placed) == {"tas-1", "tas-2"}
    assert sum(placed.values()) == 10
