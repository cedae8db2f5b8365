"""Kubeflow's MPI Operator API (kubeflow.org): MPIJob, v2beta1 (stored) and v1 (served)."""

from __future__ import annotations

from kubehpc.api import crd
from kubehpc.api.kinds.kubeflow.mpijob import (
    GROUP,
    STORAGE_VERSION,
    MPIJob,
    MPIJobV1,
    v1_from_storage,
    v1_to_storage,
)
from kubehpc.api.registry import Registry, ResourceType, VersionSpec

KIND = "MPIJob"


def resource_type() -> ResourceType:
    versions = []
    for name, model in (("v2beta1", MPIJob), ("v1", MPIJobV1)):
        schema = crd.openapi_schema(model)
        stored = name == STORAGE_VERSION
        versions.append(
            VersionSpec(
                name=name,
                validate=crd.validator(KIND, GROUP, model),
                default=crd.defaulter(schema),
                to_storage=None if stored else v1_to_storage,
                from_storage=None if stored else v1_from_storage,
                openapi_schema=schema,
            )
        )
    return ResourceType(
        group=GROUP,
        kind=KIND,
        plural="mpijobs",
        namespaced=True,
        versions=tuple(versions),
        storage_version=STORAGE_VERSION,
        short_names=(),
        status_subresource=True,
    )


def register(registry: Registry) -> None:
    registry.register(resource_type())


__all__ = ["GROUP", "KIND", "MPIJob", "MPIJobV1", "register"]
