"""Pieces shared by several Kueue kinds (both API versions), following the upstream CRDs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic.alias_generators import to_camel

from kubehpc.api.crd import (
    CRDModel,
    DateTime,
    DNSLabel,
    DNSSubdomain,
    NonNegativeQuantity,
    Quantity,
)
from kubehpc.api.crd_checks import rule as rule  # compiled; the kinds' rules call it

GROUP = "kueue.x-k8s.io"

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
NonNegativeInt32 = Annotated[int, Field(ge=0, le=2**31 - 1)]
PositiveInt32 = Annotated[int, Field(ge=1, le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


class KueueModel(CRDModel):
    """Kueue's Go field names are the camelCase of ours; odd ones carry an explicit alias."""

    model_config = CRDModel.model_config | {"alias_generator": to_camel}


class KueueObject(KueueModel):
    """apiVersion, kind and metadata of a Kueue object (metadata is checked by api.meta)."""

    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None


# --- metav1.Condition ---------------------------------------------------------------------------

_CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
_CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
    r"[A-Za-z0-9])$"
)


class Condition(KueueModel):
    type: Annotated[str, Field(max_length=316, pattern=_CONDITION_TYPE)]
    status: Literal["True", "False", "Unknown"]
    reason: Annotated[str, Field(min_length=1, max_length=1024, pattern=_CONDITION_REASON)]
    message: Annotated[str, Field(max_length=32768)]
    last_transition_time: DateTime
    observed_generation: Annotated[int, Field(ge=0)] | None = None


Conditions = Annotated[list[Condition], Field(max_length=16)]

# --- core/v1 pieces Kueue embeds with its own CEL rules ------------------------------------------

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Taint(KueueModel):
    key: str
    effect: str
    value: str | None = None
    time_added: DateTime | None = None


class Toleration(KueueModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None


def check_taints(taints: list[Taint] | None) -> None:
    for t in taints or ():
        rule(
            t.effect in ("NoSchedule", "PreferNoSchedule", "NoExecute"),
            "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        )


def check_tolerations(tolerations: list[Toleration] | None) -> None:
    for t in tolerations or ():
        rule(
            t.key is not None or t.operator == "Exists",
            "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        )
        rule(
            t.toleration_seconds is None or t.effect == "NoExecute",
            "effect must be 'NoExecute' when 'tolerationSeconds' is set",
        )
        rule(
            t.operator in (None, "Equal", "Exists"), "supported toleration values: 'Equal'(default), 'Exists'"
        )
        rule(
            not (t.operator == "Exists" and t.value is not None),
            "a value must be empty when 'operator' is 'Exists'",
        )
        rule(
            t.effect in (None, "NoSchedule", "PreferNoSchedule", "NoExecute"),
            "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        )


class LabelSelectorRequirement(KueueModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(KueueModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


# --- quotas --------------------------------------------------------------------------------------


class ResourceQuota(KueueModel):
    name: str
    nominal_quota: NonNegativeQuantity
    borrowing_limit: NonNegativeQuantity | None = None
    lending_limit: NonNegativeQuantity | None = None


class FlavorQuotas(KueueModel):
    name: DNSSubdomain
    resources: Annotated[list[ResourceQuota], Field(min_length=1, max_length=64)]


class ResourceGroup(KueueModel):
    covered_resources: Annotated[list[str], Field(min_length=1, max_length=64)]
    flavors: Annotated[list[FlavorQuotas], Field(min_length=1, max_length=64)]

    @model_validator(mode="after")
    def _resources_match_covered(self) -> ResourceGroup:
        rule(
            all(len(f.resources) == len(self.covered_resources) for f in self.flavors),
            "flavors must have the same number of resources as the coveredResources",
        )
        return self


ResourceGroups = Annotated[list[ResourceGroup], Field(max_length=16)]


class FairSharing(KueueModel):
    weight: NonNegativeQuantity = 1


class AdmissionFairSharingStatus(KueueModel):
    consumed_resources: dict[str, Quantity]
    last_update: DateTime


class FairSharingStatus(KueueModel):
    weighted_share: Int64
    admission_fair_sharing_status: AdmissionFairSharingStatus | None = None


class FairSharingStatusV2(KueueModel):
    """v1beta2 ClusterQueue and Cohort status: no admissionFairSharingStatus."""

    weighted_share: Int64


__all__ = [
    "GROUP",
    "AdmissionFairSharingStatus",
    "Condition",
    "Conditions",
    "DNSLabel",
    "DNSSubdomain",
    "DateTime",
    "FairSharing",
    "FairSharingStatus",
    "FairSharingStatusV2",
    "FlavorQuotas",
    "Int32",
    "Int64",
    "KueueModel",
    "KueueObject",
    "LabelSelector",
    "NonNegativeInt32",
    "PositiveInt32",
    "Quantity",
    "ResourceGroup",
    "ResourceGroups",
    "ResourceQuota",
    "Taint",
    "TaintEffect",
    "Toleration",
    "check_taints",
    "check_tolerations",
    "rule",
]
