"""NodeResourcesFit: a pod goes only where every resource it requests is free."""

from __future__ import annotations

from sched_builders import node, placed, pod, snapshot

from kubehpc.sched import decide
from kubehpc.sched.podspec import pod_requests


def test_pod_goes_to_the_only_node_with_enough_free_cpu() -> None:
    nodes = [node("small", cpu="1"), node("big", cpu="4")]
    assert placed(decide(snapshot(nodes, [pod("p", cpu="2")]))) == {"p": "big"}


def test_cpu_already_used_on_a_node_is_not_free() -> None:
    nodes = [node("busy", cpu="4", used={"cpu": "3"}), node("idle", cpu="2")]
    assert placed(decide(snapshot(nodes, [pod("p", cpu="1500m")]))) == {"p": "idle"}


def test_pods_stop_fitting_when_memory_runs_out() -> None:
    decisions = decide(snapshot([node("n", memory="3Gi")], [pod("p", memory="1Gi", count=4)]))
    assert len(decisions.bindings) == 3
    assert decisions.pending[0].count == 1


def test_extended_resource_is_counted_in_whole_units() -> None:
    nodes = [node("cpu-only"), node("gpu", extended={"nvidia.com/gpu": 2})]
    decisions = decide(snapshot(nodes, [pod("p", limits={"nvidia.com/gpu": 1}, count=3)]))
    assert [b.node for b in decisions.bindings] == ["gpu", "gpu"]
    assert decisions.pending[0].count == 1


def test_mig_resource_is_only_offered_by_nodes_advertising_that_profile() -> None:
    nodes = [
        node("whole-gpus", extended={"nvidia.com/gpu": 8}),
        node("mig", extended={"nvidia.com/mig-1g.10gb": 7}),
    ]
    decisions = decide(snapshot(nodes, [pod("p", limits={"nvidia.com/mig-1g.10gb": 2})]))
    assert placed(decisions) == {"p": "mig"}


def test_node_pod_slots_are_a_resource_too() -> None:
    decisions = decide(snapshot([node("n", pods=2)], [pod("p", count=3)]))
    assert len(decisions.bindings) == 2
    assert decisions.pending[0].rejections.insufficient == (("pods", 1),)


def test_a_resource_no_node_has_leaves_the_pod_pending_not_an_error() -> None:
    decisions = decide(snapshot([node("n")], [pod("p", limits={"example.com/fpga": 1})]))
    assert decisions.bindings == ()
    assert decisions.pending[0].rejections.insufficient == (("example.com/fpga", 1),)


def test_a_pod_bigger_than_any_node_never_fits() -> None:
    decisions = decide(snapshot([node("a", cpu="4"), node("b", cpu="8")], [pod("p", cpu="16")]))
    assert decisions.pending[0].rejections.never_fits


def test_a_pod_waiting_only_for_room_may_fit_later() -> None:
    decisions = decide(snapshot([node("a", cpu="4", used={"cpu": "3"})], [pod("p", cpu="2")]))
    assert not decisions.pending[0].rejections.never_fits


def test_requests_of_containers_add_up() -> None:
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "250m"}}},
        ]
    }
    assert pod_requests(spec) == {"cpu": 750, "memory": 1024**3}


def test_an_init_container_larger_than_the_containers_sets_the_request() -> None:
    spec = {
        "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2"}}}],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
    }
    assert pod_requests(spec) == {"cpu": 2000, "memory": 1024**3}


def test_a_sidecar_runs_beside_later_init_containers_and_the_containers() -> None:
    spec = {
        "initContainers": [
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
            {"name": "setup", "resources": {"requests": {"cpu": "1"}}},
        ],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m"}}}],
    }
    # setup runs beside proxy (1100m), more than proxy beside the app (600m)
    assert pod_requests(spec) == {"cpu": 1100}


def test_overhead_comes_on_top_of_the_containers() -> None:
    spec = {
        "overhead": {"cpu": "250m"},
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
    }
    assert pod_requests(spec) == {"cpu": 1250}


def test_a_limit_without_a_request_requests_the_limit() -> None:
    spec = {"containers": [{"name": "a", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}}]}
    assert pod_requests(spec) == {"cpu": 2000, "nvidia.com/gpu": 1}
