"""The in-tree autoscaler's decisions (pure: no Ray needed)."""

from __future__ import annotations

from kubehpc.controllers.ray.autoscaling import Demand, GroupShape, RayNode, decide


def group(name: str, replicas: int = 0, lo: int = 0, hi: int = 3, hosts: int = 1, **res: float) -> GroupShape:
    return GroupShape(name, replicas, lo, hi, hosts, res or {"CPU": 1.0}, idle_timeout_s=60)


def test_pending_bundles_add_as_many_nodes_as_they_need() -> None:
    out = decide([group("cpu", CPU=2.0)], [Demand({"CPU": 1.0}, 3)], [])
    assert out["cpu"].replicas == 2  # two bundles share one 2-CPU node, the third needs another


def test_scale_up_stops_at_max_replicas() -> None:
    out = decide([group("cpu", replicas=1, hi=2)], [Demand({"CPU": 1.0}, 5)], [])
    assert out["cpu"].replicas == 2


def test_demand_goes_to_the_first_group_whose_node_shape_holds_it() -> None:
    groups = [group("a-cpu", CPU=1.0), group("b-gpu", CPU=1.0, GPU=1.0)]
    out = decide(groups, [Demand({"GPU": 1.0}, 1)], [])
    assert (out["a-cpu"].replicas, out["b-gpu"].replicas) == (0, 1)


def test_a_bundle_no_group_can_hold_adds_nothing() -> None:
    out = decide([group("cpu", CPU=1.0)], [Demand({"CPU": 4.0}, 1)], [])
    assert out["cpu"].replicas == 0


def test_multi_host_replica_counts_once_but_offers_every_host() -> None:
    out = decide([group("tpu", hosts=2, CPU=1.0)], [Demand({"CPU": 1.0}, 2)], [])
    assert out["tpu"].replicas == 1


def test_idle_workers_past_the_timeout_are_removed_down_to_min_replicas() -> None:
    nodes = [
        RayNode("w-1", "cpu", idle_ms=120_000),
        RayNode("w-2", "cpu", idle_ms=90_000),
        RayNode("w-3", "cpu", idle_ms=10_000),
    ]
    out = decide([group("cpu", replicas=3, lo=1)], [], nodes)
    assert out["cpu"].replicas == 1
    assert out["cpu"].workers_to_delete == ["w-1", "w-2"]


def test_min_replicas_keeps_idle_workers() -> None:
    nodes = [RayNode("w-1", "cpu", idle_ms=120_000)]
    out = decide([group("cpu", replicas=1, lo=1)], [], nodes)
    assert (out["cpu"].replicas, out["cpu"].workers_to_delete) == (1, [])


def test_nothing_is_removed_while_demand_waits() -> None:
    nodes = [RayNode("w-1", "cpu", idle_ms=120_000)]
    out = decide([group("cpu", replicas=1, CPU=1.0)], [Demand({"GPU": 1.0}, 1)], nodes)
    assert out["cpu"].workers_to_delete == []


def test_head_and_dead_nodes_are_never_scaled_down() -> None:
    nodes = [
        RayNode("head", "headgroup", idle_ms=999_999),
        RayNode("w-1", "cpu", idle_ms=999_999, alive=False),
    ]
    out = decide([group("cpu", replicas=1)], [], nodes)
    assert out["cpu"].workers_to_delete == []
