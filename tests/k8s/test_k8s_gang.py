"""An 8-pod Job is a gang: kubehpc binds all eight or none. Admission checks that every pod of
the Workload fits on the nodes before the gate opens, so on nodes with room for six nothing is
bound; one more node and all eight are."""

from __future__ import annotations

import time

from k8skit import Proc, condition, fake_node, job, queues, wait_for
from test_k8s_admission import ensure, pods_of, workload_of

from kubehpc.kube.rest import RestClient
from kubehpc.store.client import DeleteOptions

POOL = {"kubehpc-test/pool": "gang"}


def test_an_eight_pod_gang_is_bound_whole_or_not_at_all(controller: Proc, api: RestClient) -> None:
    ensure(api, queues("100", name="gang"))
    for i in range(3):
        api.create(fake_node(f"gang-{i}", "2", POOL))
    api.create(job("gang8", "gang", 8, "1", ["true"], node_selector=POOL))
    wait_for("the gang's Workload", lambda: workload_of(api, "gang8"))
    wait_for("the gang's 8 pods to exist", lambda: len(pods_of(api, "gang8")) == 8)
    time.sleep(5)  # several admission and scheduling cycles
    assert condition(workload_of(api, "gang8"), "Admitted") != "True"
    assert [p for p in pods_of(api, "gang8") if p["spec"].get("nodeName")] == []

    api.create(fake_node("gang-3", "2", POOL))

    def all_bound() -> bool:
        return sum(1 for p in pods_of(api, "gang8") if p["spec"].get("nodeName")) == 8

    wait_for("all eight pods to be bound", all_bound, timeout=60)
    per_node: dict[str, int] = {}
    for pod in pods_of(api, "gang8"):
        per_node[pod["spec"]["nodeName"]] = per_node.get(pod["spec"]["nodeName"], 0) + 1
    assert per_node == {f"gang-{i}": 2 for i in range(4)}

    api.delete("batch/v1", "Job", "gang8", "default", DeleteOptions(propagation_policy=None))
    for pod in pods_of(api, "gang8"):  # no kubelet behind fake nodes: nothing would finish them
        api.delete("v1", "Pod", pod["metadata"]["name"], "default", DeleteOptions(grace_period_seconds=0))


def gang_pod(i: int) -> dict[str, object]:
    """A plain pod of Kueue's pod group ``trainers`` of 8 (label + total-count annotation)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"trainer-{i}",
            "namespace": "default",
            "labels": {"kueue.x-k8s.io/pod-group-name": "trainers"},
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "8"},
        },
        "spec": {
            "schedulerName": "kubehpc",
            "nodeSelector": {"kubehpc-test/pool": "podgroup"},
            "containers": [{"name": "main", "image": "local", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def test_a_pod_group_of_eight_is_bound_whole_by_the_scheduler(controller: Proc, api: RestClient) -> None:
    pool = {"kubehpc-test/pool": "podgroup"}
    for i in range(3):
        api.create(fake_node(f"podgroup-{i}", "2", pool))
    for i in range(8):
        api.create(gang_pod(i))

    def bound() -> list[str]:
        return [
            str(api.get("v1", "Pod", f"trainer-{i}", "default")["spec"].get("nodeName") or "")
            for i in range(8)
        ]

    time.sleep(5)  # several scheduling cycles with room for six
    assert bound() == [""] * 8
    api.create(fake_node("podgroup-3", "2", pool))
    wait_for("all eight pods of the group to be bound", lambda: all(bound()), timeout=60)
    assert sorted(bound()) == sorted(f"podgroup-{i}" for i in range(4) for _ in range(2))
    for i in range(8):
        api.delete("v1", "Pod", f"trainer-{i}", "default", DeleteOptions(grace_period_seconds=0))
