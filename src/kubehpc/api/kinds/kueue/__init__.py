"""Kueue's API (kueue.x-k8s.io): v1beta2 (preferred, stored) and v1beta1 (deprecated, served).

Names, scopes, subresources and printer columns are those of the upstream CRDs (Kueue v0.19);
the models in this package follow their schemas, and ``tests/api/test_crd_compat.py`` holds the
two side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from kubehpc.api import crd
from kubehpc.api.errors import Cause
from kubehpc.api.kinds.kueue import conversion
from kubehpc.api.kinds.kueue.admissioncheck import (
    AdmissionCheck,
    AdmissionCheckV1Beta1,
    admission_check_update_causes,
)
from kubehpc.api.kinds.kueue.clusterqueue import ClusterQueue, ClusterQueueV1Beta1
from kubehpc.api.kinds.kueue.cohort import Cohort, CohortV1Beta1
from kubehpc.api.kinds.kueue.common import GROUP
from kubehpc.api.kinds.kueue.flavors import (
    ResourceFlavor,
    Topology,
    resource_flavor_update_causes,
    topology_update_causes,
)
from kubehpc.api.kinds.kueue.localqueue import LocalQueue, LocalQueueV1Beta1, local_queue_update_causes
from kubehpc.api.kinds.kueue.priority import WorkloadPriorityClass, WorkloadPriorityClassV1Beta1
from kubehpc.api.kinds.kueue.workload import (
    EXPLAIN_COLUMNS,
    Workload,
    WorkloadV1Beta1,
    workload_update_causes,
)
from kubehpc.api.registry import Obj, PrinterColumn, Registry, ResourceType, ValidateUpdate, VersionSpec

STORAGE_VERSION = "v1beta2"
SERVED_VERSIONS = ("v1beta2", "v1beta1")


def _no_rules(old: Obj, new: Obj) -> list[Cause]:
    return []


def _condition_status(condition_type: str) -> Callable[[Obj], Any]:
    """The cell for ``.status.conditions[?(@.type=='<type>')].status``."""

    def cell(obj: Obj) -> Any:
        for c in (obj.get("status") or {}).get("conditions") or ():
            if isinstance(c, dict) and c.get("type") == condition_type:
                return c.get("status")
        return None

    return cell


def _columns(cohort_path: str) -> dict[str, tuple[PrinterColumn, ...]]:
    return {
        "ClusterQueue": (
            PrinterColumn(
                "Cohort", "string", cohort_path, description="Cohort that this ClusterQueue belongs to"
            ),
            PrinterColumn(
                "Strategy",
                "string",
                ".spec.queueingStrategy",
                priority=1,
                description="The queueing strategy used to prioritize workloads",
            ),
            PrinterColumn(
                "Pending Workloads",
                "integer",
                ".status.pendingWorkloads",
                description="Number of pending workloads",
            ),
            PrinterColumn(
                "Admitted Workloads",
                "integer",
                ".status.admittedWorkloads",
                priority=1,
                description="Number of admitted workloads that haven't finished yet",
            ),
        ),
        "LocalQueue": (
            PrinterColumn("ClusterQueue", "string", ".spec.clusterQueue", description="Backing ClusterQueue"),
            PrinterColumn(
                "Pending Workloads",
                "integer",
                ".status.pendingWorkloads",
                description="Number of pending workloads",
            ),
            PrinterColumn(
                "Admitted Workloads",
                "integer",
                ".status.admittedWorkloads",
                description="Number of admitted workloads that haven't finished yet.",
            ),
        ),
        "WorkloadPriorityClass": (
            PrinterColumn(
                "Value", "integer", ".value", description="Value of workloadPriorityClass's Priority"
            ),
        ),
        "Workload": (
            PrinterColumn(
                "Queue",
                "string",
                ".spec.queueName",
                description="Name of the queue this workload was submitted to",
            ),
            PrinterColumn(
                "Reserved in",
                "string",
                ".status.admission.clusterQueue",
                description="Name of the ClusterQueue where the workload is reserving quota",
            ),
            PrinterColumn(
                "Admitted",
                "string",
                ".status.conditions[?(@.type=='Admitted')].status",
                value=_condition_status("Admitted"),
                description="Admission status",
            ),
            PrinterColumn(
                "Finished",
                "string",
                ".status.conditions[?(@.type=='Finished')].status",
                value=_condition_status("Finished"),
                description="Workload finished",
            ),
            *EXPLAIN_COLUMNS,
            PrinterColumn(
                "Age", "date", ".metadata.creationTimestamp", description="Time this workload was created"
            ),
        ),
    }


@dataclass(frozen=True)
class KueueKind:
    """What differs between Kueue kinds; everything else is built the same way."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    namespaced: bool
    status_subresource: bool
    models: dict[str, type[BaseModel]]  # per served version
    conversion: conversion.KindConversion | None = None
    update_rules: ValidateUpdate = _no_rules


KINDS: tuple[KueueKind, ...] = (
    KueueKind(
        "ResourceFlavor",
        "resourceflavors",
        ("flavor", "flavors", "rf"),
        namespaced=False,
        status_subresource=False,
        models={"v1beta2": ResourceFlavor, "v1beta1": ResourceFlavor},
        update_rules=resource_flavor_update_causes,
    ),
    KueueKind(
        "ClusterQueue",
        "clusterqueues",
        ("cq",),
        namespaced=False,
        status_subresource=True,
        models={"v1beta2": ClusterQueue, "v1beta1": ClusterQueueV1Beta1},
        conversion=conversion.CLUSTER_QUEUE,
    ),
    KueueKind(
        "LocalQueue",
        "localqueues",
        ("queue", "queues", "lq"),
        namespaced=True,
        status_subresource=True,
        models={"v1beta2": LocalQueue, "v1beta1": LocalQueueV1Beta1},
        conversion=conversion.LOCAL_QUEUE,
        update_rules=local_queue_update_causes,
    ),
    KueueKind(
        "Cohort",
        "cohorts",
        ("co",),
        namespaced=False,
        status_subresource=True,
        models={"v1beta2": Cohort, "v1beta1": CohortV1Beta1},
        conversion=conversion.COHORT,
    ),
    KueueKind(
        "WorkloadPriorityClass",
        "workloadpriorityclasses",
        ("wpc",),
        namespaced=False,
        # The CRD declares an empty subresources map: no status subresource.
        status_subresource=False,
        models={"v1beta2": WorkloadPriorityClass, "v1beta1": WorkloadPriorityClassV1Beta1},
    ),
    KueueKind(
        "Workload",
        "workloads",
        ("kwl", "kueueworkload", "kueueworkloads"),
        namespaced=True,
        status_subresource=True,
        models={"v1beta2": Workload, "v1beta1": WorkloadV1Beta1},
        conversion=conversion.WORKLOAD,
        update_rules=workload_update_causes,
    ),
    KueueKind(
        "Topology",
        "topologies",
        ("topo",),
        namespaced=False,
        status_subresource=False,
        models={"v1beta2": Topology, "v1beta1": Topology},
        update_rules=topology_update_causes,
    ),
    KueueKind(
        "AdmissionCheck",
        "admissionchecks",
        ("ac",),
        namespaced=False,
        status_subresource=True,
        models={"v1beta2": AdmissionCheck, "v1beta1": AdmissionCheckV1Beta1},
        conversion=conversion.ADMISSION_CHECK,
        update_rules=admission_check_update_causes,
    ),
)


def resource_type(k: KueueKind) -> ResourceType:
    versions = []
    for version in SERVED_VERSIONS:
        model = k.models[version]
        schema = crd.openapi_schema(model)
        columns = _columns(".spec.cohortName" if version == "v1beta2" else ".spec.cohort").get(k.kind, ())
        converts = k.conversion is not None and version != STORAGE_VERSION
        versions.append(
            VersionSpec(
                name=version,
                validate=crd.validator(k.kind, GROUP, model),
                default=crd.defaulter(schema),
                to_storage=k.conversion.to_storage if converts and k.conversion else None,
                from_storage=k.conversion.from_storage if converts and k.conversion else None,
                printer_columns=columns,
                openapi_schema=schema,
            )
        )
    return ResourceType(
        group=GROUP,
        kind=k.kind,
        plural=k.plural,
        namespaced=k.namespaced,
        versions=tuple(versions),
        storage_version=STORAGE_VERSION,
        short_names=k.short_names,
        status_subresource=k.status_subresource,
        validate_update=k.update_rules,
    )


def register(registry: Registry) -> None:
    for k in KINDS:
        registry.register(resource_type(k))


__all__ = [
    "GROUP",
    "KINDS",
    "AdmissionCheck",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "ResourceFlavor",
    "Topology",
    "Workload",
    "WorkloadPriorityClass",
    "register",
]
