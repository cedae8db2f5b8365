"""The in-tree autoscaler: what KubeRay's autoscaler sidecar does, as a small equivalent.

Each round reads the cluster's resource state from the Ray GCS (the autoscaler v2 view: every
node's idle time, the resource bundles that tasks, actors and placement groups wait for), then
:func:`decide` works out each worker group's replicas and which idle workers to remove, and
the controller writes them to the RayCluster (``replicas``, ``scaleStrategy.workersToDelete``)
exactly where the real autoscaler writes them.

:func:`decide` is pure: the same input gives the same answer, so it is tested without Ray.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

DEFAULT_IDLE_TIMEOUT_S = 60


@dataclass(frozen=True)
class GroupShape:
    name: str
    replicas: int
    min_replicas: int
    max_replicas: int
    num_of_hosts: int
    resources: Mapping[str, float]  # what one node of the group offers to Ray
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S


@dataclass(frozen=True)
class RayNode:
    instance_id: str  # the pod name (RAY_CLOUD_INSTANCE_ID)
    group: str  # RAY_NODE_TYPE_NAME
    idle_ms: int
    alive: bool = True


@dataclass(frozen=True)
class Demand:
    bundle: Mapping[str, float]
    count: int


@dataclass
class GroupDecision:
    replicas: int
    workers_to_delete: list[str] = field(default_factory=list)


def _fits(bundle: Mapping[str, float], free: dict[str, float]) -> bool:
    return all(free.get(k, 0.0) + 1e-9 >= v for k, v in bundle.items() if v > 0)


def _take(bundle: Mapping[str, float], free: dict[str, float]) -> None:
    for k, v in bundle.items():
        free[k] = free.get(k, 0.0) - v


def decide(
    groups: Sequence[GroupShape], demand: Sequence[Demand], nodes: Sequence[RayNode]
) -> dict[str, GroupDecision]:
    """New replicas per group: enough new nodes for the pending bundles (first group, by
    name, whose node shape holds a bundle, up to maxReplicas), and idle nodes past their
    group's idle timeout removed (down to minReplicas) when nothing waits."""
    out = {g.name: GroupDecision(g.replicas) for g in groups}
    ordered = sorted(groups, key=lambda g: g.name)
    # Pending demand: pack bundles first-fit into nodes we are adding.
    new_nodes: list[tuple[str, dict[str, float]]] = []
    for d in demand:
        for _ in range(d.count):
            if any(_fits(d.bundle, free) for _, free in new_nodes):
                for _, free in new_nodes:
                    if _fits(d.bundle, free):
                        _take(d.bundle, free)
                        break
                continue
            for g in ordered:
                decision = out[g.name]
                if decision.replicas < g.max_replicas and _fits(d.bundle, dict(g.resources)):
                    decision.replicas += 1
                    for _ in range(g.num_of_hosts):
                        new_nodes.append((g.name, dict(g.resources)))
                    _take(d.bundle, new_nodes[-g.num_of_hosts][1])
                    break
    if demand:
        return out
    # Nothing waits: remove workers idle for longer than their group allows.
    by_group: dict[str, list[RayNode]] = {}
    for n in nodes:
        if n.alive:
            by_group.setdefault(n.group, []).append(n)
    for g in ordered:
        decision = out[g.name]
        idle = sorted(
            (n for n in by_group.get(g.name, ()) if n.idle_ms >= g.idle_timeout_s * 1000),
            key=lambda n: (-n.idle_ms, n.instance_id),
        )
        for n in idle:
            if decision.replicas <= g.min_replicas:
                break
            decision.replicas -= 1
            decision.workers_to_delete.append(n.instance_id)
    return out


@dataclass(frozen=True)
class ClusterState:
    demand: list[Demand]
    nodes: list[RayNode]


def read_cluster_state(gcs_address: str) -> ClusterState:
    """The GCS's resource state (needs the ``ray`` package; imported here only, so the
    control plane loads Ray when a cluster autoscales and not before)."""
    from ray._raylet import GcsClient  # type: ignore[attr-defined]  # a Cython module
    from ray.autoscaler.v2.sdk import get_cluster_resource_state

    state = get_cluster_resource_state(GcsClient(address=gcs_address))
    demand = [Demand(dict(r.request.resources_bundle), int(r.count)) for r in state.pending_resource_requests]
    for gang in state.pending_gang_resource_requests:
        for req in gang.requests:
            demand.append(Demand(dict(req.resources_bundle), 1))
    for constraint in state.cluster_resource_constraints:
        for r in constraint.resource_requests:
            demand.append(Demand(dict(r.request.resources_bundle), int(r.count)))
    nodes = [
        RayNode(
            instance_id=str(n.instance_id),
            group=str(n.ray_node_type_name),
            idle_ms=int(n.idle_duration_ms),
            alive=n.status in (1, 3),  # NodeStatus RUNNING, IDLE
        )
        for n in state.node_states
    ]
    return ClusterState(demand, nodes)
