"""Volcano's API (scheduling.volcano.sh Queue and PodGroup, batch.volcano.sh Job,
topology.volcano.sh HyperNode) and the scheduler-plugins coscheduling PodGroup
(scheduling.x-k8s.io).

Names, scopes, subresources and printer columns are those of the upstream CRDs (Volcano v1.15);
``tests/api/test_crd_compat.py`` holds the models against them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from kubehpc.api import crd
from kubehpc.api.kinds.volcano.batch import Job
from kubehpc.api.kinds.volcano.common import BATCH_GROUP, COSCHEDULING_GROUP, SCHEDULING_GROUP, TOPOLOGY_GROUP
from kubehpc.api.kinds.volcano.coscheduling import CoschedulingPodGroup
from kubehpc.api.kinds.volcano.scheduling import PodGroup, Queue
from kubehpc.api.kinds.volcano.topology import HyperNode
from kubehpc.api.registry import PrinterColumn, Registry, ResourceType, VersionSpec

AGE = PrinterColumn("AGE", "date", ".metadata.creationTimestamp")


@dataclass(frozen=True)
class VolcanoKind:
    group: str
    version: str
    kind: str
    plural: str
    short_names: tuple[str, ...]
    namespaced: bool
    status_subresource: bool
    model: type[BaseModel]
    columns: tuple[PrinterColumn, ...] = ()


KINDS: tuple[VolcanoKind, ...] = (
    VolcanoKind(
        SCHEDULING_GROUP,
        "v1beta1",
        "Queue",
        "queues",
        ("q", "queue-v1beta1"),
        namespaced=False,
        status_subresource=True,
        model=Queue,
        columns=(PrinterColumn("PARENT", "string", ".spec.parent"),),
    ),
    VolcanoKind(
        SCHEDULING_GROUP,
        "v1beta1",
        "PodGroup",
        "podgroups",
        ("pg", "podgroup-v1beta1"),
        namespaced=True,
        # The upstream CRD declares no status subresource: the scheduler updates the whole object.
        status_subresource=False,
        model=PodGroup,
        columns=(
            PrinterColumn("STATUS", "string", ".status.phase"),
            PrinterColumn("minMember", "integer", ".spec.minMember"),
            PrinterColumn("RUNNINGS", "integer", ".status.running"),
            AGE,
            PrinterColumn("QUEUE", "string", ".spec.queue", priority=1),
        ),
    ),
    VolcanoKind(
        BATCH_GROUP,
        "v1alpha1",
        "Job",
        "jobs",
        ("vcjob", "vj"),
        namespaced=True,
        status_subresource=True,
        model=Job,
        columns=(
            PrinterColumn("STATUS", "string", ".status.state.phase"),
            PrinterColumn("minAvailable", "integer", ".status.minAvailable"),
            PrinterColumn("RUNNINGS", "integer", ".status.running"),
            AGE,
            PrinterColumn("QUEUE", "string", ".spec.queue", priority=1),
        ),
    ),
    VolcanoKind(
        TOPOLOGY_GROUP,
        "v1alpha1",
        "HyperNode",
        "hypernodes",
        ("hn",),
        namespaced=False,
        status_subresource=True,
        model=HyperNode,
        columns=(
            PrinterColumn("Tier", "string", ".spec.tier"),
            PrinterColumn("TierName", "string", ".spec.tierName"),
            PrinterColumn("NodeCount", "integer", ".status.nodeCount"),
            PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
        ),
    ),
    VolcanoKind(
        COSCHEDULING_GROUP,
        "v1alpha1",
        "PodGroup",
        "podgroups",
        ("pg", "pgs"),
        namespaced=True,
        status_subresource=True,
        model=CoschedulingPodGroup,
        columns=(
            PrinterColumn("Phase", "string", ".status.phase"),
            PrinterColumn("MinMember", "integer", ".spec.minMember"),
            PrinterColumn("Running", "integer", ".status.running"),
            PrinterColumn("Succeeded", "integer", ".status.succeeded"),
            PrinterColumn("Failed", "integer", ".status.failed"),
            PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
        ),
    ),
)


def resource_type(k: VolcanoKind) -> ResourceType:
    schema = crd.openapi_schema(k.model)
    version = VersionSpec(
        name=k.version,
        validate=crd.validator(k.kind, k.group, k.model),
        default=crd.defaulter(schema),
        printer_columns=k.columns,
        openapi_schema=schema,
    )
    return ResourceType(
        group=k.group,
        kind=k.kind,
        plural=k.plural,
        namespaced=k.namespaced,
        versions=(version,),
        storage_version=k.version,
        short_names=k.short_names,
        status_subresource=k.status_subresource,
    )


def register(registry: Registry) -> None:
    for k in KINDS:
        registry.register(resource_type(k))


__all__ = ["KINDS", "CoschedulingPodGroup", "HyperNode", "Job", "PodGroup", "Queue", "register"]
