"""The device plugin of one node: what it advertises, and which devices each pod gets.

The model and the allocator are pure and live in :mod:`kubehpc.api.devices` (so the scheduler
can place pods on devices too); this class adds what a node needs around them: Node capacity
and labels, and admission of a bound pod, which keeps a scheduler's choice when it is still
valid and chooses itself otherwise, as the kubelet's device manager does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kubehpc.api.cluster_config import NodeConfig
from kubehpc.api.devices import (
    NODE_INVENTORY_ANNOTATION,
    AllocationError,
    NodeDevices,
    allocate_pod,
    container_device_requests,
    devices_in_use,
    gpu_feature_labels,
    mps_env,
    node_devices,
    pod_allocation,
    visible_devices_env,
)

# The physical GPUs a container holds, as the node numbers them ("0,1"; a MIG instance counts as
# its parent GPU): CUDA_VISIBLE_DEVICES carries device UUIDs, but some tools want the indices
# (sbatch's runner makes SLURM_JOB_GPUS of them, as slurmd does).
GPU_INDICES_ENV = "KUBEHPC_GPU_INDICES"


class DevicePlugin:
    def __init__(self, node: NodeConfig, cluster: str):
        self.node = node
        self.inventory: NodeDevices = node_devices(node, cluster)

    def capacity(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.inventory.capacity().items()}

    def labels(self) -> dict[str, str]:
        return gpu_feature_labels(self.node, self.inventory)

    def annotations(self) -> dict[str, str]:
        return {NODE_INVENTORY_ANNOTATION: self.inventory.to_json()} if self.inventory.devices else {}

    def admit(self, pod: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
        """Devices for ``pod`` given the node's other live pods; raises AllocationError.

        A recorded allocation (by the scheduler, or by this agent before a restart) is kept
        when every device exists, counts toward the resource asked for, and is not held by
        more pods than it allows; otherwise the plugin allocates afresh.
        """
        used = devices_in_use(others)
        recorded = pod_allocation(pod)
        if recorded and self._valid(pod, recorded, used):
            return recorded
        return allocate_pod(self.inventory, used, pod)

    def _valid(self, pod: Mapping[str, Any], recorded: dict[str, list[str]], used: Mapping[str, int]) -> bool:
        by_id = self.inventory.by_id()
        spec = pod.get("spec") or {}
        taken = dict(used)
        for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
            want = container_device_requests(c, self.inventory.resources)
            ids = recorded.get(c["name"], [])
            got: dict[str, int] = {}
            for dev_id in ids:
                dev = by_id.get(dev_id)
                if dev is None:
                    return False
                got[dev.resource] = got.get(dev.resource, 0) + 1
            if got != want:
                return False
        for dev_id in {d for ids in recorded.values() for d in ids}:
            if taken.get(dev_id, 0) + 1 > by_id[dev_id].replicas:
                return False
        return True

    @staticmethod
    def env(allocation: Mapping[str, list[str]], container: str) -> dict[str, str]:
        return visible_devices_env(allocation.get(container, []))

    def container_env(self, allocation: Mapping[str, list[str]], container: str) -> dict[str, str]:
        """The devices a container's process sees, the MPS limits of shared ones, and the node's
        indices of the GPUs it holds (:data:`GPU_INDICES_ENV`)."""
        ids = allocation.get(container, [])
        by_id = self.inventory.by_id()
        devices = [by_id[i] for i in ids if i in by_id]
        env = {**visible_devices_env(ids), **mps_env(devices)}
        if devices:
            env[GPU_INDICES_ENV] = ",".join(str(i) for i in sorted({d.gpu_index for d in devices}))
        return env


def allocation_annotation(allocation: Mapping[str, list[str]]) -> str:
    return json.dumps(dict(sorted(allocation.items())), separators=(",", ":"))


__all__ = ["GPU_INDICES_ENV", "AllocationError", "DevicePlugin", "allocation_annotation"]
