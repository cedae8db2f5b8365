"""The placement check after quota: admitted pods must fit on their flavor's nodes."""

from __future__ import annotations

import pytest
from admissionkit import admitted, manifests, pending, run, workload

from kubehpc.sched.admission import PendingCode, nodes

SETUP = """
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
  tolerations: [{key: spot, operator: Exists, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - {name: on-demand, resources: [{name: cpu, nominalQuota: 100}]}
    - {name: spot, resources: [{name: cpu, nominalQuota: 100}]}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: user-queue}
spec: {clusterQueue: cluster-queue}
"""


def node(name: str, kind: str, cpu: str = "4", taint: bool = False) -> str:
    taints = ', taints: [{key: spot, value: "true", effect: NoSchedule}]' if taint else ""
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{instance-type: {kind}}}}}
spec: {{unschedulable: false{taints}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}}}
"""


def nodes_of(d, name: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
    for a in d.admissions:
        if a.workload.endswith("/" + name):
            return {n: c for ps in a.pod_sets for n, c in ps.nodes}
    raise AssertionError(name)


def test_admitted_pods_are_placed_on_the_nodes_of_their_flavor() -> None:
    setup = SETUP + node("od-1", "on-demand") + node("od-2", "on-demand") + node("spot-1", "spot", taint=True)
    d = run(setup, workload("job", count=4, requests={"cpu": "2"}))
    assert nodes_of(d, "job") == {"od-1": 2, "od-2": 2}


def test_the_flavors_tolerations_let_pods_onto_its_tainted_nodes() -> None:
    setup = SETUP + node("spot-1", "spot", taint=True)
    d = run(setup, workload("job", count=2, requests={"cpu": "2"}, node_selector={"instance-type": "spot"}))
    assert nodes_of(d, "job") == {"spot-1": 2}


def test_quota_is_not_enough_when_the_pods_do_not_fit_on_the_nodes() -> None:
    setup = SETUP + node("od-1", "on-demand")
    d = run(setup, workload("job", count=3, requests={"cpu": "2"}))
    assert admitted(d) == []
    p = pending(d, "job")
    assert p.reason.code is PendingCode.NO_NODE_FITS
    assert "1 pod(s) of pod set main do not fit on the nodes of flavor on-demand" in p.message
    assert "0/1 nodes are available: 1 Insufficient cpu." in p.message
    assert not p.never_fits


def test_a_pod_larger_than_any_node_of_the_flavor_never_fits() -> None:
    setup = SETUP + node("od-1", "on-demand")
    p = pending(run(setup, workload("wide", requests={"cpu": "8"})), "wide")
    assert (p.reason.code, p.never_fits) == (PendingCode.NO_NODE_FITS, True)


def test_running_pods_take_their_room_on_the_nodes() -> None:
    pod = """
---
apiVersion: v1
kind: Pod
metadata: {name: existing, namespace: default}
spec:
  nodeName: od-1
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "3"}}}]
status: {phase: Running}
"""
    setup = SETUP + node("od-1", "on-demand") + node("od-2", "on-demand") + pod
    d = run(setup, workload("job", count=2, requests={"cpu": "2"}))
    assert nodes_of(d, "job") == {"od-2": 2}


def test_workloads_admitted_in_one_call_do_not_share_the_same_room() -> None:
    setup = SETUP + node("od-1", "on-demand")
    d = run(setup, workload("a", requests={"cpu": "3"}), workload("b", requests={"cpu": "3"}, created=1))
    assert admitted(d) == ["a"]
    assert pending(d, "b").reason.code is PendingCode.NO_NODE_FITS


def test_a_workload_that_does_not_fit_gives_back_the_room_its_first_pod_sets_took() -> None:
    def ps(name: str, count: int, cpu: str) -> dict:
        return {
            "name": name,
            "count": count,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
        }

    setup = SETUP + node("od-1", "on-demand")
    gang = workload("gang", pod_sets=[ps("driver", 1, "2"), ps("workers", 2, "2")])
    d = run(setup, gang, workload("small", requests={"cpu": "4"}, created=1))
    assert admitted(d) == ["small"]


def test_without_nodes_admission_is_by_quota_alone() -> None:
    d = run(SETUP, workload("job", count=40, requests={"cpu": "2"}))
    assert admitted(d) == ["job"]
    assert d.admissions[0].pod_sets[0].nodes == ()


def test_node_manifests_parse() -> None:
    assert [o["kind"] for o in manifests(node("n", "spot"))] == ["Node"]


# Six nodes of 25 cpus in all, of several sizes.
MIXED_NODES = SETUP + "".join(node(f"od-{i}", "on-demand", cpu=str(3 + i % 4)) for i in range(6))


def _mixed_run() -> list[dict[str, object]]:
    """Runs of one shape, a second shape cutting in, a pod set of several pods, one pod no
    node can hold, and more pods than the nodes hold."""
    loads = []
    for i in range(30):
        requests = {"cpu": "2"} if i in (7, 8, 19) else {"cpu": "500m"}
        count = 3 if i == 12 else 1
        loads.append(workload(f"w{i:02d}", requests=requests, count=count, created=float(i)))
    loads.append(workload("w30", requests={"cpu": "7"}, created=30.0))  # no node has 7 cpus
    loads += [workload(f"w{i}", requests={"cpu": "500m"}, created=float(i)) for i in range(31, 50)]
    return loads


def test_looking_ahead_places_every_pod_where_single_placements_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ahead = run(MIXED_NODES, *_mixed_run())
    monkeypatch.setattr(nodes, "_MAX_LOOKAHEAD", 1)
    single = run(MIXED_NODES, *_mixed_run())
    placed = {a.workload: [ps.nodes for ps in a.pod_sets] for a in ahead.admissions}
    assert placed == {a.workload: [ps.nodes for ps in a.pod_sets] for a in single.admissions}
    assert len(placed) == 39  # 25 cpus' worth: ten of the last pods find no room
    assert pending(ahead, "w30").reason.code is PendingCode.NO_NODE_FITS
    assert pending(ahead, "w49").reason.code is PendingCode.NO_NODE_FITS
