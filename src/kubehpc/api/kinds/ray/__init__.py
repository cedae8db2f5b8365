"""KubeRay's API (ray.io): RayCluster, RayJob and RayService, served as v1 (stored) and v1alpha1.

v1alpha1 is accepted with the v1 schema (a superset of its fields), except that a v1alpha1
RayService need not name its rayClusterConfig; the versions differ only by name otherwise and no
conversion is needed. Names, categories and printer
columns are those of the upstream CRDs.
"""

from __future__ import annotations

from pydantic import BaseModel

from kubehpc.api import crd
from kubehpc.api.kinds.ray.models import GROUP, RayCluster, RayJob, RayService, RayServiceV1Alpha1
from kubehpc.api.registry import PrinterColumn, Registry, ResourceType, VersionSpec

STORAGE_VERSION = "v1"
SERVED_VERSIONS = ("v1", "v1alpha1")

_AGE = PrinterColumn("age", "date", ".metadata.creationTimestamp")

COLUMNS: dict[str, tuple[PrinterColumn, ...]] = {
    "RayCluster": (
        PrinterColumn("desired workers", "integer", ".status.desiredWorkerReplicas"),
        PrinterColumn("available workers", "integer", ".status.availableWorkerReplicas"),
        PrinterColumn("cpus", "string", ".status.desiredCPU"),
        PrinterColumn("memory", "string", ".status.desiredMemory"),
        PrinterColumn("gpus", "string", ".status.desiredGPU"),
        PrinterColumn("tpus", "string", ".status.desiredTPU", priority=1),
        PrinterColumn("status", "string", ".status.state"),
        _AGE,
        PrinterColumn("head pod IP", "string", ".status.head.podIP", priority=1),
        PrinterColumn("head service IP", "string", ".status.head.serviceIP", priority=1),
    ),
    "RayJob": (
        PrinterColumn("job status", "string", ".status.jobStatus"),
        PrinterColumn("deployment status", "string", ".status.jobDeploymentStatus"),
        PrinterColumn("ray cluster name", "string", ".status.rayClusterName"),
        PrinterColumn("start time", "string", ".status.startTime"),
        PrinterColumn("end time", "string", ".status.endTime"),
        _AGE,
    ),
    "RayService": (
        PrinterColumn("service status", "string", ".status.serviceStatus"),
        PrinterColumn("num serve endpoints", "string", ".status.numServeEndpoints"),
    ),
}

KINDS: tuple[tuple[str, str, type[BaseModel]], ...] = (
    ("RayCluster", "rayclusters", RayCluster),
    ("RayJob", "rayjobs", RayJob),
    ("RayService", "rayservices", RayService),
)


# Where a served version's schema is not the v1 one.
VERSION_MODELS: dict[tuple[str, str], type[BaseModel]] = {("RayService", "v1alpha1"): RayServiceV1Alpha1}


def _version(kind: str, version: str, model: type[BaseModel]) -> VersionSpec:
    model = VERSION_MODELS.get((kind, version), model)
    schema = crd.openapi_schema(model)
    return VersionSpec(
        name=version,
        validate=crd.validator(kind, GROUP, model),
        default=crd.defaulter(schema),
        # As upstream: the deprecated v1alpha1 of RayJob and RayService declares no columns.
        printer_columns=COLUMNS[kind] if version == STORAGE_VERSION or kind == "RayCluster" else (),
        openapi_schema=schema,
    )


def resource_type(kind: str, plural: str, model: type[BaseModel]) -> ResourceType:
    versions = tuple(_version(kind, version, model) for version in SERVED_VERSIONS)
    return ResourceType(
        group=GROUP,
        kind=kind,
        plural=plural,
        namespaced=True,
        versions=versions,
        storage_version=STORAGE_VERSION,
        categories=("all",),
        status_subresource=True,
    )


def register(registry: Registry) -> None:
    for kind, plural, model in KINDS:
        registry.register(resource_type(kind, plural, model))


__all__ = ["GROUP", "KINDS", "RayCluster", "RayJob", "RayService", "register"]
