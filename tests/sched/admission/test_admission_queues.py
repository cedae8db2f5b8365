"""Which workloads a ClusterQueue may take at all: missing objects, namespaces, stop policies."""

from __future__ import annotations

from admissionkit import admitted, one_queue, pending, queue_state, run, snapshot, workload

from kubehpc.sched.admission import PendingCode, decide


def test_a_cluster_queue_naming_a_missing_flavor_is_inactive_with_flavor_not_found() -> None:
    setup = one_queue().replace(
        "kind: ResourceFlavor\nmetadata: {name: default-flavor}",
        "kind: ResourceFlavor\nmetadata: {name: other}",
    )
    d = run(setup, workload("a"))
    state = queue_state(d, "cluster-queue")
    assert (state.active, state.reason) == (False, "FlavorNotFound")
    assert "default-flavor" in state.message
    p = pending(d, "a")
    assert p.reason.code is PendingCode.CLUSTER_QUEUE_INACTIVE
    assert "ClusterQueue cluster-queue is inactive" in p.message


def test_a_workload_naming_a_missing_local_queue_stays_pending_with_that_reason() -> None:
    d = run(one_queue(), workload("lost", queue="no-such-queue"))
    p = pending(d, "lost")
    assert p.reason.code is PendingCode.LOCAL_QUEUE_NOT_FOUND
    assert p.message == "LocalQueue no-such-queue doesn't exist"


def test_a_local_queue_pointing_at_a_missing_cluster_queue_leaves_its_workloads_pending() -> None:
    setup = (
        one_queue()
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: orphan}
spec: {clusterQueue: gone}
"""
    )
    p = pending(run(setup, workload("w", queue="orphan")), "w")
    assert p.reason.code is PendingCode.CLUSTER_QUEUE_NOT_FOUND
    assert p.message == "ClusterQueue gone doesn't exist"


def test_local_queues_are_namespaced() -> None:
    d = run(one_queue(), workload("elsewhere", namespace="team-b"))
    assert pending(d, "elsewhere").reason.code is PendingCode.LOCAL_QUEUE_NOT_FOUND


def test_a_cluster_queue_without_namespace_selector_admits_no_namespace() -> None:
    d = run(one_queue().replace("  namespaceSelector: {}\n", ""), workload("a"))
    assert pending(d, "a").reason.code is PendingCode.NAMESPACE_NOT_SELECTED


def test_namespace_selector_admits_only_matching_namespaces() -> None:
    setup = (
        one_queue().replace("namespaceSelector: {}", "namespaceSelector: {matchLabels: {team: a}}")
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team-b, name: user-queue}
spec: {clusterQueue: cluster-queue}
"""
    )
    namespaces = [
        {"metadata": {"name": "default", "labels": {"team": "a"}}},
        {"metadata": {"name": "team-b", "labels": {"team": "b"}}},
    ]
    snap = snapshot(setup, workload("ours"), workload("theirs", namespace="team-b"), namespaces=namespaces)
    d = decide(snap, 0.0)
    assert admitted(d) == ["ours"]
    assert pending(d, "theirs").reason.code is PendingCode.NAMESPACE_NOT_SELECTED


def test_namespace_selector_can_match_the_namespace_name_label() -> None:
    setup = one_queue().replace(
        "namespaceSelector: {}",
        "namespaceSelector: {matchExpressions: "
        "[{key: kubernetes.io/metadata.name, operator: In, values: [default]}]}",
    )
    assert admitted(run(setup, workload("a"))) == ["a"]


def test_stop_policy_hold_admits_nothing_new_but_keeps_what_runs() -> None:
    setup = one_queue(extra="stopPolicy: Hold")
    running = workload("running", admitted_in="cluster-queue")
    d = run(setup, running, workload("new", created=3))
    assert admitted(d) == []
    assert d.evictions == ()
    state = queue_state(d, "cluster-queue")
    assert (state.active, state.reason, state.admitted) == (False, "Stopped", 1)
    assert pending(d, "new").reason.code is PendingCode.CLUSTER_QUEUE_INACTIVE


def test_stop_policy_hold_and_drain_also_evicts_admitted_workloads() -> None:
    setup = one_queue(extra="stopPolicy: HoldAndDrain")
    d = run(setup, workload("running", admitted_in="cluster-queue"), workload("new", created=3))
    assert admitted(d) == []
    [eviction] = d.evictions
    assert (eviction.workload, eviction.reason) == ("default/running", "ClusterQueueStopped")


def test_a_stopped_local_queue_holds_its_own_workloads_only() -> None:
    setup = (
        one_queue()
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: default, name: paused}
spec: {clusterQueue: cluster-queue, stopPolicy: HoldAndDrain}
"""
    )
    d = run(
        setup,
        workload("held", queue="paused"),
        workload("free"),
        workload("old", queue="paused", admitted_in="cluster-queue"),
    )
    assert admitted(d) == ["free"]
    assert pending(d, "held").reason.code is PendingCode.LOCAL_QUEUE_STOPPED
    assert [(e.workload, e.reason) for e in d.evictions] == [("default/old", "LocalQueueStopped")]


def test_a_workload_being_evicted_is_not_evicted_twice() -> None:
    setup = one_queue(extra="stopPolicy: HoldAndDrain")
    d = run(setup, workload("leaving", admitted_in="cluster-queue", evicted=True))
    assert d.evictions == ()
