"""On real hardware the GPU topology comes from NVML: NVLink islands from the peer-to-peer
status, PCIe switches from the GPUs' closest common ancestor; device choice then keeps a
request inside one island, else behind one switch, as it does for configured GPUs."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubehpc.api.cluster_config import HostFacts, resolve_nodes, this_machine_config
from kubehpc.api.devices import allocate, node_devices
from kubehpc.node.nvml import discover

NVLINK = 2  # NVML_P2P_CAPS_INDEX_NVLINK
OK, NOT_SUPPORTED = 0, 4  # NVML_P2P_STATUS_*
SINGLE, HOSTBRIDGE = 10, 30  # NVML_TOPOLOGY_*


@dataclass
class Gpu:
    """What the node tests' fake NVML (fixture ``make_fake_nvml``) reads of a GPU."""

    uuid: str
    name: str = "NVIDIA H100 80GB HBM3"
    memory_mib: int = 81559
    numa: int = 0
    mig: list[tuple[str, str]] = field(default_factory=list)


def four_h100(make_fake_nvml, with_topology: bool = True):
    gpus = [Gpu(f"GPU-0000000{i}-0000-0000-0000-000000000000") for i in range(4)]
    nvml = make_fake_nvml(gpus)
    if with_topology:
        # GPUs 0 and 1 are NVLink peers; 0-1 sit behind one PCIe switch, 2-3 behind another.
        def p2p(a, b, index):
            assert index == NVLINK
            return OK if {a[1], b[1]} == {0, 1} else NOT_SUPPORTED

        def ancestor(a, b):
            return SINGLE if a[1] // 2 == b[1] // 2 else HOSTBRIDGE

        nvml.nvmlDeviceGetP2PStatus = p2p
        nvml.nvmlDeviceGetTopologyCommonAncestor = ancestor
    return nvml


def test_discovery_reads_nvlink_islands_and_pcie_switches(make_fake_nvml):
    gpus = discover(four_h100(make_fake_nvml)).gpus
    assert [g.nvlink_group for g in gpus] == [0, 0, 1, 2]
    assert [g.pcie_switch for g in gpus] == [0, 0, 1, 1]


def test_a_two_gpu_request_stays_behind_one_switch_when_no_island_holds_it(make_fake_nvml):
    host = HostFacts(cpu_count=2, memory_bytes=1 << 34, gpus=discover(four_h100(make_fake_nvml)).gpus)
    (node,) = resolve_nodes(this_machine_config(), host)
    inv = node_devices(node, "c")
    first = allocate(inv, {}, {"nvidia.com/gpu": 2})
    assert sorted(inv.by_id()[i].gpu_index for i in first) == [0, 1]  # the NVLink pair
    taken = {inv.devices[0].id: 1}
    second = allocate(inv, taken, {"nvidia.com/gpu": 2})
    assert sorted(inv.by_id()[i].gpu_index for i in second) == [2, 3]  # one switch, not 1 and 2


def test_an_nvml_without_topology_calls_keeps_one_island_and_no_switch(make_fake_nvml):
    gpus = discover(four_h100(make_fake_nvml, with_topology=False)).gpus
    assert [g.nvlink_group for g in gpus] == [0, 0, 0, 0]
    assert [g.pcie_switch for g in gpus] == [-1, -1, -1, -1]
