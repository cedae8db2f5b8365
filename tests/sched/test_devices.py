"""Device choice is part of the decision: two pods of one decision never get the same device."""

from __future__ import annotations

from sched_builders import node, pod, snapshot

from kubehpc.api.devices import Device, NodeDevices, allocate_pod
from kubehpc.sched import DeviceState, Snapshot, decide
from kubehpc.sched.model import ContainerDevices
from kubehpc.sched.podspec import shape_of


def gpus(node_name: str, count: int, resource: str = "nvidia.com/gpu") -> NodeDevices:
    return NodeDevices(
        node_name,
        tuple(Device(f"GPU-{node_name}-{i}", resource, i, i // 4, i // 4, 81920) for i in range(count)),
    )


def with_devices(
    snap: Snapshot, inventories: dict[str, NodeDevices], holders: dict | None = None
) -> Snapshot:
    state = DeviceState(allocate=allocate_pod, inventories=inventories, holders=holders or {})
    return Snapshot(snap.nodes, snap.pod_sets, snap.config, state)


def test_pods_placed_together_get_different_gpus() -> None:
    snap = snapshot(
        [node("n", extended={"nvidia.com/gpu": 4})], [pod("p", limits={"nvidia.com/gpu": 2}, count=2)]
    )
    decisions = decide(with_devices(snap, {"n": gpus("n", 4)}))
    held = [dict(b.devices)["main"] for b in decisions.bindings]
    assert len(held) == 2
    assert not set(held[0]) & set(held[1])


def test_devices_already_held_are_not_handed_out_again() -> None:
    snap = snapshot(
        [node("n", extended={"nvidia.com/gpu": 4}, used={"nvidia.com/gpu": 1})],
        [pod("p", limits={"nvidia.com/gpu": 1})],
    )
    decisions = decide(with_devices(snap, {"n": gpus("n", 4)}, holders={"n": {"GPU-n-0": 1}}))
    assert dict(decisions.bindings[0].devices)["main"] != ("GPU-n-0",)


def test_a_multi_gpu_pod_gets_gpus_of_one_nvlink_group() -> None:
    snap = snapshot([node("n", extended={"nvidia.com/gpu": 8})], [pod("p", limits={"nvidia.com/gpu": 4})])
    devices = dict(decide(with_devices(snap, {"n": gpus("n", 8)})).bindings[0].devices)["main"]
    assert devices == ("GPU-n-0", "GPU-n-1", "GPU-n-2", "GPU-n-3")


def test_a_node_without_an_inventory_binds_by_counts_alone() -> None:
    snap = snapshot([node("n", extended={"nvidia.com/gpu": 1})], [pod("p", limits={"nvidia.com/gpu": 1})])
    decisions = decide(with_devices(snap, {}))
    assert (decisions.bindings[0].node, decisions.bindings[0].devices) == ("n", ())


def test_devices_that_do_not_fit_leave_the_pod_pending_with_the_allocators_reason() -> None:
    # The node claims two GPUs, but its inventory only has one: the second pod cannot get one.
    snap = snapshot(
        [node("n", extended={"nvidia.com/gpu": 2})], [pod("p", limits={"nvidia.com/gpu": 1}, count=2)]
    )
    decisions = decide(with_devices(snap, {"n": gpus("n", 1)}))
    assert len(decisions.bindings) == 1
    assert decisions.pending[0].count == 1
    assert "devices: n: " in decisions.pending[0].message


def test_each_container_asking_for_devices_is_recorded() -> None:
    spec = {
        "initContainers": [{"name": "check", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
        "containers": [{"name": "train", "resources": {"limits": {"nvidia.com/gpu": 2}}}],
    }
    assert shape_of(spec).devices == (
        ContainerDevices("check", True, (("nvidia.com/gpu", 1),)),
        ContainerDevices("train", False, (("nvidia.com/gpu", 2),)),
    )


def test_a_mig_profile_no_nodes_gpu_model_has_waits_naming_the_resource() -> None:
    # 1g.5gb exists only on A100-40GB; an H100 node under the mixed strategy offers 1g.10gb.
    h100 = node("h100", extended={"nvidia.com/mig-1g.10gb": 7})
    wrong = decide(snapshot([h100], [pod("p", limits={"nvidia.com/mig-1g.5gb": 1})]))
    assert wrong.bindings == ()
    assert wrong.pending[0].message == "0/1 nodes are available: 1 Insufficient nvidia.com/mig-1g.5gb."
    right = decide(snapshot([h100], [pod("p", limits={"nvidia.com/mig-1g.10gb": 1})]))
    assert [b.node for b in right.bindings] == ["h100"]
