"""ClusterConfig (``kubehpc.io/v1alpha1``): the virtual nodes an embedded cluster runs.

``kubehpc up --cluster FILE`` reads one; with no file the cluster is one node sized from this
machine (see :func:`this_machine_config`). Example::

    apiVersion: kubehpc.io/v1alpha1
    kind: ClusterConfig
    metadata: {name: demo}
    spec:
      nodePools:
        - name: gpu
          count: 2
          cpu: "8"
          memory: 32Gi
          topology: {block: b1, rack: r1}
          gpus:
            model: A100-80GB
            count: 4
            nvlinkGroups: [[0, 1], [2, 3]]
            numaNodes: [0, 0, 1, 1]
            pcieSwitches: [0, 0, 1, 1]
            mig:
              strategy: mixed
              layout: {"3": [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]}
            sharing:
              timeSlicing:      # or mps: {resources: [...]} (whole GPUs, no MIG)
                resources: [{name: nvidia.com/gpu, replicas: 2}]
      imagePrefixes:
        - image: "*.sif"
          prefix: [apptainer, exec, "{image}"]

Two passes check a config: pydantic checks shapes and types, then :func:`_check` checks what
depends on the GPU catalogue (models, MIG layouts, NVLink groups). Both report through
:class:`ClusterConfigError`, one line per problem, each naming the field
(``cluster.yaml: spec.nodePools[1].gpus.model: unknown GPU model "H300"; known: ...``).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from kubehpc.api import gpus as catalogue
from kubehpc.api.names import dns1123_subdomain, label_value, qualified_name
from kubehpc.api.quantity import parse_quantity

API_VERSION = "kubehpc.io/v1alpha1"
KIND = "ClusterConfig"
AUTO = "auto"

# Labels kubehpc puts on every node for topology-aware scheduling (Kueue TAS levels).
LABEL_BLOCK = "topology.kubehpc.io/block"
LABEL_RACK = "topology.kubehpc.io/rack"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_POOL = "kubehpc.io/node-pool"

MigStrategy = Literal["none", "single", "mixed"]


class ClusterConfigError(ValueError):
    """A cluster config that cannot be used; ``problems`` are (field path, message) pairs."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source = source
        self.problems = problems
        lines = [f"{source}: {path}: {msg}" if path else f"{source}: {msg}" for path, msg in problems]
        super().__init__("\n".join(lines))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True)


class Taint(_Model):
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Topology(_Model):
    block: str | None = None
    rack: str | None = None


class TimeSlicingResource(_Model):
    name: str
    replicas: int = Field(ge=1)


class TimeSlicing(_Model):
    """As the NVIDIA device plugin's ``sharing.timeSlicing``."""

    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = False
    resources: list[TimeSlicingResource] = Field(default_factory=list)


class Mps(_Model):
    """As the NVIDIA device plugin's ``sharing.mps``: each GPU advertised ``replicas`` times,
    each replica an equal share of the GPU's memory and compute (whole GPUs only, no MIG)."""

    rename_by_default: bool = False
    resources: list[TimeSlicingResource] = Field(default_factory=list)


class Sharing(_Model):
    time_slicing: TimeSlicing | None = None
    mps: Mps | None = None


class MigSpec(_Model):
    strategy: MigStrategy | None = None
    """none | single | mixed, as the device plugin's MIG_STRATEGY. Default: mixed when a
    layout is given, else none."""
    layout: dict[str, list[str]] = Field(default_factory=dict)
    """GPU index ("0", "1", ... or "all") -> the MIG instances on that GPU, each a profile name
    with an optional ``@start`` memory slice (``3g.40gb@4``)."""

    @property
    def effective_strategy(self) -> MigStrategy:
        if self.strategy is not None:
            return self.strategy
        return "mixed" if self.layout else "none"


class GpuSpec(_Model):
    model: str
    """A catalogue model (``H100-80GB``) or ``auto``: this machine's GPUs as NVML finds them."""
    count: int = Field(default=1, ge=0, le=64)
    memory: str | int | None = None
    """Memory per GPU (a quantity); default from the catalogue."""
    nvlink_groups: list[list[int]] | None = None
    """GPUs that share an NVLink/NVSwitch domain; default: all GPUs of the node in one group."""
    numa_nodes: list[int] | None = None
    """The NUMA node of each GPU, by index; default: first half on 0, second half on 1."""
    pcie_switches: list[int] | None = None
    """The PCIe switch each GPU sits behind, by index; default: not known (not used in choosing)."""
    mig: MigSpec | None = None
    sharing: Sharing | None = None


class NodePool(_Model):
    name: str
    count: int = Field(default=1, ge=1, le=10000)
    cpu: str | int = "4"
    memory: str | int = "16Gi"
    pods: int = Field(default=110, ge=1)
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    topology: Topology = Field(default_factory=Topology)
    hostnames: list[str] | None = None
    """One node name per node; default ``<pool>-<index>``."""
    gpus: GpuSpec | None = None


class ImagePrefix(_Model):
    image: str
    """A glob (fnmatch) over the container's image."""
    prefix: list[str] = Field(min_length=1)
    """Argv put before the container's command; ``{image}`` is replaced by the image."""


class Metadata(_Model):
    name: str = "kubehpc"


class ClusterSpec(_Model):
    node_pools: list[NodePool] = Field(min_length=1)
    image_prefixes: list[ImagePrefix] = Field(default_factory=list)


class ClusterConfig(_Model):
    api_version: Literal["kubehpc.io/v1alpha1"]
    kind: Literal["ClusterConfig"]
    metadata: Metadata = Field(default_factory=Metadata)
    spec: ClusterSpec

    def command_prefix(self, image: str) -> list[str]:
        """The argv prefix for a container image (first matching rule), or [] when none."""
        for rule in self.spec.image_prefixes:
            if fnmatch.fnmatchcase(image, rule.image):
                return [part.replace("{image}", image) for part in rule.prefix]
        return []


# ---------------------------------------------------------------------------------------------
# Resolved nodes: what the device plugin and the node agent build on.


@dataclass(frozen=True)
class HostGpu:
    """One GPU of this machine as NVML reports it (input to ``model: auto`` pools)."""

    index: int
    uuid: str
    product: str
    memory_mib: int
    numa_node: int = 0
    mig_devices: tuple[tuple[str, str], ...] = ()  # (profile name, MIG UUID)
    nvlink_group: int = 0  # GPUs NVLink connects share one; 0 for all when NVML cannot tell
    pcie_switch: int = -1  # GPUs behind one PCIe switch share one; -1: not known


@dataclass(frozen=True)
class HostFacts:
    cpu_count: int
    memory_bytes: int
    gpus: tuple[HostGpu, ...] = ()


@dataclass(frozen=True)
class GpuConfig:
    index: int
    model: catalogue.GpuModel
    memory_mib: int
    nvlink_group: int
    numa_node: int
    mig: tuple[catalogue.MigPlacement, ...] = ()
    uuid: str = ""  # real GPUs only; fake ones get a deterministic UUID from the node
    mig_uuids: tuple[str, ...] = ()
    pcie_switch: int = -1  # -1: not known


@dataclass(frozen=True)
class NodeConfig:
    name: str
    pool: str
    cpu_millis: int
    memory_bytes: int
    pods: int
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    gpus: tuple[GpuConfig, ...] = ()
    mig_strategy: MigStrategy = "none"
    time_slicing: TimeSlicing | None = None
    real_gpus: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    mps: Mps | None = None


# ---------------------------------------------------------------------------------------------
# Loading and checking


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_cluster_config(data: Any, source: str = "cluster config") -> ClusterConfig:
    """Validate a decoded document; raises :class:`ClusterConfigError` naming every bad field."""
    try:
        config = ClusterConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            msg = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown field"
            elif err["type"] == "missing":
                msg = "required field is missing"
            elif err["type"] == "literal_error":
                msg = f"{msg}, got {err['input']!r}"
            problems.append((_loc(err["loc"]), msg))
        raise ClusterConfigError(source, problems) from None
    problems = _check(config)
    if problems:
        raise ClusterConfigError(source, problems)
    return config


def load_cluster_config(path: str | Path) -> ClusterConfig:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ClusterConfigError(p.name, [("", f"cannot read: {exc.strerror}")]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ClusterConfigError(p.name, [("", f"invalid YAML: {exc}")]) from None
    return parse_cluster_config(data, p.name)


def _check_quantity(
    path: str, value: str | int, problems: list[tuple[str, str]], positive: bool = True
) -> None:
    if value == AUTO:
        return
    try:
        q = parse_quantity(value)
    except ValueError as exc:
        problems.append((path, str(exc)))
        return
    if positive and q.amount <= 0:
        problems.append((path, f"must be greater than 0, got {value!r}"))


def _check(config: ClusterConfig) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    seen_pools: set[str] = set()
    seen_nodes: set[str] = set()
    for i, pool in enumerate(config.spec.node_pools):
        base = f"spec.nodePools[{i}]"
        if pool.name in seen_pools:
            problems.append((f"{base}.name", f'duplicate node pool name "{pool.name}"'))
        seen_pools.add(pool.name)
        problems += [(f"{base}.name", m) for m in dns1123_subdomain(pool.name)]
        _check_quantity(f"{base}.cpu", pool.cpu, problems)
        _check_quantity(f"{base}.memory", pool.memory, problems)
        for key, value in pool.labels.items():
            problems += [(f"{base}.labels.{key}", m) for m in qualified_name(key.rpartition("/")[2])]
            problems += [(f"{base}.labels.{key}", m) for m in label_value(value)]
        for level in ("block", "rack"):
            value = getattr(pool.topology, level)
            if value is not None:
                problems += [(f"{base}.topology.{level}", m) for m in label_value(value)]
        if pool.hostnames is not None and len(pool.hostnames) != pool.count:
            problems.append(
                (
                    f"{base}.hostnames",
                    f"has {len(pool.hostnames)} names for count {pool.count}; give one per node",
                )
            )
        for name in _node_names(pool):
            if name in seen_nodes:
                problems.append((f"{base}.hostnames", f'node name "{name}" is used twice'))
            seen_nodes.add(name)
            problems += [(f"{base}.hostnames", f'"{name}": {m}') for m in dns1123_subdomain(name)]
        if pool.gpus is not None:
            problems += _check_gpus(f"{base}.gpus", pool.gpus)
    for i, rule in enumerate(config.spec.image_prefixes):
        if not rule.image:
            problems.append((f"spec.imagePrefixes[{i}].image", "must not be empty"))
    return problems


def _check_gpus(base: str, spec: GpuSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if spec.model == AUTO:
        if spec.mig and spec.mig.layout:
            problems.append(
                (f"{base}.mig.layout", "a MIG layout needs a GPU model; with model auto, NVML reports it")
            )
        return problems
    model = catalogue.gpu_model(spec.model)
    if model is None:
        known = ", ".join(catalogue.CATALOGUE)
        return [(f"{base}.model", f'unknown GPU model "{spec.model}"; known: {known}')]
    if spec.memory is not None:
        _check_quantity(f"{base}.memory", spec.memory, problems)
    n = spec.count
    if spec.nvlink_groups is not None:
        seen: set[int] = set()
        for g, group in enumerate(spec.nvlink_groups):
            for j, idx in enumerate(group):
                if not 0 <= idx < n:
                    problems.append(
                        (f"{base}.nvlinkGroups[{g}][{j}]", f"GPU index {idx} is out of range 0..{n - 1}")
                    )
                elif idx in seen:
                    problems.append((f"{base}.nvlinkGroups[{g}][{j}]", f"GPU {idx} is in two NVLink groups"))
                seen.add(idx)
    if spec.numa_nodes is not None:
        if len(spec.numa_nodes) != n:
            problems.append(
                (f"{base}.numaNodes", f"has {len(spec.numa_nodes)} entries for {n} GPUs; give one per GPU")
            )
        for j, node in enumerate(spec.numa_nodes):
            if node < 0:
                problems.append((f"{base}.numaNodes[{j}]", f"must be >= 0, got {node}"))
    if spec.pcie_switches is not None:
        if len(spec.pcie_switches) != n:
            problems.append(
                (
                    f"{base}.pcieSwitches",
                    f"has {len(spec.pcie_switches)} entries for {n} GPUs; give one per GPU",
                )
            )
        for j, switch in enumerate(spec.pcie_switches):
            if switch < 0:
                problems.append((f"{base}.pcieSwitches[{j}]", f"must be >= 0, got {switch}"))
    strategy = spec.mig.effective_strategy if spec.mig else "none"
    layout = _expand_layout(spec) if spec.mig else {}
    if spec.mig:
        for key, entries in spec.mig.layout.items():
            path = f"{base}.mig.layout.{key}"
            if key != "all" and (not key.isdigit() or int(key) >= n):
                problems.append((path, f'must be a GPU index 0..{n - 1} or "all", got "{key}"'))
                continue
            if not model.mig_capable:
                problems.append((path, f"{model.name} does not support MIG"))
                continue
            if not entries:
                problems.append((path, "an empty MIG layout; leave the GPU out to use it whole"))
                continue
            for j, entry in enumerate(entries):
                if model.mig_profile(entry.partition("@")[0].strip()) is None:
                    known = ", ".join(p.name for p in model.mig_profiles)
                    problems.append(
                        (f"{path}[{j}]", f'{model.name} has no MIG profile "{entry}"; known: {known}')
                    )
            if any(p.startswith(f"{path}[") for p, _ in problems):
                continue
            try:
                catalogue.plan_mig_layout(model, entries)
            except catalogue.MigLayoutError as exc:
                problems.append((path, str(exc)))
        if strategy == "none" and spec.mig.layout:
            problems.append(
                (f"{base}.mig.strategy", "strategy none ignores MIG; a layout needs single or mixed")
            )
        if strategy == "single":
            kinds = {tuple(sorted(e.partition("@")[0] for e in entries)) for entries in layout.values()}
            profiles = {p for k in kinds for p in k}
            if len(layout) != n or len(profiles) != 1:
                problems.append(
                    (
                        f"{base}.mig.strategy",
                        "strategy single needs every GPU of the node in MIG mode with one profile "
                        "(e.g. layout {all: [1g.10gb, ...]}); use mixed for anything else",
                    )
                )
    mps = spec.sharing.mps if spec.sharing else None
    if mps is not None:
        if spec.sharing and spec.sharing.time_slicing is not None:
            problems.append((f"{base}.sharing", "timeSlicing and mps cannot both share the same GPUs"))
        if spec.mig and spec.mig.layout:
            problems.append((f"{base}.sharing.mps", "MPS does not share GPUs with MIG enabled"))
        for j, res in enumerate(mps.resources):
            if res.name != "nvidia.com/gpu":
                problems.append(
                    (
                        f"{base}.sharing.mps.resources[{j}].name",
                        f'MPS shares whole GPUs only (nvidia.com/gpu), not "{res.name}"',
                    )
                )
    ts = spec.sharing.time_slicing if spec.sharing else None
    if ts is not None:
        valid = {"nvidia.com/gpu"} | {f"nvidia.com/mig-{p.resource_suffix}" for p in model.mig_profiles}
        for j, res in enumerate(ts.resources):
            if res.name not in valid:
                problems.append(
                    (
                        f"{base}.sharing.timeSlicing.resources[{j}].name",
                        f'"{res.name}" is not a resource of {model.name}',
                    )
                )
    return problems


def _node_names(pool: NodePool) -> list[str]:
    if pool.hostnames is not None:
        return list(pool.hostnames)
    return [f"{pool.name}-{i}" for i in range(pool.count)]


def _expand_layout(spec: GpuSpec) -> dict[int, list[str]]:
    if spec.mig is None:
        return {}
    out: dict[int, list[str]] = {}
    if "all" in spec.mig.layout:
        out = {i: list(spec.mig.layout["all"]) for i in range(spec.count)}
    for key, entries in spec.mig.layout.items():
        if key.isdigit() and int(key) < spec.count:
            out[int(key)] = list(entries)
    return out


# ---------------------------------------------------------------------------------------------
# Resolution into nodes


def resolve_nodes(config: ClusterConfig, host: HostFacts | None = None) -> list[NodeConfig]:
    """The nodes a (checked) config describes. ``host`` answers ``auto`` fields; without it,
    ``auto`` means 1 CPU / 1 GiB / no GPUs, which keeps resolution pure for tests."""
    host = host or HostFacts(cpu_count=1, memory_bytes=1 << 30)
    nodes: list[NodeConfig] = []
    for pool in config.spec.node_pools:
        cpu = host.cpu_count * 1000 if pool.cpu == AUTO else parse_quantity(pool.cpu).milli_value()
        memory = host.memory_bytes if pool.memory == AUTO else parse_quantity(pool.memory).value()
        for i, name in enumerate(_node_names(pool)):
            labels = {LABEL_HOSTNAME: name, LABEL_POOL: pool.name, **pool.labels}
            if pool.topology.block:
                labels[LABEL_BLOCK] = pool.topology.block
            if pool.topology.rack:
                labels[LABEL_RACK] = pool.topology.rack
            gpus, real = _resolve_gpus(pool.gpus, host)
            spec = pool.gpus
            mig = spec.mig.effective_strategy if spec and spec.mig else "none"
            if real and any(g.mig for g in gpus) and mig == "none":
                mig = "mixed"
            nodes.append(
                NodeConfig(
                    name=name,
                    pool=pool.name,
                    cpu_millis=cpu,
                    memory_bytes=memory,
                    pods=pool.pods,
                    labels=labels,
                    taints=tuple(pool.taints),
                    gpus=tuple(gpus),
                    mig_strategy=mig,
                    time_slicing=spec.sharing.time_slicing if spec and spec.sharing else None,
                    real_gpus=real,
                    extra={"index": i},
                    mps=spec.sharing.mps if spec and spec.sharing else None,
                )
            )
    return nodes


def _resolve_gpus(spec: GpuSpec | None, host: HostFacts) -> tuple[list[GpuConfig], bool]:
    if spec is None or (spec.count == 0 and spec.model != AUTO):
        return [], False
    if spec.model == AUTO:
        return [_host_gpu(g) for g in host.gpus], True
    model = catalogue.gpu_model(spec.model)
    assert model is not None, "resolve_nodes needs a checked config"
    memory_mib = (
        parse_quantity(spec.memory).value() // (1024 * 1024) if spec.memory is not None else model.memory_mib
    )
    n = spec.count
    group_of = {i: 0 for i in range(n)}
    if spec.nvlink_groups is not None:
        # GPUs in no listed group get a group of their own: no NVLink peer.
        group_of = {i: len(spec.nvlink_groups) + i for i in range(n)}
        for g, group in enumerate(spec.nvlink_groups):
            for idx in group:
                group_of[idx] = g
    numa = (
        spec.numa_nodes if spec.numa_nodes is not None else [0 if i < (n + 1) // 2 else 1 for i in range(n)]
    )
    if n == 1 and spec.numa_nodes is None:
        numa = [0]
    layout = _expand_layout(spec)
    return [
        GpuConfig(
            index=i,
            model=model,
            memory_mib=memory_mib,
            nvlink_group=group_of[i],
            numa_node=numa[i],
            mig=catalogue.plan_mig_layout(model, layout[i]) if i in layout else (),
            pcie_switch=spec.pcie_switches[i] if spec.pcie_switches is not None else -1,
        )
        for i in range(n)
    ], False


def _host_gpu(g: HostGpu) -> GpuConfig:
    model = catalogue.model_from_product(g.product, g.memory_mib) or catalogue.GpuModel(
        name=g.product,
        product=g.product.replace(" ", "-"),
        memory_mib=g.memory_mib,
        family="unknown",
        compute_major=0,
        compute_minor=0,
    )
    placements: list[catalogue.MigPlacement] = []
    uuids: list[str] = []
    for profile_name, uuid in g.mig_devices:
        profile = model.mig_profile(profile_name) or catalogue.MigProfile(profile_name, 0, 0, (0,), 0, 7)
        placements.append(catalogue.MigPlacement(profile, len(placements)))
        uuids.append(uuid)
    return GpuConfig(
        index=g.index,
        model=model,
        memory_mib=g.memory_mib,
        nvlink_group=g.nvlink_group,
        numa_node=g.numa_node,
        mig=tuple(placements),
        uuid=g.uuid,
        mig_uuids=tuple(uuids),
        pcie_switch=g.pcie_switch,
    )


def this_machine_config(name: str = "this-machine") -> ClusterConfig:
    """The default cluster: one node named ``name`` with this machine's CPUs, memory and (when
    NVML finds any) GPUs; resolve it with :func:`resolve_nodes` and the host's facts."""
    return parse_cluster_config(
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": name},
            "spec": {
                "nodePools": [
                    {"name": name, "hostnames": [name], "cpu": AUTO, "memory": AUTO, "gpus": {"model": AUTO}}
                ]
            },
        },
        "default cluster config",
    )


def host_memory_bytes(meminfo: str = "/proc/meminfo") -> int:
    """MemTotal from /proc/meminfo (bytes); falls back to sysconf where there is no procfs."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
