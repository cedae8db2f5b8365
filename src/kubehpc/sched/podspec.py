"""From a Pod's spec (a plain dict, as stored) to the :class:`PodShape` the core places.

Requests are summed the way Kubernetes sums them (``k8s.io/component-helpers/resource``
``PodRequests``): the containers add up; each init container runs alone, beside the sidecars
(restartable init containers) started before it, so the pod needs the larger of the two; the
RuntimeClass overhead comes on top. A resource with a limit but no request requests its limit,
as the API server's defaulting makes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.quantity import is_extended_resource, resource_units
from kubehpc.sched.model import (
    PODS,
    ContainerDevices,
    NodeSelectorTerm,
    PodShape,
    PreferredTerm,
    Requirement,
    Toleration,
)

Obj = dict[str, Any]


def _container_requests(container: Obj) -> dict[str, int]:
    resources = F.obj_field(container, "resources")
    limits = F.obj_field(resources, "limits")
    requests = F.obj_field(resources, "requests")
    out = {name: resource_units(name, value) for name, value in limits.items()}
    out.update({name: resource_units(name, value) for name, value in requests.items()})
    return out


def _add(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


def _max(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount


def pod_requests(spec: Obj) -> dict[str, int]:
    """The pod's effective requests per resource, in ``resource_units`` (zeros left out)."""
    total: dict[str, int] = {}
    for container in F.object_list(spec, "containers"):
        _add(total, _container_requests(container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in F.object_list(spec, "initContainers"):
        own = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            # A sidecar keeps running beside everything started after it.
            _add(total, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            running = dict(own)
            _add(running, sidecars)
            _max(init_peak, running)
    _max(total, init_peak)
    pod_level = F.obj_field(F.obj_field(spec, "resources"), "requests")
    # Pod-level resources (KEP-2837) replace the container sum for the resources they name.
    total.update({name: resource_units(name, value) for name, value in pod_level.items()})
    _add(total, {name: resource_units(name, v) for name, v in F.obj_field(spec, "overhead").items()})
    return {name: amount for name, amount in total.items() if amount}


def device_requests(spec: Obj) -> tuple[ContainerDevices, ...]:
    """Per container, the extended resources it asks for: what a device allocator must choose."""
    out: list[ContainerDevices] = []
    for init, key in ((True, "initContainers"), (False, "containers")):
        for container in F.object_list(spec, key):
            wanted = sorted(
                (name, amount)
                for name, amount in _container_requests(container).items()
                if amount > 0 and is_extended_resource(name)
            )
            if wanted:
                out.append(ContainerDevices(str(container.get("name", "")), init, tuple(wanted)))
    return tuple(out)


def _requirements(items: Iterable[Obj] | None) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(
            key=str(item.get("key", "")),
            operator=str(item.get("operator", "")),
            values=tuple(str(v) for v in item.get("values") or ()),
        )
        for item in items or ()
    )


def _term(term: Obj) -> NodeSelectorTerm:
    return NodeSelectorTerm(
        match_expressions=_requirements(term.get("matchExpressions")),
        match_fields=_requirements(term.get("matchFields")),
    )


def shape_of(spec: Obj) -> PodShape:
    """The scheduling shape of a pod spec: requests, selectors, affinity, tolerations."""
    requests = pod_requests(spec)
    requests[PODS] = 1  # every pod takes one of the node's pod slots
    node_affinity = F.obj_field(F.obj_field(spec, "affinity"), "nodeAffinity")
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    required_terms = None
    if required is not None:
        required_terms = tuple(_term(t) for t in required.get("nodeSelectorTerms") or ())
    preferred = tuple(
        PreferredTerm(weight=int(p.get("weight", 0)), preference=_term(F.obj_field(p, "preference")))
        for p in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    tolerations = tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in F.object_list(spec, "tolerations")
    )
    return PodShape(
        requests=tuple(sorted(requests.items())),
        node_selector=tuple(sorted((str(k), str(v)) for k, v in F.obj_field(spec, "nodeSelector").items())),
        required_terms=required_terms,
        preferred_terms=preferred,
        tolerations=tolerations,
        preempt_never=spec.get("preemptionPolicy") == "Never",
        devices=device_requests(spec),
    )
