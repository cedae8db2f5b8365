"""Builders for the gang and topology tests: a cluster of GPU nodes in blocks and racks, gangs."""

from __future__ import annotations

from sched_builders import node, pod_spec

from kubehpc.sched import NodeInfo, NodeTable
from kubehpc.sched.gang import Gang, GangOptions, GangPodSet
from kubehpc.sched.model import PodShape
from kubehpc.sched.podspec import shape_of
from kubehpc.sched.topology import Mode, Packing, TopologyRequest, TopologyTree

BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"
LEVELS = (BLOCK, RACK, HOST)


def gpu_node(name: str, gpus: int = 8, used: int = 0, **labels: str) -> NodeInfo:
    return node(
        name,
        cpu="64",
        memory="512Gi",
        extended={"nvidia.com/gpu": gpus},
        used={"nvidia.com/gpu": used} if used else None,
        labels={HOST: name, **labels},
    )


def cluster(
    blocks: int, racks: int, hosts: int, gpus: int = 8, used: dict[str, int] | None = None
) -> NodeTable:
    """``blocks`` x ``racks`` x ``hosts`` nodes named ``b<i>-r<j>-n<k>``; ``used`` GPUs per node name."""
    used = used or {}
    nodes = []
    for b in range(blocks):
        for r in range(racks):
            for h in range(hosts):
                name = f"b{b}-r{r}-n{h}"
                nodes.append(gpu_node(name, gpus, used.get(name, 0), **{BLOCK: f"b{b}", RACK: f"b{b}-r{r}"}))
    return NodeTable.build(nodes)


def gpu_shape(gpus: int, cpu: str = "1") -> PodShape:
    return shape_of(pod_spec(cpu=cpu, limits={"nvidia.com/gpu": gpus}))


def pod_set(
    name: str, count: int, gpus: int = 8, level: str | None = None, mode: Mode = Mode.REQUIRED, **kw: object
) -> GangPodSet:
    topology = None if level is None and mode is Mode.REQUIRED else TopologyRequest(mode, level or "node")
    ids = tuple(f"{name}-{i}" for i in range(count))
    return GangPodSet(name, gpu_shape(gpus), count, topology=topology, pod_ids=ids, **kw)  # type: ignore[arg-type]


def gang(uid: str, *sets: GangPodSet, priority: int = 0, created: float = 0.0, **kw: object) -> Gang:
    return Gang(uid, tuple(sets), priority=priority, created=created, topology="default", **kw)  # type: ignore[arg-type]


def options(
    table: NodeTable, packing: Packing = Packing.BINPACK, levels: tuple[str, ...] = LEVELS
) -> GangOptions:
    return GangOptions(packing, (("default", TopologyTree.from_labels(table, levels)),))


def nodes_of(placement: object) -> list[str]:
    return sorted(b.node for b in placement.bindings)  # type: ignore[attr-defined]
