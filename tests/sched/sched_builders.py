"""Small builders for the scheduling core's unit tests: nodes and pods as a user writes them."""

from __future__ import annotations

from typing import Any

from kubehpc.api.quantity import resource_units
from kubehpc.sched import NodeInfo, NodeTable, PodSet, SchedulerConfig, Snapshot, Taint
from kubehpc.sched.podspec import shape_of


def node(
    name: str,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
    used: dict[str, Any] | None = None,
    extended: dict[str, Any] | None = None,
) -> NodeInfo:
    """A node offering cpu, memory, pods and the ``extended`` resources (``nvidia.com/gpu``)."""
    allocatable = {
        "cpu": resource_units("cpu", cpu),
        "memory": resource_units("memory", memory),
        "pods": pods,
    }
    for resource, value in (extended or {}).items():
        allocatable[resource] = resource_units(resource, value)
    return NodeInfo(
        name=name,
        allocatable=allocatable,
        used={r: resource_units(r, v) for r, v in (used or {}).items()},
        labels=labels or {},
        taints=taints,
        unschedulable=unschedulable,
    )


def pod_spec(
    cpu: str | None = None,
    memory: str | None = None,
    limits: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    requests: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = limits
    return {"containers": [{"name": "main", "image": "busybox", "resources": resources}], **spec}


def pod(name: str, priority: int = 0, created: float = 0.0, count: int = 1, **spec_args: Any) -> PodSet:
    spec = pod_spec(**spec_args)
    ids = (name,) if count == 1 else tuple(f"{name}-{i}" for i in range(count))
    return PodSet(
        uid=name, shape=shape_of(spec), priority=priority, created=created, count=count, pod_ids=ids
    )


def snapshot(nodes: list[NodeInfo], pods: list[PodSet], config: SchedulerConfig | None = None) -> Snapshot:
    return Snapshot(NodeTable.build(nodes), tuple(pods), config or SchedulerConfig())


def placed(decisions: Any) -> dict[str, str]:
    """Pod id -> node name."""
    return {b.pod: b.node for b in decisions.bindings}
