"""topology.volcano.sh/v1alpha1 HyperNode: one network domain of a tier (tier 1 = closest,
e.g. an NVLink domain or a leaf switch), whose members are nodes or lower-tier HyperNodes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from kubehpc.api.kinds.volcano.common import (
    DateTime,
    DNSSubdomain,
    LabelSelector,
    NonNegativeInt64,
    Str253,
    VolcanoModel,
    VolcanoObject,
    rule,
)

_CONDITION_REASON = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
_CONDITION_TYPE = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
    r"[A-Za-z0-9])$"
)


class ExactMatch(VolcanoModel):
    name: Annotated[DNSSubdomain, Field(min_length=1)]


class RegexMatch(VolcanoModel):
    pattern: Annotated[str, Field(min_length=1)]


class MemberSelector(VolcanoModel):
    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelSelector | None = None

    @model_validator(mode="after")
    def _one_way(self) -> MemberSelector:
        given = sum(m is not None for m in (self.exact_match, self.regex_match, self.label_match))
        rule(given >= 1, "Either ExactMatch or RegexMatch or LabelMatch must be specified")
        rule(given <= 1, "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified")
        return self


class Member(VolcanoModel):
    type: Literal["Node", "HyperNode"]
    selector: MemberSelector | None = None


class HyperNodeSpec(VolcanoModel):
    tier: NonNegativeInt64
    tier_name: Str253 | None = None
    members: Annotated[list[Member], Field(min_length=1)] | None = None


class Condition(VolcanoModel):
    type: Annotated[str, Field(max_length=316, pattern=_CONDITION_TYPE)]
    status: Literal["True", "False", "Unknown"]
    reason: Annotated[str, Field(min_length=1, max_length=1024, pattern=_CONDITION_REASON)]
    message: Annotated[str, Field(max_length=32768)]
    last_transition_time: DateTime
    observed_generation: NonNegativeInt64 | None = None


class HyperNodeStatus(VolcanoModel):
    conditions: list[Condition] | None = None
    node_count: NonNegativeInt64 | None = None


class HyperNode(VolcanoObject):
    spec: HyperNodeSpec | None = None
    status: HyperNodeStatus | None = None


__all__ = ["HyperNode"]
