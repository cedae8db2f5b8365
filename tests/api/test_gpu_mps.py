"""MPS sharing as the NVIDIA device plugin defines it: whole GPUs advertised ``replicas`` times,
each replica limited to an equal share of the GPU's threads and memory."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from kubehpc.api.cluster_config import ClusterConfigError, parse_cluster_config, resolve_nodes
from kubehpc.api.devices import (
    AllocationError,
    NodeDevices,
    allocate,
    gpu_feature_labels,
    mps_env,
    node_devices,
)
from kubehpc.node.devices import DevicePlugin


def config(gpus: dict[str, Any]) -> Any:
    return parse_cluster_config(
        {
            "apiVersion": "kubehpc.io/v1alpha1",
            "kind": "ClusterConfig",
            "spec": {"nodePools": [{"name": "p", "hostnames": ["n0"], "gpus": gpus}]},
        }
    )


def mps(replicas: int = 2, rename: bool = False, model: str = "A100-80GB", count: int = 2) -> dict[str, Any]:
    sharing = {
        "mps": {"renameByDefault": rename, "resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}
    }
    return {"model": model, "count": count, "sharing": sharing}


def inventory(gpus: dict[str, Any]) -> NodeDevices:
    return node_devices(resolve_nodes(config(gpus))[0], "test")


def test_each_gpu_is_advertised_replicas_times() -> None:
    inv = inventory(mps(replicas=4))
    assert inv.capacity() == {"nvidia.com/gpu": 8}
    assert {d.sharing for d in inv.devices} == {"mps"}


def test_rename_by_default_advertises_a_shared_resource() -> None:
    assert inventory(mps(rename=True)).capacity() == {"nvidia.com/gpu.shared": 4}


def test_gpu_feature_discovery_says_mps() -> None:
    node = resolve_nodes(config(mps()))[0]
    labels = gpu_feature_labels(node, node_devices(node, "test"))
    assert labels["nvidia.com/gpu.sharing-strategy"] == "mps"
    assert labels["nvidia.com/gpu.replicas"] == "2"
    assert labels["nvidia.com/gpu.product"].endswith("-SHARED")


def test_replicas_go_to_distinct_gpus_first_and_no_further_than_advertised() -> None:
    inv = inventory(mps())
    used: Counter[str] = Counter()
    first = allocate(inv, used, {"nvidia.com/gpu": 1})
    used.update(first)
    second = allocate(inv, used, {"nvidia.com/gpu": 1})
    assert first != second
    used.update(second)
    for _ in range(2):
        used.update(allocate(inv, used, {"nvidia.com/gpu": 1}))
    assert sorted(used.values()) == [2, 2]
    with pytest.raises(AllocationError, match="0 free"):
        allocate(inv, used, {"nvidia.com/gpu": 1})


def test_a_container_asks_for_one_replica() -> None:
    with pytest.raises(AllocationError, match="shared with MPS: ask for 1 replica, got 2"):
        allocate(inventory(mps()), Counter(), {"nvidia.com/gpu": 2})


def test_a_replica_is_limited_to_its_share_of_threads_and_memory() -> None:
    plugin = DevicePlugin(resolve_nodes(config(mps(replicas=4)))[0], "test")
    ids = allocate(plugin.inventory, Counter(), {"nvidia.com/gpu": 1})
    env = plugin.container_env({"main": ids}, "main")
    assert env["CUDA_VISIBLE_DEVICES"] == ids[0]
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=20480M"  # 80 GiB / 4


def test_unshared_gpus_carry_no_mps_limits() -> None:
    inv = inventory({"model": "A100-80GB", "count": 1})
    assert mps_env(list(inv.devices)) == {}


@pytest.mark.parametrize(
    ("gpus", "field", "reason"),
    [
        (
            {**mps(), "mig": {"layout": {"0": ["3g.40gb"]}}},
            "spec.nodePools[0].gpus.sharing.mps",
            "MPS does not share GPUs with MIG enabled",
        ),
        (
            {
                "model": "A100-80GB",
                "sharing": {"mps": {"resources": [{"name": "nvidia.com/mig-1g.10gb", "replicas": 2}]}},
            },
            "spec.nodePools[0].gpus.sharing.mps.resources[0].name",
            "MPS shares whole GPUs only",
        ),
        (
            {
                **mps(),
                "sharing": {
                    **mps()["sharing"],
                    "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
                },
            },
            "spec.nodePools[0].gpus.sharing",
            "timeSlicing and mps cannot both share the same GPUs",
        ),
    ],
)
def test_bad_mps_configs_name_the_field(gpus: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(ClusterConfigError) as exc:
        config(gpus)
    assert field in str(exc.value) and reason in str(exc.value)
