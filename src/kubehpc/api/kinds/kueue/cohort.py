"""Cohort: a node of the borrowing tree, with its own quotas and a parent (v1beta1, v1beta2)."""

from __future__ import annotations

from kubehpc.api.kinds.kueue.common import (
    DNSSubdomain,
    FairSharing,
    FairSharingStatus,
    FairSharingStatusV2,
    KueueModel,
    KueueObject,
    ResourceGroups,
)


class CohortSpec(KueueModel):
    parent_name: DNSSubdomain | None = None
    resource_groups: ResourceGroups | None = None
    fair_sharing: FairSharing | None = None


class CohortStatus(KueueModel):
    fair_sharing: FairSharingStatusV2 | None = None


class CohortStatusV1Beta1(KueueModel):
    fair_sharing: FairSharingStatus | None = None


class Cohort(KueueObject):
    spec: CohortSpec | None = None
    status: CohortStatus | None = None


class CohortV1Beta1(KueueObject):
    spec: CohortSpec | None = None
    status: CohortStatusV1Beta1 | None = None
