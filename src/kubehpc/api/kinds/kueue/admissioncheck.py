"""AdmissionCheck: an extra gate a Workload must pass before admission (v1beta1, v1beta2)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from kubehpc.api.errors import Cause
from kubehpc.api.kinds.kueue.common import Condition, Conditions, Int64, KueueModel, KueueObject

_KIND = r"^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"
_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class ParametersReferenceV1Beta1(KueueModel):
    api_group: Annotated[str, Field(max_length=253, pattern=_SUBDOMAIN)]
    kind: Annotated[str, Field(max_length=63, pattern=_KIND)]
    name: Annotated[str, Field(max_length=63, pattern=_LABEL)]


class ParametersReference(KueueModel):
    api_group: Annotated[str, Field(min_length=1, max_length=253, pattern=_SUBDOMAIN)]
    kind: Annotated[str, Field(min_length=1, max_length=63, pattern=_KIND)]
    name: Annotated[str, Field(min_length=1, max_length=63, pattern=_LABEL)]


class AdmissionCheckSpecV1Beta1(KueueModel):
    controller_name: str
    parameters: ParametersReferenceV1Beta1 | None = None
    retry_delay_minutes: Int64 = 15


class AdmissionCheckSpec(KueueModel):
    controller_name: Annotated[str, Field(min_length=1, max_length=253)]
    parameters: ParametersReference | None = None


class AdmissionCheckStatusV1Beta1(KueueModel):
    conditions: list[Condition] | None = None


class AdmissionCheckStatus(KueueModel):
    conditions: Conditions | None = None


class AdmissionCheckV1Beta1(KueueObject):
    spec: AdmissionCheckSpecV1Beta1 | None = None
    status: AdmissionCheckStatusV1Beta1 | None = None


class AdmissionCheck(KueueObject):
    spec: AdmissionCheckSpec | None = None
    status: AdmissionCheckStatus | None = None


def admission_check_update_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    before = (old.get("spec") or {}).get("controllerName")
    after = (new.get("spec") or {}).get("controllerName")
    # A CEL transition rule on an optional field applies only when both versions set it.
    if before is not None and after is not None and before != after:
        return [Cause("spec.controllerName", "field is immutable")]
    return []
