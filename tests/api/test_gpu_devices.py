"""The device plugin's pure model: what a node advertises and who gets which device."""

from __future__ import annotations

from collections import Counter

import pytest

from kubehpc.api.cluster_config import parse_cluster_config, resolve_nodes
from kubehpc.api.devices import (
    NODE_INVENTORY_ANNOTATION,
    POD_DEVICES_ANNOTATION,
    AllocationError,
    NodeDevices,
    allocate,
    allocate_pod,
    devices_in_use,
    gpu_feature_labels,
    node_devices,
    visible_devices_env,
)


def node(gpus: dict, name: str = "n0"):
    cfg = parse_cluster_config(
        {
            "apiVersion": "kubehpc.io/v1alpha1",
            "kind": "ClusterConfig",
            "spec": {"nodePools": [{"name": "p", "hostnames": [name], "gpus": gpus}]},
        }
    )
    return resolve_nodes(cfg)[0]


def inventory(gpus: dict, name: str = "n0") -> NodeDevices:
    return node_devices(node(gpus, name), "test")


def index_of(inv: NodeDevices, ids: list[str]) -> list[int]:
    by_id = inv.by_id()
    return [by_id[i].gpu_index for i in ids]


def pod(*containers: tuple[str, dict], init: tuple[str, dict] | None = None, devices: str = "") -> dict:
    def c(name: str, limits: dict) -> dict:
        return {"name": name, "image": "x", "resources": {"limits": limits}}

    spec = {"containers": [c(n, lim) for n, lim in containers]}
    if init:
        spec["initContainers"] = [c(*init)]
    meta = {"name": "p", "annotations": {POD_DEVICES_ANNOTATION: devices}} if devices else {"name": "p"}
    return {"metadata": meta, "spec": spec}


MIXED = {
    "model": "A100-80GB",
    "count": 2,
    "mig": {"layout": {"1": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]}},
}


def test_whole_gpus_and_mig_profiles_are_separate_resources_under_mixed():
    assert inventory(MIXED).capacity() == {
        "nvidia.com/gpu": 1,
        "nvidia.com/mig-1g.10gb": 2,
        "nvidia.com/mig-2g.20gb": 1,
        "nvidia.com/mig-3g.40gb": 1,
    }


def test_single_strategy_advertises_mig_slices_as_gpus():
    gpus = {
        "model": "A100-40GB",
        "count": 2,
        "mig": {"strategy": "single", "layout": {"all": ["1g.5gb"] * 7}},
    }
    n = node(gpus)
    inv = node_devices(n, "test")
    assert inv.capacity() == {"nvidia.com/gpu": 14}
    labels = gpu_feature_labels(n, inv)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"
    assert labels["nvidia.com/gpu.count"] == "14"


def test_gpu_feature_discovery_labels_under_mixed():
    n = node(MIXED)
    labels = gpu_feature_labels(n, node_devices(n, "test"))
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"
    assert labels["nvidia.com/gpu.count"] == "2"
    assert labels["nvidia.com/gpu.memory"] == "81920"
    assert labels["nvidia.com/mig.strategy"] == "mixed"
    assert labels["nvidia.com/mig-1g.10gb.count"] == "2"
    assert labels["nvidia.com/mig-3g.40gb.memory"] == "40960"


def test_fake_uuids_are_stable_and_differ_between_nodes():
    a, again, b = inventory(MIXED, "a"), inventory(MIXED, "a"), inventory(MIXED, "b")
    assert [d.id for d in a.devices] == [d.id for d in again.devices]
    assert not {d.id for d in a.devices} & {d.id for d in b.devices}
    assert all(d.id.startswith("MIG-" if d.profile else "GPU-") for d in a.devices)


def test_two_pods_never_share_a_gpu():
    inv = inventory({"model": "H100-80GB", "count": 4})
    first = allocate(inv, {}, {"nvidia.com/gpu": 2})
    second = allocate(inv, Counter(first), {"nvidia.com/gpu": 2})
    assert not set(first) & set(second)
    with pytest.raises(AllocationError, match=r"1 nvidia\.com/gpu requested, 0 free"):
        allocate(inv, Counter(first + second), {"nvidia.com/gpu": 1})


def test_allocation_is_deterministic():
    inv = inventory({"model": "H100-80GB", "count": 8})
    assert allocate(inv, {}, {"nvidia.com/gpu": 3}) == allocate(inv, {}, {"nvidia.com/gpu": 3})


def test_a_request_stays_inside_one_nvlink_group_when_it_can():
    inv = inventory({"model": "A100-80GB", "count": 4, "nvlinkGroups": [[0, 1], [2, 3]]})
    held = allocate(inv, {}, {"nvidia.com/gpu": 1})  # GPU 0
    assert index_of(inv, held) == [0]
    # GPUs 1 and 2 are the lowest free ones, but they sit in different NVLink groups.
    assert index_of(inv, allocate(inv, Counter(held), {"nvidia.com/gpu": 2})) == [2, 3]


def test_a_small_request_goes_to_the_tightest_nvlink_group():
    inv = inventory({"model": "A100-80GB", "count": 4, "nvlinkGroups": [[0, 1], [2, 3]]})
    held = [inv.devices[0].id]  # GPU 0 busy: group {1} has one free, group {2,3} two
    assert index_of(inv, allocate(inv, Counter(held), {"nvidia.com/gpu": 1})) == [1]


def test_without_an_nvlink_fit_a_request_stays_on_one_numa_node():
    inv = inventory(
        {"model": "L40S", "count": 4, "nvlinkGroups": [[0], [1], [2], [3]], "numaNodes": [0, 1, 1, 0]}
    )
    assert index_of(inv, allocate(inv, {}, {"nvidia.com/gpu": 2})) == [0, 3]


def test_mig_requests_get_mig_devices_of_that_profile():
    inv = inventory(MIXED)
    ids = allocate(inv, {}, {"nvidia.com/mig-1g.10gb": 2})
    assert all(inv.by_id()[i].profile == "1g.10gb" for i in ids) and len(set(ids)) == 2


def test_time_slicing_advertises_replicas_and_shares_each_gpu_that_many_times():
    inv = inventory(
        {
            "model": "T4",
            "count": 2,
            "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}},
        }
    )
    assert inv.capacity() == {"nvidia.com/gpu": 4}
    used: Counter[str] = Counter()
    for _ in range(4):
        used.update(allocate(inv, used, {"nvidia.com/gpu": 1}))
    assert sorted(used.values()) == [2, 2]
    with pytest.raises(AllocationError):
        allocate(inv, used, {"nvidia.com/gpu": 1})


def test_time_slicing_spreads_a_multi_replica_request_over_distinct_gpus():
    inv = inventory(
        {
            "model": "T4",
            "count": 2,
            "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
        }
    )
    assert len(set(allocate(inv, {}, {"nvidia.com/gpu": 2}))) == 2


def test_rename_by_default_advertises_a_shared_resource():
    ts = {"renameByDefault": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}
    assert inventory({"model": "T4", "count": 1, "sharing": {"timeSlicing": ts}}).capacity() == {
        "nvidia.com/gpu.shared": 3
    }


def test_fail_requests_greater_than_one_refuses_two_shared_gpus():
    ts = {"failRequestsGreaterThanOne": True, "resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}
    inv = inventory({"model": "T4", "count": 2, "sharing": {"timeSlicing": ts}})
    with pytest.raises(AllocationError, match="failRequestsGreaterThanOne"):
        allocate(inv, {}, {"nvidia.com/gpu": 2})


def test_each_container_of_a_pod_gets_its_own_devices():
    inv = inventory({"model": "H100-80GB", "count": 4})
    alloc = allocate_pod(inv, {}, pod(("a", {"nvidia.com/gpu": 1}), ("b", {"nvidia.com/gpu": 2})))
    assert len(alloc["a"]) == 1 and len(alloc["b"]) == 2 and not set(alloc["a"]) & set(alloc["b"])


def test_init_container_devices_are_reused_by_the_app_containers():
    inv = inventory({"model": "H100-80GB", "count": 2})
    p = pod(("main", {"nvidia.com/gpu": 2}), init=("setup", {"nvidia.com/gpu": 2}))
    alloc = allocate_pod(inv, {}, p)
    assert sorted(alloc["setup"]) == sorted(alloc["main"])
    p["metadata"]["annotations"] = {POD_DEVICES_ANNOTATION: __import__("json").dumps(alloc)}
    assert set(devices_in_use([p]).values()) == {1}


def test_a_pod_asking_for_a_resource_the_node_lacks_is_refused():
    with pytest.raises(AllocationError, match=r"has no nvidia\.com/mig-1g\.10gb"):
        allocate_pod(
            inventory({"model": "H100-80GB", "count": 1}), {}, pod(("c", {"nvidia.com/mig-1g.10gb": 1}))
        )


def test_the_node_inventory_round_trips_through_the_node_annotation():
    inv = inventory(MIXED)
    node_obj = {"metadata": {"name": "n0", "annotations": {NODE_INVENTORY_ANNOTATION: inv.to_json()}}}
    assert NodeDevices.from_node(node_obj) == inv


def test_a_process_sees_exactly_its_devices_and_none_otherwise():
    assert visible_devices_env(["GPU-a", "GPU-b"]) == {
        "CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b",
        "NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b",
    }
    assert visible_devices_env([]) == {"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void"}
