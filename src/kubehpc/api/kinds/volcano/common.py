"""Pieces shared by Volcano's kinds (and the scheduler-plugins PodGroup), after the upstream CRDs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.alias_generators import to_camel

from kubehpc.api.crd import CRDModel, DateTime, DNSLabel, DNSSubdomain, NonNegativeQuantity, Quantity
from kubehpc.api.crd_checks import rule as rule

SCHEDULING_GROUP = "scheduling.volcano.sh"
BATCH_GROUP = "batch.volcano.sh"
TOPOLOGY_GROUP = "topology.volcano.sh"
COSCHEDULING_GROUP = "scheduling.x-k8s.io"

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
NonNegativeInt32 = Annotated[int, Field(ge=0, le=2**31 - 1)]
PositiveInt32 = Annotated[int, Field(ge=1, le=2**31 - 1)]
NonNegativeInt64 = Annotated[int, Field(ge=0, le=2**63 - 1)]
Str253 = Annotated[str, Field(max_length=253)]
ResourceList = dict[str, NonNegativeQuantity]
"""A ``v1.ResourceList``: resource name -> quantity (capability, deserved, minResources, ...)."""


class VolcanoModel(CRDModel):
    """Volcano's Go field names are the camelCase of ours."""

    model_config = CRDModel.model_config | {"alias_generator": to_camel}


class VolcanoObject(VolcanoModel):
    """apiVersion, kind and metadata (metadata is checked by api.meta)."""

    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None


class LabelSelectorRequirement(VolcanoModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(VolcanoModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class NetworkTopologySpec(VolcanoModel):
    """How close together a gang must sit: ``hard`` keeps it within ``highestTierAllowed``
    (a HyperNode tier), ``soft`` only prefers that."""

    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: NonNegativeInt64 | None = None
    highest_tier_name: Str253 | None = None


__all__ = [
    "BATCH_GROUP",
    "COSCHEDULING_GROUP",
    "SCHEDULING_GROUP",
    "TOPOLOGY_GROUP",
    "DNSLabel",
    "DNSSubdomain",
    "DateTime",
    "Int32",
    "LabelSelector",
    "NetworkTopologySpec",
    "NonNegativeInt32",
    "NonNegativeInt64",
    "PositiveInt32",
    "Quantity",
    "ResourceList",
    "Str253",
    "VolcanoModel",
    "VolcanoObject",
    "rule",
]
