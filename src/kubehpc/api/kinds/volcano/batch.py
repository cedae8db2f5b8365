"""batch.volcano.sh/v1alpha1 Job: tasks of pods started as one gang, with lifecycle policies
(event -> action), retries and plugins (env, svc, ssh)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from kubehpc.api.crd import Embedded
from kubehpc.api.kinds.volcano.common import (
    DateTime,
    DNSLabel,
    DNSSubdomain,
    Int32,
    NetworkTopologySpec,
    NonNegativeInt32,
    PositiveInt32,
    VolcanoModel,
    VolcanoObject,
)

# The marker wraps the optional type (not the other way round): crd.py looks for it on the field.
PodTemplateSpec = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.PodTemplateSpec")]
ClaimSpec = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.PersistentVolumeClaimSpec")]

Event = Literal[
    "*",
    "PodPending",
    "PodRunning",
    "PodFailed",
    "PodEvicted",
    "Unknown",
    "TaskCompleted",
    "OutOfSync",
    "CommandIssued",
    "JobUpdated",
    "TaskFailed",
]
JobPhase = Literal[
    "Pending",
    "Aborting",
    "Aborted",
    "Running",
    "Restarting",
    "Completing",
    "Completed",
    "Terminating",
    "Terminated",
    "Failed",
]


class LifecyclePolicy(VolcanoModel):
    action: str | None = None
    event: Event | None = None
    events: list[Event] | None = None
    exit_code: Int32 | None = None
    timeout: str | None = None


class DependsOn(VolcanoModel):
    name: list[str] | None = None
    iteration: str | None = None


class PartitionPolicy(VolcanoModel):
    total_partitions: PositiveInt32
    partition_size: PositiveInt32
    min_partitions: NonNegativeInt32 = 0
    network_topology: NetworkTopologySpec | None = None


class TaskSpec(VolcanoModel):
    name: DNSLabel | None = None
    replicas: NonNegativeInt32 | None = None
    min_available: NonNegativeInt32 | None = None
    template: PodTemplateSpec = None
    policies: list[LifecyclePolicy] | None = None
    topology_policy: Literal["none", "best-effort", "restricted", "single-numa-node"] | None = None
    max_retry: NonNegativeInt32 | None = None
    depends_on: DependsOn | None = None
    partition_policy: PartitionPolicy | None = None


class VolumeSpec(VolcanoModel):
    mount_path: Annotated[str, Field(min_length=1, pattern=r"^[^:]+$")]
    volume_claim_name: Annotated[str, Field(max_length=253)] | None = None
    volume_claim: ClaimSpec = None


class JobSpec(VolcanoModel):
    scheduler_name: Annotated[str, Field(max_length=63)] | None = None
    min_available: NonNegativeInt32 | None = None
    min_success: PositiveInt32 | None = None
    volumes: list[VolumeSpec] | None = None
    tasks: Annotated[list[TaskSpec], Field(min_length=1)] | None = None
    policies: list[LifecyclePolicy] | None = None
    plugins: dict[str, list[str]] | None = None
    running_estimate: str | None = None
    queue: DNSSubdomain = "default"
    max_retry: NonNegativeInt32 = 3
    ttl_seconds_after_finished: NonNegativeInt32 | None = None
    priority_class_name: DNSSubdomain | None = None
    network_topology: NetworkTopologySpec | None = None


class JobState(VolcanoModel):
    phase: JobPhase | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: DateTime | None = None


class JobCondition(VolcanoModel):
    status: str
    last_transition_time: DateTime | None = None


class TaskState(VolcanoModel):
    phase: dict[str, Int32] | None = None


class JobStatus(VolcanoModel):
    state: JobState | None = None
    min_available: NonNegativeInt32 | None = None
    task_status_count: dict[str, TaskState] | None = None
    pending: NonNegativeInt32 | None = None
    running: NonNegativeInt32 | None = None
    succeeded: NonNegativeInt32 | None = None
    failed: NonNegativeInt32 | None = None
    terminating: NonNegativeInt32 | None = None
    unknown: NonNegativeInt32 | None = None
    version: NonNegativeInt32 | None = None
    retry_count: NonNegativeInt32 | None = None
    running_duration: str | None = None
    controlled_resources: dict[str, str] | None = None
    conditions: list[JobCondition] | None = None


class Job(VolcanoObject):
    spec: JobSpec | None = None
    status: JobStatus | None = None


__all__ = ["Event", "Job", "JobPhase"]
