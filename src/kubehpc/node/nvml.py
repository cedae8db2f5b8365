"""Real GPU discovery through NVML (the ``nvidia-ml-py`` package, module ``pynvml``).

Only this module touches NVML. It answers "which GPUs does this machine have, and which are
cut into MIG instances" as :class:`~kubehpc.api.cluster_config.HostGpu` records; everything
after that (advertising, labels, allocation) is the same code path as for fake GPUs. With no
``pynvml`` module, no driver, or no GPU, discovery returns no GPUs and says why in
:attr:`Discovery.reason` instead of failing: a laptop is a valid cluster.

Tests pass a fake module object with the same functions (see tests/node/fake_nvml.py).
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kubehpc.api.cluster_config import HostFacts, HostGpu, host_memory_bytes

_MIG_NAME = re.compile(r"\bMIG\s+(\S+)")


@dataclass(frozen=True)
class Discovery:
    gpus: tuple[HostGpu, ...]
    driver_version: str = ""
    reason: str = ""  # why no GPUs were found, when none were


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _load(module: ModuleType | None) -> ModuleType | None:
    if module is not None:
        return module
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def _numa_node(nvml: Any, handle: Any) -> int:
    getter = getattr(nvml, "nvmlDeviceGetNumaNodeId", None)
    if getter is not None:
        try:
            return max(int(getter(handle)), 0)
        except Exception:
            pass
    try:
        bus_id = _text(nvml.nvmlDeviceGetPciInfo(handle).busId).lower()
        # NVML's bus id has 8 hex digits of domain; sysfs uses 4.
        path = Path("/sys/bus/pci/devices") / bus_id[-12:]
        return max(int(path.joinpath("numa_node").read_text().strip()), 0)
    except Exception:
        return 0


def _mig_devices(nvml: Any, handle: Any) -> tuple[tuple[str, str], ...]:
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except Exception:
        return ()  # not MIG-capable (NVML_ERROR_NOT_SUPPORTED)
    if current != getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1):
        return ()
    out: list[tuple[str, str]] = []
    for i in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
        except Exception:
            continue  # an empty slot
        match = _MIG_NAME.search(_text(nvml.nvmlDeviceGetName(mig)))
        profile = match.group(1) if match else "unknown"
        out.append((profile, _text(nvml.nvmlDeviceGetUUID(mig))))
    return tuple(out)


# NVML's answers (nvml.h), for pynvml builds that lack the names.
_P2P_CAPS_INDEX_NVLINK = 2
_P2P_STATUS_OK = 0
_TOPOLOGY_MULTIPLE = 20  # the two GPUs' common ancestor is a PCIe switch (one or several)


def _components(n: int, linked: Any) -> list[int]:
    """Each GPU's group: GPUs joined by ``linked(i, j)``, numbered by their lowest index."""
    group = list(range(n))

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if root(i) != root(j) and linked(i, j):
                group[max(root(i), root(j))] = min(root(i), root(j))
    roots = sorted({root(i) for i in range(n)})
    return [roots.index(root(i)) for i in range(n)]


def _nvlink_groups(nvml: Any, handles: list[Any]) -> list[int]:
    """NVLink islands from NVML's peer-to-peer status; one group for all when it cannot say."""
    getter = getattr(nvml, "nvmlDeviceGetP2PStatus", None)
    if getter is None:
        return [0] * len(handles)
    caps = getattr(nvml, "NVML_P2P_CAPS_INDEX_NVLINK", _P2P_CAPS_INDEX_NVLINK)
    ok = getattr(nvml, "NVML_P2P_STATUS_OK", _P2P_STATUS_OK)
    try:
        return _components(len(handles), lambda i, j: getter(handles[i], handles[j], caps) == ok)
    except Exception:
        return [0] * len(handles)


def _pcie_switches(nvml: Any, handles: list[Any]) -> list[int]:
    """GPUs whose closest common ancestor is a PCIe switch share one; -1 when NVML cannot say."""
    getter = getattr(nvml, "nvmlDeviceGetTopologyCommonAncestor", None)
    if getter is None:
        return [-1] * len(handles)
    multiple = getattr(nvml, "NVML_TOPOLOGY_MULTIPLE", _TOPOLOGY_MULTIPLE)
    try:
        return _components(len(handles), lambda i, j: int(getter(handles[i], handles[j])) <= multiple)
    except Exception:
        return [-1] * len(handles)


def discover(module: ModuleType | None = None) -> Discovery:
    """This machine's GPUs (and their MIG instances) as NVML reports them."""
    nvml = _load(module)
    if nvml is None:
        return Discovery((), reason="the pynvml module (nvidia-ml-py) is not installed")
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return Discovery((), reason=f"NVML is not available: {exc}")
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        gpus = []
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(int(nvml.nvmlDeviceGetCount()))]
        nvlink, pcie = _nvlink_groups(nvml, handles), _pcie_switches(nvml, handles)
        for index, handle in enumerate(handles):
            gpus.append(
                HostGpu(
                    index=index,
                    uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
                    product=_text(nvml.nvmlDeviceGetName(handle)),
                    memory_mib=int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // (1024 * 1024),
                    numa_node=_numa_node(nvml, handle),
                    mig_devices=_mig_devices(nvml, handle),
                    nvlink_group=nvlink[index],
                    pcie_switch=pcie[index],
                )
            )
        return Discovery(tuple(gpus), driver, "" if gpus else "NVML reports no GPUs")
    except Exception as exc:
        return Discovery((), reason=f"NVML query failed: {exc}")
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def host_facts(module: ModuleType | None = None) -> HostFacts:
    """CPUs this process may use, total memory, and NVML's GPUs: what ``auto`` fields mean."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return HostFacts(cpu_count=cpus, memory_bytes=host_memory_bytes(), gpus=discover(module).gpus)
