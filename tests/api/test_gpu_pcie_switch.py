"""The PCIe switch as a level of a node's GPU topology: a multi-GPU request that no NVLink
group holds stays behind one PCIe switch before it falls back to one NUMA node."""

from __future__ import annotations

import pytest

from kubehpc.api.cluster_config import ClusterConfigError, parse_cluster_config, resolve_nodes
from kubehpc.api.devices import NodeDevices, allocate, node_devices


def config(gpus: dict) -> dict:
    return {
        "apiVersion": "kubehpc.io/v1alpha1",
        "kind": "ClusterConfig",
        "spec": {"nodePools": [{"name": "p", "hostnames": ["n0"], "gpus": gpus}]},
    }


def inventory(gpus: dict) -> NodeDevices:
    return node_devices(resolve_nodes(parse_cluster_config(config(gpus)))[0], "test")


def indexes(inv: NodeDevices, ids: list[str]) -> list[int]:
    return sorted(inv.by_id()[i].gpu_index for i in ids)


# 8 GPUs in NVLink pairs, two per PCIe switch, two switches per NUMA node.
PAIRS = {
    "model": "A100-40GB",
    "count": 8,
    "nvlinkGroups": [[0, 1], [2, 3], [4, 5], [6, 7]],
    "pcieSwitches": [0, 0, 0, 1, 1, 1, 2, 2],
    "numaNodes": [0, 0, 0, 0, 1, 1, 1, 1],
}


def test_a_request_no_nvlink_group_holds_stays_behind_one_pcie_switch() -> None:
    inv = inventory(PAIRS)
    # Switch 0 holds GPUs 0-2: three GPUs fit there, not across the NUMA node's four.
    assert indexes(inv, allocate(inv, {}, {"nvidia.com/gpu": 3})) == [0, 1, 2]


def test_a_switch_wins_over_the_numa_node_once_nvlink_pairs_are_broken() -> None:
    inv = inventory(PAIRS)
    taken = {inv.devices[i].id: 1 for i in (0, 2, 4, 6)}  # one GPU of every NVLink pair is held
    # Free: 1 (switch 0), 3 and 5 (switch 1), 7 (switch 2). NUMA node 0 alone would give 1 and 3.
    assert indexes(inv, allocate(inv, taken, {"nvidia.com/gpu": 2})) == [3, 5]


def test_without_known_switches_the_numa_node_decides_as_before() -> None:
    inv = inventory({k: v for k, v in PAIRS.items() if k != "pcieSwitches"})
    assert all(d.pcie_switch == -1 for d in inv.devices)
    assert indexes(inv, allocate(inv, {}, {"nvidia.com/gpu": 3})) == [0, 1, 2]
    assert indexes(inv, allocate(inv, {}, {"nvidia.com/gpu": 4})) == [0, 1, 2, 3]


def test_the_switches_travel_with_the_node_inventory() -> None:
    inv = inventory(PAIRS)
    again = NodeDevices.from_json("n0", inv.to_json())
    assert [d.pcie_switch for d in again.devices] == PAIRS["pcieSwitches"]


@pytest.mark.parametrize(
    ("switches", "problem"),
    [
        ([0, 0, 1], "spec.nodePools[0].gpus.pcieSwitches: has 3 entries for 8 GPUs; give one per GPU"),
        ([0, 0, 0, 0, 1, 1, 1, -1], "spec.nodePools[0].gpus.pcieSwitches[7]: must be >= 0, got -1"),
    ],
)
def test_bad_pcie_switches_name_the_field(switches: list[int], problem: str) -> None:
    with pytest.raises(ClusterConfigError) as exc:
        parse_cluster_config(config({**PAIRS, "pcieSwitches": switches}), "cluster.yaml")
    assert f"cluster.yaml: {problem}" in str(exc.value)
