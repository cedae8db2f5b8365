"""Real GPU discovery through NVML, checked against a fake pynvml module."""

from __future__ import annotations

import sys

from kubehpc.api.cluster_config import HostFacts, resolve_nodes, this_machine_config
from kubehpc.api.devices import node_devices
from kubehpc.node.nvml import discover


def test_discovery_reports_each_gpu_with_uuid_model_memory_and_numa(nvml_two_h100):
    found = discover(nvml_two_h100)
    assert found.driver_version == "550.54.15"
    assert [(g.index, g.uuid[:12], g.product, g.memory_mib, g.numa_node) for g in found.gpus] == [
        (0, "GPU-11111111", "NVIDIA H100 80GB HBM3", 81559, 0),
        (1, "GPU-66666666", "NVIDIA H100 80GB HBM3", 81559, 1),
    ]


def test_discovery_reports_mig_instances_by_profile(nvml_two_h100):
    gpus = discover(nvml_two_h100).gpus
    assert gpus[0].mig_devices == ()
    assert [p for p, _ in gpus[1].mig_devices] == ["3g.40gb", "1g.10gb"]


def test_a_machine_without_the_nvml_module_has_no_gpus_and_says_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    found = discover()
    assert found.gpus == () and "nvidia-ml-py" in found.reason


def test_a_driver_that_does_not_load_means_no_gpus(make_fake_nvml):
    found = discover(make_fake_nvml([], fail_init=True))
    assert found.gpus == () and "Driver Not Loaded" in found.reason


def test_the_default_node_advertises_the_real_gpus_by_their_uuids(nvml_two_h100):
    host = HostFacts(cpu_count=2, memory_bytes=1 << 34, gpus=discover(nvml_two_h100).gpus)
    (node,) = resolve_nodes(this_machine_config(), host)
    inv = node_devices(node, "c")
    assert node.mig_strategy == "mixed"
    assert inv.capacity() == {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-3g.40gb": 1}
    assert sorted(d.id for d in inv.devices) == [
        "GPU-11111111-2222-3333-4444-555555555555",
        "MIG-aaaaaaaa-0000-0000-0000-000000000001",
        "MIG-aaaaaaaa-0000-0000-0000-000000000002",
    ]
