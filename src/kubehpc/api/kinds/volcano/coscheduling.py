"""scheduling.x-k8s.io/v1alpha1 PodGroup, the coscheduling plugin's gang (scheduler-plugins):
pods labelled ``scheduling.x-k8s.io/pod-group: <name>`` start together once ``minMember`` of
them can, or give up their reservation after ``scheduleTimeoutSeconds``."""

from __future__ import annotations

from typing import Literal

from kubehpc.api.kinds.volcano.common import (
    DateTime,
    NonNegativeInt32,
    ResourceList,
    VolcanoModel,
    VolcanoObject,
)

CoschedulingPhase = Literal[
    "Pending", "PreScheduling", "Scheduling", "Scheduled", "Running", "Finished", "Failed"
]


class CoschedulingPodGroupSpec(VolcanoModel):
    min_member: NonNegativeInt32 | None = None
    min_resources: ResourceList | None = None
    schedule_timeout_seconds: NonNegativeInt32 | None = None


class CoschedulingPodGroupStatus(VolcanoModel):
    phase: CoschedulingPhase | None = None
    occupied_by: str | None = None
    running: NonNegativeInt32 | None = None
    succeeded: NonNegativeInt32 | None = None
    failed: NonNegativeInt32 | None = None
    schedule_start_time: DateTime | None = None


class CoschedulingPodGroup(VolcanoObject):
    spec: CoschedulingPodGroupSpec | None = None
    status: CoschedulingPodGroupStatus | None = None


__all__ = ["CoschedulingPodGroup"]
