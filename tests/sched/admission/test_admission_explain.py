"""Why a workload waits, in data and in words; and the same snapshot always decides the same."""

from __future__ import annotations

from admissionkit import FLAVOR, cohort_queue, one_queue, pending, run, snapshot, workload

from kubehpc.sched.admission import AdmissionConfig, PendingCode, decide

GPU_SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  namespaceSelector: {}
  cohortName: research
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  namespaceSelector: {}
  cohortName: research
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: team-a}
spec: {clusterQueue: team-a}
"""


def gpus(name: str, n: int, **kw: object) -> dict:
    return workload(name, "team-a", requests={"nvidia.com/gpu": n}, **kw)  # type: ignore[arg-type]


def busy_cluster() -> list[dict]:
    """team-a holds 14 GPUs; team-b's 8 are all in use by team-b itself."""
    team_b = workload(
        "b-job",
        "team-b",
        requests={"nvidia.com/gpu": 8},
        admitted_in="team-b",
        flavors={"nvidia.com/gpu": "a100"},
    )
    return [gpus("a-job", 14, admitted_in="team-a", flavors={"nvidia.com/gpu": "a100"}), team_b]


def test_the_message_names_queue_shortfall_flavor_and_the_figures_behind_it() -> None:
    d = run(GPU_SETUP, *busy_cluster(), gpus("train", 6, created=5))
    p = pending(d, "train")
    assert p.message == (
        "ClusterQueue team-a: 4 nvidia.com/gpu missing in flavor a100 "
        "(nominal 16, in use 14, borrowable from cohort 0)"
    )


def test_the_reason_carries_the_same_figures_as_data() -> None:
    p = pending(run(GPU_SETUP, *busy_cluster(), gpus("train", 6, created=5)), "train")
    r = p.reason
    assert (r.code, r.cluster_queue, r.flavor, r.resource) == (
        PendingCode.INSUFFICIENT_QUOTA,
        "team-a",
        "a100",
        "nvidia.com/gpu",
    )
    assert (r.needed, r.nominal, r.in_use, r.borrowable, r.pod_set) == (6, 16, 14, 0, "main")
    assert not p.never_fits


def test_borrowable_counts_what_the_cohort_has_unused() -> None:
    team_b_small = workload(
        "b-job",
        "team-b",
        requests={"nvidia.com/gpu": 5},
        admitted_in="team-b",
        flavors={"nvidia.com/gpu": "a100"},
    )
    a_job = gpus("a-job", 14, admitted_in="team-a", flavors={"nvidia.com/gpu": "a100"})
    p = pending(run(GPU_SETUP, a_job, team_b_small, gpus("train", 8, created=5)), "train")
    assert p.message.endswith(
        "3 nvidia.com/gpu missing in flavor a100 (nominal 16, in use 14, borrowable from cohort 3)"
    )


def test_a_workload_larger_than_the_whole_cohort_says_it_never_fits() -> None:
    p = pending(run(GPU_SETUP, gpus("huge", 32)), "huge")
    assert p.never_fits
    assert (
        p.message
        == "ClusterQueue team-a: 32 nvidia.com/gpu needed in flavor a100, more than the 24 it can ever have"
    )


def test_cpu_and_memory_are_written_as_quantities() -> None:
    d = run(one_queue(cpu="1", memory="1Gi"), workload("w", requests={"cpu": "1500m", "memory": "512Mi"}))
    assert (
        "1500m cpu needed in flavor default-flavor, more than the 1 it can ever have"
        in pending(d, "w").message
    )
    d = run(one_queue(cpu="8", memory="1Gi"), workload("w", requests={"cpu": "1", "memory": "2Gi"}))
    assert "2Gi memory needed" in pending(d, "w").message


def test_a_queue_without_cohort_leaves_borrowing_out_of_the_message() -> None:
    running = workload("r", requests={"cpu": "8"}, admitted_in="cluster-queue")
    p = pending(run(one_queue(cpu="9"), running, workload("w", requests={"cpu": "2"}, created=1)), "w")
    assert (
        p.message
        == "ClusterQueue cluster-queue: 1 cpu missing in flavor default-flavor (nominal 9, in use 8)"
    )


def test_every_workload_left_waiting_is_explained() -> None:
    setup = (
        FLAVOR
        + cohort_queue("strict", "co", "1", extra="queueingStrategy: StrictFIFO")
        + cohort_queue("free", "co", "1")
    )
    wls = [workload(f"s{i}", "strict", requests={"cpu": "1"}, created=i) for i in range(5)]
    wls += [workload(f"f{i}", "free", requests={"cpu": "1"}, created=i) for i in range(5)]
    wls += [workload("lost", "nowhere")]
    d = run(setup, *wls)
    assert len(d.admissions) + len(d.pending) == len(wls)
    assert all(p.message for p in d.pending)


def test_the_same_snapshot_always_gives_the_same_decisions() -> None:
    setup = (
        FLAVOR
        + cohort_queue(
            "a",
            "co",
            "5",
            preemption="preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}",
        )
        + cohort_queue("b", "co", "5")
    )
    wls = [
        workload(f"w{i}", "ab"[i % 2], requests={"cpu": str(1 + i % 3)}, priority=i % 4, created=i % 5)
        for i in range(30)
    ]
    wls += [workload("old", "b", requests={"cpu": "4"}, admitted_in="b")]
    snap = snapshot(setup, *wls, config=AdmissionConfig(fair_sharing=True))
    first = decide(snap, 100.0)
    assert decide(snap, 100.0) == first
    assert decide(snapshot(setup, *reversed(wls), config=AdmissionConfig(fair_sharing=True)), 100.0) == first
