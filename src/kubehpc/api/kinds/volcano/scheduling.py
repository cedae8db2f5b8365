"""scheduling.volcano.sh/v1beta1: Queue (cluster-scoped, weighted share of the cluster) and
PodGroup (a gang: at least ``minMember`` pods start together, admitted through a Queue)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kubehpc.api.kinds.volcano.common import (
    DateTime,
    DNSSubdomain,
    Int32,
    LabelSelector,
    NetworkTopologySpec,
    NonNegativeInt32,
    PositiveInt32,
    ResourceList,
    Str253,
    VolcanoModel,
    VolcanoObject,
)

QueueState = Literal["Open", "Closed", "Closing", "Unknown"]
PodGroupPhase = Literal["Pending", "Running", "Unknown", "Inqueue", "Completed"]

# --- Queue ---------------------------------------------------------------------------------------


class NodeGroupAffinity(VolcanoModel):
    required_during_scheduling_ignored_during_execution: list[str] | None = None
    preferred_during_scheduling_ignored_during_execution: list[str] | None = None


class QueueAffinity(VolcanoModel):
    node_group_affinity: NodeGroupAffinity | None = None
    node_group_anti_affinity: NodeGroupAffinity | None = None


class Cluster(VolcanoModel):
    name: str | None = None
    weight: Int32 | None = None
    capacity: ResourceList | None = None


class Guarantee(VolcanoModel):
    resource: ResourceList | None = None


class QueueSpec(VolcanoModel):
    weight: Annotated[int, Field(ge=1, le=65535)] = 1
    capability: ResourceList | None = None
    deserved: ResourceList | None = None
    guarantee: Guarantee | None = None
    reclaimable: bool | None = None
    parent: DNSSubdomain | None = None
    priority: NonNegativeInt32 | None = None
    type: Str253 | None = None
    dequeue_strategy: Literal["fifo", "traverse"] = "traverse"
    affinity: QueueAffinity | None = None
    extend_clusters: list[Cluster] | None = None


class Reservation(VolcanoModel):
    nodes: list[str] | None = None
    resource: ResourceList | None = None


class QueueStatus(VolcanoModel):
    state: QueueState | None = None
    pending: NonNegativeInt32 | None = None
    running: NonNegativeInt32 | None = None
    unknown: NonNegativeInt32 | None = None
    inqueue: NonNegativeInt32 | None = None
    completed: NonNegativeInt32 | None = None
    allocated: ResourceList | None = None
    reservation: Reservation | None = None


class Queue(VolcanoObject):
    spec: QueueSpec | None = None
    status: QueueStatus | None = None


# --- PodGroup ------------------------------------------------------------------------------------


class SubGroupPolicy(VolcanoModel):
    name: Str253 | None = None
    label_selector: LabelSelector | None = None
    match_label_keys: list[str] | None = None
    min_sub_groups: NonNegativeInt32 = 0
    sub_group_size: PositiveInt32 = 1
    network_topology: NetworkTopologySpec | None = None


class PodGroupSpec(VolcanoModel):
    min_member: NonNegativeInt32 | None = None
    min_task_member: dict[str, Int32] | None = None
    min_resources: ResourceList | None = None
    queue: DNSSubdomain = "default"
    priority_class_name: Str253 | None = None
    network_topology: NetworkTopologySpec | None = None
    sub_group_policy: list[SubGroupPolicy] | None = None


class PodGroupCondition(VolcanoModel):
    type: str | None = None
    status: str | None = None
    transition_id: str | None = Field(None, alias="transitionID")
    last_transition_time: DateTime | None = None
    reason: str | None = None
    message: str | None = None


class PodGroupStatus(VolcanoModel):
    phase: PodGroupPhase | None = None
    conditions: list[PodGroupCondition] | None = None
    running: NonNegativeInt32 | None = None
    succeeded: NonNegativeInt32 | None = None
    failed: NonNegativeInt32 | None = None


class PodGroup(VolcanoObject):
    spec: PodGroupSpec | None = None
    status: PodGroupStatus | None = None


__all__ = ["PodGroup", "PodGroupPhase", "Queue", "QueueState"]
