"""Shared pieces of the node tests: a fake NVML module and a small cluster."""

from __future__ import annotations

import types
from dataclasses import dataclass, field

import pytest


@dataclass
class FakeGpu:
    uuid: str
    name: str
    memory_mib: int
    numa: int = 0
    mig: list[tuple[str, str]] = field(default_factory=list)  # (profile, MIG uuid)


class NVMLError(Exception):
    pass


def fake_nvml(gpus: list[FakeGpu], fail_init: bool = False) -> types.ModuleType:
    """A stand-in for ``pynvml`` with the calls kubehpc.node.nvml makes, answering as NVML
    does (MIG mode queries on a GPU without MIG raise NOT_SUPPORTED)."""
    mod = types.ModuleType("pynvml")
    mod.NVMLError = NVMLError
    mod.NVML_DEVICE_MIG_ENABLE = 1
    handles = {("gpu", i): g for i, g in enumerate(gpus)}

    def init() -> None:
        if fail_init:
            raise NVMLError("Driver Not Loaded")

    mod.nvmlInit = init
    mod.nvmlShutdown = lambda: None
    mod.nvmlSystemGetDriverVersion = lambda: b"550.54.15"
    mod.nvmlDeviceGetCount = lambda: len(gpus)
    mod.nvmlDeviceGetHandleByIndex = lambda i: ("gpu", i)

    def name(h):
        if h[0] == "mig":
            parent = handles[("gpu", h[1])]
            return f"{parent.name} MIG {parent.mig[h[2]][0]}"
        return handles[h].name

    def uuid(h):
        return handles[("gpu", h[1])].mig[h[2]][1] if h[0] == "mig" else handles[h].uuid

    mod.nvmlDeviceGetName = name
    mod.nvmlDeviceGetUUID = uuid
    mod.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=handles[h].memory_mib * 1024 * 1024)
    mod.nvmlDeviceGetNumaNodeId = lambda h: handles[h].numa

    def mig_mode(h):
        if not handles[h].mig:
            raise NVMLError("Not Supported")
        return (1, 1)

    mod.nvmlDeviceGetMigMode = mig_mode
    mod.nvmlDeviceGetMaxMigDeviceCount = lambda h: 7

    def mig_handle(h, i):
        if i >= len(handles[h].mig):
            raise NVMLError("Not Found")
        return ("mig", h[1], i)

    mod.nvmlDeviceGetMigDeviceHandleByIndex = mig_handle
    return mod


@pytest.fixture
def make_fake_nvml():
    return fake_nvml


@pytest.fixture
def nvml_two_h100() -> types.ModuleType:
    return fake_nvml(
        [
            FakeGpu("GPU-11111111-2222-3333-4444-555555555555", "NVIDIA H100 80GB HBM3", 81559, numa=0),
            FakeGpu(
                "GPU-66666666-7777-8888-9999-000000000000",
                "NVIDIA H100 80GB HBM3",
                81559,
                numa=1,
                mig=[
                    ("3g.40gb", "MIG-aaaaaaaa-0000-0000-0000-000000000001"),
                    ("1g.10gb", "MIG-aaaaaaaa-0000-0000-0000-000000000002"),
                ],
            ),
        ]
    )
