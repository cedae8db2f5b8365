"""Pending pods say why, in kube-scheduler's words (``FitError.Error()``)."""

from __future__ import annotations

from sched_builders import node, pod, snapshot

from kubehpc.sched import PodSet, Taint, decide


def why(nodes: list, p: PodSet) -> str:
    decisions = decide(snapshot(nodes, [p]))
    assert decisions.bindings == ()
    return decisions.pending[0].message


def test_every_node_short_of_gpus() -> None:
    nodes = [node(f"n{i}") for i in range(4)]
    assert (
        why(nodes, pod("p", limits={"nvidia.com/gpu": 1}))
        == "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    )


def test_taints_and_selectors_are_unresolvable_so_preemption_is_not_helpful() -> None:
    nodes = [
        node("gpu", taints=(Taint("gpu", "true", "NoSchedule"),)),
        node("a", labels={"zone": "a"}),
        node("b", labels={"zone": "b"}),
    ]
    assert why(nodes, pod("p", nodeSelector={"zone": "c"})) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint {gpu: true}, "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_a_node_short_of_several_resources_counts_once_per_resource() -> None:
    nodes = [node("a", cpu="1", memory="1Gi"), node("b", cpu="1", memory="8Gi")]
    assert why(nodes, pod("p", cpu="2", memory="2Gi")) == (
        "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."
    )


def test_reasons_are_sorted_as_strings_like_go_sort_strings() -> None:
    nodes = [node(f"n{i}", cpu="1") for i in range(10)] + [
        node(f"t{i}", taints=(Taint("a", "b", "NoSchedule"),)) for i in range(2)
    ]
    assert why(nodes, pod("p", cpu="2")) == (
        "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint {a: b}."
    )


def test_a_node_counts_only_for_the_first_filter_that_rejects_it() -> None:
    nodes = [node("t", cpu="1", taints=(Taint("gpu", "", "NoExecute"),))]
    assert why(nodes, pod("p", cpu="2")) == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {gpu: }. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_cordoned_nodes() -> None:
    assert why([node("n", unschedulable=True)], pod("p")) == (
        "0/1 nodes are available: 1 node(s) were unschedulable. "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_no_pod_slot_left() -> None:
    assert why([node("n", pods=0)], pod("p")) == "0/1 nodes are available: 1 Too many pods."


def test_no_nodes_at_all() -> None:
    assert why([], pod("p")) == "no nodes available to schedule pods"


def test_a_pod_that_may_not_preempt_says_so() -> None:
    assert why([node("n", cpu="1")], pod("p", cpu="2", preemptionPolicy="Never")) == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."
    )


def test_the_reason_is_also_data() -> None:
    nodes = [node("t", taints=(Taint("gpu", "true", "NoSchedule"),)), node("a", labels={"zone": "a"})]
    rejections = decide(snapshot(nodes, [pod("p", nodeSelector={"zone": "b"})])).pending[0].rejections
    assert rejections.untolerated_taints == ((Taint("gpu", "true", "NoSchedule"), 1),)
    assert rejections.affinity_mismatch == 1
    assert rejections.insufficient == ()
