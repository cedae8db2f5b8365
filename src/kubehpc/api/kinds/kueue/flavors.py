"""ResourceFlavor and Topology (identical shapes in v1beta1 and v1beta2)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from kubehpc.api.errors import Cause
from kubehpc.api.kinds.kueue.common import (
    DNSSubdomain,
    KueueModel,
    KueueObject,
    Taint,
    Toleration,
    check_taints,
    check_tolerations,
    rule,
)

_LEVEL_LABEL = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
    r"[A-Za-z0-9])$"
)
HOSTNAME_LABEL = "kubernetes.io/hostname"


class ResourceFlavorSpec(KueueModel):
    node_labels: Annotated[dict[str, str], Field(max_length=8)] | None = None
    node_taints: Annotated[list[Taint], Field(max_length=8)] | None = None
    tolerations: Annotated[list[Toleration], Field(max_length=8)] | None = None
    topology_name: DNSSubdomain | None = None

    @model_validator(mode="after")
    def _rules(self) -> ResourceFlavorSpec:
        rule(
            self.topology_name is None or bool(self.node_labels),
            "at least one nodeLabel is required when topology is set",
        )
        check_taints(self.node_taints)
        check_tolerations(self.tolerations)
        return self


class ResourceFlavor(KueueObject):
    spec: ResourceFlavorSpec | None = None


def resource_flavor_update_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    old_name = (old.get("spec") or {}).get("topologyName")
    new_name = (new.get("spec") or {}).get("topologyName")
    if old_name is not None and new_name != old_name:
        return [Cause("spec", "topologyName is immutable when topologyName is set")]
    return []


class TopologyLevel(KueueModel):
    node_label: Annotated[str, Field(min_length=1, max_length=316, pattern=_LEVEL_LABEL)]


class TopologySpec(KueueModel):
    levels: Annotated[list[TopologyLevel], Field(min_length=1, max_length=16)]

    @model_validator(mode="after")
    def _rules(self) -> TopologySpec:
        labels = [level.node_label for level in self.levels]
        rule(len(set(labels)) == len(labels), "must be unique")
        rule(
            HOSTNAME_LABEL not in labels or labels[-1] == HOSTNAME_LABEL,
            "the kubernetes.io/hostname label can only be used at the lowest level of topology",
        )
        return self


class Topology(KueueObject):
    spec: TopologySpec | None = None


def _levels(obj: dict[str, Any]) -> list[Any]:
    return list((obj.get("spec") or {}).get("levels") or [])


def topology_update_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """v1beta2's rule (the storage version): levels change only with the hostname level lowest."""
    before, after = _levels(old), _levels(new)
    if before == after:
        return []

    def hostname_lowest(levels: list[Any]) -> bool:
        return bool(levels) and isinstance(levels[-1], dict) and levels[-1].get("nodeLabel") == HOSTNAME_LABEL

    if hostname_lowest(before) and hostname_lowest(after):
        return []
    return [
        Cause(
            "spec.levels",
            "levels are mutable only when kubernetes.io/hostname is the lowest level both before and after "
            "the change",
        )
    ]
