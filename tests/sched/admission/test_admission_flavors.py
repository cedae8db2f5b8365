"""Flavor order, flavor fungibility, and which flavors a pod set's selectors and tolerations allow."""

from __future__ import annotations

from admissionkit import admitted, flavors_of, pending, run, workload

from kubehpc.sched.admission import PendingCode

TWO_FLAVORS = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
spec: {nodeLabels: {instance-type: on-demand}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
spec:
  nodeLabels: {instance-type: spot}
  nodeTaints: [{key: spot, value: "true", effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: co}
"""


def queues(team_a_flavors: str, fungibility: str = "", preemption: str = "") -> str:
    """team-a with the flavors given (YAML list items), team-b lending 10 cpu of each flavor."""
    return (
        TWO_FLAVORS
        + f"""
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: team-a}}
spec:
  namespaceSelector: {{}}
  cohortName: co
  {fungibility}
  {preemption}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
{team_a_flavors}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: team-b}}
spec:
  namespaceSelector: {{}}
  cohortName: co
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {{name: on-demand, resources: [{{name: cpu, nominalQuota: 10}}]}}
    - {{name: spot, resources: [{{name: cpu, nominalQuota: 10}}]}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: team-a}}
spec: {{clusterQueue: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{namespace: default, name: team-b}}
spec: {{clusterQueue: team-b}}
"""
    )


A_4_AND_4 = """    - {name: on-demand, resources: [{name: cpu, nominalQuota: 4}]}
    - {name: spot, resources: [{name: cpu, nominalQuota: 4}]}"""

SPOT_OK = [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]


def cpu(name: str, amount: str, queue: str = "team-a", **kw: object) -> dict:
    return workload(name, queue, requests={"cpu": amount}, **kw)  # type: ignore[arg-type]


def test_flavors_are_tried_in_the_order_the_cluster_queue_lists_them() -> None:
    d = run(queues(A_4_AND_4), cpu("small", "3", tolerations=SPOT_OK))
    assert flavors_of(d, "small") == {"cpu": "on-demand"}


def test_the_next_flavor_is_used_when_the_first_is_full() -> None:
    running = cpu("running", "4", admitted_in="team-a", flavors={"cpu": "on-demand"})
    # Borrowing is off for this queue's on-demand flavor: borrowingLimit 0.
    a = """    - {name: on-demand, resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 0}]}
    - {name: spot, resources: [{name: cpu, nominalQuota: 4}]}"""
    d = run(queues(a), running, cpu("next", "3", tolerations=SPOT_OK, created=1))
    assert flavors_of(d, "next") == {"cpu": "spot"}


def test_when_can_borrow_may_stop_search_borrows_in_the_first_flavor() -> None:
    running = cpu("running", "4", admitted_in="team-a", flavors={"cpu": "on-demand"})
    d = run(queues(A_4_AND_4), running, cpu("next", "3", tolerations=SPOT_OK, created=1))
    assert flavors_of(d, "next") == {"cpu": "on-demand"}
    assert d.admissions[0].borrowing


def test_when_can_borrow_try_next_flavor_prefers_a_flavor_without_borrowing() -> None:
    running = cpu("running", "4", admitted_in="team-a", flavors={"cpu": "on-demand"})
    fungibility = "flavorFungibility: {whenCanBorrow: TryNextFlavor}"
    d = run(queues(A_4_AND_4, fungibility), running, cpu("next", "3", tolerations=SPOT_OK, created=1))
    assert flavors_of(d, "next") == {"cpu": "spot"}
    assert not d.admissions[0].borrowing


def test_when_can_borrow_try_next_flavor_still_borrows_when_no_flavor_fits_otherwise() -> None:
    fungibility = "flavorFungibility: {whenCanBorrow: TryNextFlavor}"
    d = run(queues(A_4_AND_4, fungibility), cpu("big", "6", tolerations=SPOT_OK))
    assert flavors_of(d, "big") == {"cpu": "on-demand"}
    assert d.admissions[0].borrowing


def test_when_can_preempt_try_next_flavor_prefers_a_flavor_that_fits_without_preemption() -> None:
    low = cpu("low", "4", admitted_in="team-a", flavors={"cpu": "on-demand"}, priority=0)
    a = """    - {name: on-demand, resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 0}]}
    - {name: spot, resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 0}]}"""
    preemption = "preemption: {withinClusterQueue: LowerPriority}"
    d = run(queues(a, "", preemption), low, cpu("high", "4", tolerations=SPOT_OK, priority=10, created=1))
    assert flavors_of(d, "high") == {"cpu": "spot"}
    assert d.preemptions == ()


def test_when_can_preempt_may_stop_search_preempts_in_the_first_flavor() -> None:
    low = cpu("low", "4", admitted_in="team-a", flavors={"cpu": "on-demand"}, priority=0)
    a = """    - {name: on-demand, resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 0}]}
    - {name: spot, resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 0}]}"""
    fungibility = "flavorFungibility: {whenCanPreempt: MayStopSearch}"
    preemption = "preemption: {withinClusterQueue: LowerPriority}"
    d = run(
        queues(a, fungibility, preemption), low, cpu("high", "4", tolerations=SPOT_OK, priority=10, created=1)
    )
    assert admitted(d) == []
    assert [(p.victim, p.preemptor) for p in d.preemptions] == [("default/low", "default/high")]
    assert pending(d, "high").reason.code is PendingCode.PENDING_PREEMPTION


def test_v1beta1_spelling_borrow_means_may_stop_search() -> None:
    running = cpu("running", "4", admitted_in="team-a", flavors={"cpu": "on-demand"})
    fungibility = "flavorFungibility: {whenCanBorrow: Borrow}"
    d = run(queues(A_4_AND_4, fungibility), running, cpu("next", "3", tolerations=SPOT_OK, created=1))
    assert flavors_of(d, "next") == {"cpu": "on-demand"}


def test_a_flavor_whose_taint_the_pods_do_not_tolerate_is_skipped() -> None:
    running = cpu("running", "4", admitted_in="team-a", flavors={"cpu": "on-demand"})
    a = """    - {name: on-demand, resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 0}]}
    - {name: spot, resources: [{name: cpu, nominalQuota: 4}]}"""
    d = run(queues(a), running, cpu("intolerant", "3", created=1))
    assert admitted(d) == []
    p = pending(d, "intolerant")
    assert "untolerated taint spot=true:NoSchedule in flavor spot" in p.message


def test_a_flavors_own_tolerations_count_as_the_pods() -> None:
    setup = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: spot}
spec:
  nodeLabels: {instance-type: spot}
  nodeTaints: [{key: spot, value: "true", effect: NoSchedule}]
  tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: spot, resources: [{name: cpu, nominalQuota: 4}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: team-a}
spec: {clusterQueue: team-a}
"""
    assert flavors_of(run(setup, cpu("plain", "2")), "plain") == {"cpu": "spot"}


def test_a_node_selector_on_a_flavor_label_picks_that_flavor() -> None:
    d = run(
        queues(A_4_AND_4), cpu("spot-only", "2", node_selector={"instance-type": "spot"}, tolerations=SPOT_OK)
    )
    assert flavors_of(d, "spot-only") == {"cpu": "spot"}


def test_a_node_selector_on_other_labels_does_not_decide_the_flavor() -> None:
    d = run(queues(A_4_AND_4), cpu("zonal", "2", node_selector={"zone": "z1"}))
    assert flavors_of(d, "zonal") == {"cpu": "on-demand"}


def test_required_node_affinity_on_a_flavor_label_picks_that_flavor() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "instance-type", "operator": "NotIn", "values": ["on-demand"]}
                        ]
                    }
                ]
            }
        }
    }
    d = run(queues(A_4_AND_4), cpu("not-on-demand", "2", affinity=affinity, tolerations=SPOT_OK))
    assert flavors_of(d, "not-on-demand") == {"cpu": "spot"}


def test_no_matching_flavor_is_reported_and_never_fits() -> None:
    d = run(queues(A_4_AND_4), cpu("gpu-type", "2", node_selector={"instance-type": "gpu"}))
    p = pending(d, "gpu-type")
    assert p.reason.code is PendingCode.NO_MATCHING_FLAVOR
    assert p.never_fits
    assert "flavor on-demand doesn't match node affinity" in p.message
