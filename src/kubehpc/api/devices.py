"""GPU devices of a node and their exclusive allocation: the NVIDIA device plugin's model, pure.

No I/O, clock or randomness, so both the node agent (kubelet role) and the scheduling core can
call it: given a node's :class:`NodeDevices`, the devices already held by pods on the node and
a pod's requests, :func:`allocate_pod` returns which device each container gets, or raises
:class:`AllocationError` saying why it cannot.

Devices and what they are advertised as, following k8s-device-plugin:

* A whole GPU is ``GPU-<uuid>`` and counts toward ``nvidia.com/gpu``.
* A MIG instance is ``MIG-<uuid>``. Under the ``mixed`` strategy it counts toward
  ``nvidia.com/mig-<profile>`` (``+`` spelt ``.``); under ``single`` toward ``nvidia.com/gpu``.
* With time-slicing (``sharing.timeSlicing.resources[].replicas``) a resource is advertised
  ``replicas`` times per device, and up to ``replicas`` containers share one device; with
  ``renameByDefault`` it is advertised as ``<name>.shared``. Without it a device is held by at
  most one container.
* With MPS (``sharing.mps``, whole GPUs only) the same, and each replica is also limited to an
  equal share of the GPU's threads and memory (:func:`mps_env`); a container asks for one.

Where allocations are recorded (the contract between scheduler, agent and users):

* Pod annotation :data:`POD_DEVICES_ANNOTATION`, ``kubehpc.io/devices``: JSON
  ``{"<container>": ["GPU-…", "MIG-…"]}``. The process of that container gets exactly these
  UUIDs in ``CUDA_VISIBLE_DEVICES`` and ``NVIDIA_VISIBLE_DEVICES`` (:func:`visible_devices_env`).
* Node annotation :data:`NODE_INVENTORY_ANNOTATION`, ``kubehpc.io/gpu-devices``: the node's
  device list (:meth:`NodeDevices.to_json`), so a scheduler can rebuild :class:`NodeDevices`
  from the Node object alone (:meth:`NodeDevices.from_json`).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kubehpc.api.quantity import resource_units

if TYPE_CHECKING:  # pydantic models: the scheduler imports this module and never needs them
    from kubehpc.api.cluster_config import NodeConfig

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
POD_DEVICES_ANNOTATION = "kubehpc.io/devices"
TIME_SLICING = "time-slicing"
MPS = "mps"
NODE_INVENTORY_ANNOTATION = "kubehpc.io/gpu-devices"

# uuid5 namespace for fake devices: the same cluster/node/index always gets the same UUID.
_FAKE_NS = uuid.UUID("6b1e4f1c-3f0e-5c7a-9d35-6b7562656863")


class AllocationError(ValueError):
    """The request cannot be met from the node's free devices (the message says why)."""


@dataclass(frozen=True)
class Device:
    id: str  # "GPU-<uuid>" or "MIG-<uuid>": what the process sees
    resource: str  # the resource it counts toward: nvidia.com/gpu, nvidia.com/mig-1g.10gb, ….shared
    gpu_index: int  # the physical GPU (MIG instances: their parent)
    nvlink_group: int
    numa_node: int
    memory_mib: int
    profile: str = ""  # MIG profile ("1g.10gb"); "" for a whole GPU
    replicas: int = 1  # how many containers may hold it at once (time-slicing, MPS)
    sharing: str = ""  # "time-slicing" or "mps" when replicas are advertised; "" otherwise
    pcie_switch: int = -1  # the PCIe switch the GPU sits behind; -1: not known


_CAMEL = {
    "id": "id",
    "resource": "resource",
    "gpu_index": "gpuIndex",
    "nvlink_group": "nvlinkGroup",
    "numa_node": "numaNode",
    "memory_mib": "memoryMiB",
    "profile": "profile",
    "replicas": "replicas",
    "sharing": "sharing",
    "pcie_switch": "pcieSwitch",
}


@dataclass(frozen=True)
class NodeDevices:
    node: str
    devices: tuple[Device, ...]
    fail_requests_greater_than_one: bool = False

    def capacity(self) -> dict[str, int]:
        """Advertised counts per resource (replicas included), as Node capacity shows them."""
        out: Counter[str] = Counter()
        for d in self.devices:
            out[d.resource] += d.replicas
        return dict(sorted(out.items()))

    @property
    def resources(self) -> frozenset[str]:
        return frozenset(d.resource for d in self.devices)

    def by_id(self) -> dict[str, Device]:
        return {d.id: d for d in self.devices}

    def to_json(self) -> str:
        """The inventory as the Node annotation carries it (camelCase, like the rest of a Node)."""
        devices = [{_CAMEL[k]: v for k, v in asdict(d).items()} for d in self.devices]
        data = {"failRequestsGreaterThanOne": self.fail_requests_greater_than_one, "devices": devices}
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, node: str, text: str) -> NodeDevices:
        data = json.loads(text)
        snake = {v: k for k, v in _CAMEL.items()}
        return cls(
            node=node,
            devices=tuple(
                Device(**{snake[k]: v for k, v in d.items() if k in snake}) for d in data.get("devices", [])
            ),
            fail_requests_greater_than_one=bool(data.get("failRequestsGreaterThanOne", False)),
        )

    @classmethod
    def from_node(cls, node: Mapping[str, Any]) -> NodeDevices:
        """The inventory a Node object carries (empty when it has none)."""
        meta = node.get("metadata") or {}
        text = (meta.get("annotations") or {}).get(NODE_INVENTORY_ANNOTATION, "")
        return cls.from_json(str(meta.get("name", "")), text) if text else cls(str(meta.get("name", "")), ())


def fake_gpu_uuid(cluster: str, node: str, index: int) -> str:
    return "GPU-" + str(uuid.uuid5(_FAKE_NS, f"{cluster}/{node}/gpu/{index}"))


def fake_mig_uuid(cluster: str, node: str, index: int, start: int, profile: str) -> str:
    return "MIG-" + str(uuid.uuid5(_FAKE_NS, f"{cluster}/{node}/gpu/{index}/mig/{start}/{profile}"))


def node_devices(node: NodeConfig, cluster: str) -> NodeDevices:
    """The devices of a resolved node: fake ones with deterministic UUIDs, or the real ones
    NVML reported (``GpuConfig.uuid`` set)."""
    ts = node.time_slicing
    shared = ts or node.mps
    replicas = {r.name: r.replicas for r in shared.resources} if shared else {}
    rename = bool(shared and shared.rename_by_default)
    mode = MPS if node.mps is not None and ts is None else TIME_SLICING

    def advertised(resource: str) -> tuple[str, int]:
        n = replicas.get(resource, 1)
        return (resource + ".shared" if rename and resource in replicas else resource), n

    devices: list[Device] = []
    for gpu in node.gpus:
        if gpu.mig and node.mig_strategy != "none":
            for k, placement in enumerate(gpu.mig):
                p = placement.profile
                base = (
                    GPU_RESOURCE if node.mig_strategy == "single" else MIG_RESOURCE_PREFIX + p.resource_suffix
                )
                resource, n = advertised(base)
                dev_id = (
                    gpu.mig_uuids[k]
                    if k < len(gpu.mig_uuids)
                    else fake_mig_uuid(cluster, node.name, gpu.index, placement.start, p.name)
                )
                devices.append(
                    Device(
                        dev_id,
                        resource,
                        gpu.index,
                        gpu.nvlink_group,
                        gpu.numa_node,
                        p.memory_mib,
                        p.name,
                        n,
                        mode if n > 1 else "",
                        gpu.pcie_switch,
                    )
                )
        elif not gpu.mig:
            resource, n = advertised(GPU_RESOURCE)
            dev_id = gpu.uuid or fake_gpu_uuid(cluster, node.name, gpu.index)
            devices.append(
                Device(
                    dev_id,
                    resource,
                    gpu.index,
                    gpu.nvlink_group,
                    gpu.numa_node,
                    gpu.memory_mib,
                    "",
                    n,
                    mode if n > 1 else "",
                    gpu.pcie_switch,
                )
            )
        # A GPU in MIG mode under strategy "none" is not advertised at all, as the plugin does.
    return NodeDevices(node.name, tuple(devices), bool(ts and ts.fail_requests_greater_than_one))


def gpu_feature_labels(node: NodeConfig, inventory: NodeDevices) -> dict[str, str]:
    """The labels GPU Feature Discovery would put on this node (empty without GPUs)."""
    if not node.gpus:
        return {}
    first = node.gpus[0]
    model = first.model
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": model.product,
        "nvidia.com/gpu.count": str(len(node.gpus)),
        "nvidia.com/gpu.memory": str(first.memory_mib),
        "nvidia.com/gpu.family": model.family,
        "nvidia.com/gpu.compute.major": str(model.compute_major),
        "nvidia.com/gpu.compute.minor": str(model.compute_minor),
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/mig.capable": str(model.mig_capable).lower(),
        "nvidia.com/mig.strategy": node.mig_strategy,
        "nvidia.com/gpu.sharing-strategy": (
            TIME_SLICING if node.time_slicing else MPS if node.mps is not None else "none"
        ),
    }
    whole = [d for d in inventory.devices if not d.profile]
    if whole:
        labels["nvidia.com/gpu.replicas"] = str(whole[0].replicas)
    if (node.time_slicing or node.mps) and any(d.replicas > 1 for d in inventory.devices):
        labels["nvidia.com/gpu.product"] = model.product + "-SHARED"
    migs = [d for d in inventory.devices if d.profile]
    if node.mig_strategy == "single" and migs:
        # GFD overrides product/count/memory with the MIG devices' under the single strategy.
        labels["nvidia.com/gpu.product"] = f"{model.product}-MIG-{migs[0].profile}"
        labels["nvidia.com/gpu.count"] = str(len(migs))
        labels["nvidia.com/gpu.memory"] = str(migs[0].memory_mib)
        labels["nvidia.com/gpu.replicas"] = str(migs[0].replicas)
    elif node.mig_strategy == "mixed":
        by_profile: dict[str, list[Device]] = {}
        for d in migs:
            by_profile.setdefault(d.profile, []).append(d)
        profiles = {p.profile.name: p.profile for g in node.gpus for p in g.mig}
        for name, devs in sorted(by_profile.items()):
            key = "nvidia.com/mig-" + name.replace("+", ".")
            labels[key + ".count"] = str(len(devs))
            labels[key + ".memory"] = str(devs[0].memory_mib)
            labels[key + ".replicas"] = str(devs[0].replicas)
            if name in profiles:
                labels[key + ".slices.gi"] = str(profiles[name].compute_slices)
                labels[key + ".slices.ci"] = str(profiles[name].compute_slices)
    return labels


# ---------------------------------------------------------------------------------------------
# Allocation


def container_device_requests(container: Mapping[str, Any], resources: Iterable[str]) -> dict[str, int]:
    """How many of each device resource a container asks for (limits; requests when no limit,
    since extended resources must have requests equal to limits)."""
    res = container.get("resources") or {}
    limits = res.get("limits") or {}
    requests = res.get("requests") or {}
    out: dict[str, int] = {}
    for name in resources:
        value = limits.get(name, requests.get(name))
        if value is not None:
            n = resource_units(name, value)
            if n > 0:
                out[name] = n
    return out


def pod_requests_devices(pod: Mapping[str, Any], resources: Iterable[str]) -> bool:
    """Whether any container of the pod asks for one of ``resources``."""
    names = list(resources)
    spec = pod.get("spec") or {}
    return any(
        container_device_requests(c, names)
        for c in [*spec.get("initContainers", []), *spec.get("containers", [])]
    )


def pod_allocation(pod: Mapping[str, Any]) -> dict[str, list[str]]:
    """The devices recorded on a pod ({} when none or unreadable)."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_DEVICES_ANNOTATION)
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): [str(x) for x in v] for k, v in data.items() if isinstance(v, list)}


def devices_in_use(pods: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """How many holders each device has among ``pods`` (pass the node's non-terminated pods).

    A pod's init containers run before its containers and their devices are reused by them
    (as the kubelet's device manager does), so a pod holds the union of its recorded devices
    at the highest per-device multiplicity any one phase needs.
    """
    used: Counter[str] = Counter()
    for pod in pods:
        spec = pod.get("spec") or {}
        init_names = {c.get("name") for c in spec.get("initContainers", [])}
        alloc = pod_allocation(pod)
        app: Counter[str] = Counter()
        init_max: Counter[str] = Counter()
        for name, ids in alloc.items():
            if name in init_names:
                for dev, k in Counter(ids).items():
                    init_max[dev] = max(init_max[dev], k)
            else:
                app.update(ids)
        for dev in set(app) | set(init_max):
            used[dev] += max(app[dev], init_max[dev])
    return used


def allocate_pod(
    inventory: NodeDevices, used: Mapping[str, int], pod: Mapping[str, Any]
) -> dict[str, list[str]]:
    """Choose devices for every container of ``pod`` that requests any; {} when none does.

    Deterministic: the same inputs give the same answer. Init containers each choose from the
    devices free before the pod; app containers then choose together, reusing init devices.
    """
    spec = pod.get("spec") or {}
    resources = inventory.resources
    result: dict[str, list[str]] = {}
    for c in spec.get("initContainers", []):
        req = container_device_requests(c, resources)
        if req:
            result[c["name"]] = allocate(inventory, used, req, container=c["name"])
    taken: Counter[str] = Counter(used)
    for c in spec.get("containers", []):
        req = container_device_requests(c, resources)
        if req:
            ids = allocate(inventory, taken, req, container=c["name"])
            taken.update(ids)
            result[c["name"]] = ids
    # Requests for a device resource this node does not have at all.
    for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        limits = {
            **((c.get("resources") or {}).get("requests") or {}),
            **((c.get("resources") or {}).get("limits") or {}),
        }
        for name in limits:
            is_gpu = name == GPU_RESOURCE or name.startswith(MIG_RESOURCE_PREFIX)
            if is_gpu and name not in resources and resource_units(name, limits[name]) > 0:
                raise AllocationError(f'container "{c["name"]}": node {inventory.node} has no {name}')
    return result


def allocate(
    inventory: NodeDevices, used: Mapping[str, int], requests: Mapping[str, int], container: str = ""
) -> list[str]:
    """Device ids for one container's ``requests`` ({resource: count}), given how many holders
    each device already has. Whole devices are never shared unless time-slicing allows it."""
    out: list[str] = []
    who = f'container "{container}": ' if container else ""
    taken: Counter[str] = Counter({k: v for k, v in used.items() if v})
    for resource, count in sorted(requests.items()):
        candidates = [d for d in inventory.devices if d.resource == resource]
        if not candidates:
            raise AllocationError(f"{who}node {inventory.node} has no {resource}")
        shared = any(d.replicas > 1 for d in candidates)
        if shared and count > 1 and inventory.fail_requests_greater_than_one:
            raise AllocationError(
                f"{who}{resource} is time-sliced with failRequestsGreaterThanOne; ask for 1, got {count}"
            )
        if count > 1 and any(d.sharing == MPS for d in candidates):
            # A replica is a fixed share of one GPU (its memory and threads); two would be
            # two limits in one process, which MPS cannot express.
            raise AllocationError(f"{who}{resource} is shared with MPS: ask for 1 replica, got {count}")
        free = [d for d in candidates if taken[d.id] < d.replicas]
        slots = sum(d.replicas - taken[d.id] for d in free)
        if slots < count:
            raise AllocationError(f"{who}{count} {resource} requested, {slots} free on node {inventory.node}")
        chosen = _pick_local(free, min(count, len(free)), taken)
        # Time-slicing with more replicas asked than distinct devices free: double up, least used first.
        while len(chosen) < count:
            spare = [d for d in free if taken[d.id] + chosen.count(d) < d.replicas]
            spare.sort(key=lambda d: (taken[d.id] + chosen.count(d), d.gpu_index, d.id))
            chosen.append(spare[0])
        for d in chosen:
            taken[d.id] += 1
        out.extend(d.id for d in chosen)
    return out


def _pick_local(free: Sequence[Device], n: int, taken: Mapping[str, int]) -> list[Device]:
    """``n`` distinct devices, as close together as possible: one NVLink group if any fits
    (the tightest such group, leaving bigger holes for bigger requests), else one PCIe switch
    (where known), else one NUMA node, else the fewest groups. Inside a domain: least shared,
    then lowest GPU index."""
    if n == 0:
        return []

    def order(d: Device) -> tuple[int, int, str]:
        return (taken.get(d.id, 0), d.gpu_index, d.id)

    for domain in ("nvlink_group", "pcie_switch", "numa_node"):
        groups: dict[int, list[Device]] = {}
        for d in free:
            if int(getattr(d, domain)) >= 0:  # a switch not known groups nothing
                groups.setdefault(int(getattr(d, domain)), []).append(d)
        fitting = [(len(devs), key) for key, devs in groups.items() if len(devs) >= n]
        if fitting:
            _, key = min(fitting)
            return sorted(groups[key], key=order)[:n]
    groups = {}
    for d in free:
        groups.setdefault(d.nvlink_group, []).append(d)
    chosen: list[Device] = []
    for key in sorted(groups, key=lambda k: (-len(groups[k]), k)):
        chosen.extend(sorted(groups[key], key=order)[: n - len(chosen)])
        if len(chosen) == n:
            break
    return chosen


def mps_env(devices: Sequence[Device]) -> dict[str, str]:
    """What an MPS client is limited to (the CUDA MPS client variables): each replica gets
    100/replicas % of the GPU's threads and memory/replicas of its memory, by the device's
    position in CUDA_VISIBLE_DEVICES. Empty when no device is MPS-shared."""
    unique = list({d.id: d for d in devices}.values())
    shared = [(i, d) for i, d in enumerate(unique) if d.sharing == MPS and d.replicas > 1]
    if not shared:
        return {}
    return {
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(min(100 // d.replicas for _, d in shared)),
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": ",".join(f"{i}={d.memory_mib // d.replicas}M" for i, d in shared),
    }


def visible_devices_env(ids: Sequence[str]) -> dict[str, str]:
    """What a container's process sees: its devices and nothing else. With no devices the
    variables are set to hide every GPU (``void`` is the NVIDIA container runtime's value for
    "none"; an empty CUDA_VISIBLE_DEVICES hides all GPUs from CUDA)."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return {"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void"}
    value = ",".join(unique)
    return {"CUDA_VISIBLE_DEVICES": value, "NVIDIA_VISIBLE_DEVICES": value}
