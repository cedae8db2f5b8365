"""The kinds kubehpc serves. Adding a group = adding its module to ``KIND_MODULES``.

Each module exposes ``register(registry: Registry) -> None``.
"""

from __future__ import annotations

import functools
import importlib

from kubehpc.api.registry import Registry

KIND_MODULES = (
    "kubehpc.api.kinds.core",  # v1, batch/v1, scheduling.k8s.io/v1, coordination.k8s.io/v1
    "kubehpc.api.kinds.kueue",  # kueue.x-k8s.io v1beta1 and v1beta2
    "kubehpc.api.kinds.kubeflow",  # kubeflow.org MPIJob v2beta1 and v1
    "kubehpc.api.kinds.volcano",  # scheduling/batch/topology.volcano.sh, scheduling.x-k8s.io PodGroup
    "kubehpc.api.kinds.ray",  # ray.io RayCluster, RayJob, RayService v1 and v1alpha1
)


def build_registry(modules: tuple[str, ...] = KIND_MODULES) -> Registry:
    """A fresh registry holding every kind of ``modules``."""
    registry = Registry()
    for name in modules:
        importlib.import_module(name).register(registry)
    return registry


@functools.cache
def default_registry() -> Registry:
    """The process-wide registry of every kind kubehpc serves (built once)."""
    return build_registry()
