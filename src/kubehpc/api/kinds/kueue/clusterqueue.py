"""ClusterQueue: quotas per flavor and resource, cohort membership, queueing and preemption.

v1beta1 and v1beta2 differ in names (``cohort`` -> ``cohortName``), in v1beta1-only fields
(``admissionChecks``, deprecated flavor-fungibility values ``Borrow``/``Preempt``, status
``pendingWorkloadsStatus``) and in v1beta2-only ones (``concurrentAdmissionPolicy``); see
:mod:`kubehpc.api.kinds.kueue.conversion`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from kubehpc.api.kinds.kueue.common import (
    Condition,
    Conditions,
    DateTime,
    DNSSubdomain,
    FairSharing,
    FairSharingStatus,
    FairSharingStatusV2,
    Int32,
    KueueModel,
    KueueObject,
    LabelSelector,
    Quantity,
    ResourceGroups,
    rule,
)

QueueingStrategy = Literal["StrictFIFO", "BestEffortFIFO"]
StopPolicy = Literal["None", "Hold", "HoldAndDrain"]
ReclaimPolicy = Literal["Never", "LowerPriority", "Any"]
WithinClusterQueuePolicy = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]


class BorrowWithinCohort(KueueModel):
    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: Int32 | None = None


class Preemption(KueueModel):
    reclaim_within_cohort: ReclaimPolicy = "Never"
    borrow_within_cohort: BorrowWithinCohort | None = Field(None, json_schema_extra={"default": {}})
    within_cluster_queue: WithinClusterQueuePolicy = "Never"

    @model_validator(mode="after")
    def _rules(self) -> Preemption:
        rule(
            not (
                self.reclaim_within_cohort == "Never"
                and self.borrow_within_cohort is not None
                and self.borrow_within_cohort.policy != "Never"
            ),
            "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never",
        )
        return self


class FlavorFungibility(KueueModel):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] = "MayStopSearch"
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] = "TryNextFlavor"
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None

    @model_validator(mode="after")
    def _rules(self) -> FlavorFungibility:
        rule(
            self.preference is None
            or (self.when_can_borrow == "TryNextFlavor" and self.when_can_preempt == "TryNextFlavor"),
            "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
        )
        return self


class FlavorFungibilityV1Beta1(FlavorFungibility):
    # "Borrow" and "Preempt" are v1beta1's deprecated spellings of MayStopSearch.
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor", "Borrow"] = "MayStopSearch"  # type: ignore[assignment]
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor", "Preempt"] = "TryNextFlavor"  # type: ignore[assignment]


class AdmissionCheckStrategyRule(KueueModel):
    name: Annotated[str, Field(min_length=1, max_length=316)]
    on_flavors: Annotated[list[DNSSubdomain], Field(max_length=64)] | None = None


class AdmissionChecksStrategy(KueueModel):
    admission_checks: Annotated[list[AdmissionCheckStrategyRule], Field(min_length=1, max_length=64)]


class AdmissionCheckStrategyRuleV1Beta1(KueueModel):
    name: Annotated[str, Field(max_length=316)]
    on_flavors: list[DNSSubdomain] | None = None


class AdmissionChecksStrategyV1Beta1(KueueModel):
    admission_checks: list[AdmissionCheckStrategyRuleV1Beta1] | None = None


class AdmissionScope(KueueModel):
    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]


class AdmissionScopeV1Beta1(KueueModel):
    admission_mode: str


class MigrationConstraints(KueueModel):
    last_acceptable_flavor_name: DNSSubdomain | None = None


class Migration(KueueModel):
    mode: Literal["TryPreferredFlavors", "RetainFirstAdmission"]
    constraints: MigrationConstraints | None = None


class ConcurrentAdmissionPolicy(KueueModel):
    migration: Migration


class _ClusterQueueSpecBase(KueueModel):
    resource_groups: ResourceGroups | None = None
    queueing_strategy: QueueingStrategy = "BestEffortFIFO"
    namespace_selector: LabelSelector | None = None
    preemption: Preemption | None = Field(None, json_schema_extra={"default": {}})
    stop_policy: StopPolicy = "None"
    fair_sharing: FairSharing | None = None

    def _cohort(self) -> str | None:
        raise NotImplementedError

    @model_validator(mode="after")
    def _borrowing_needs_cohort(self) -> _ClusterQueueSpecBase:
        rule(
            self._cohort() is not None
            or all(
                r.borrowing_limit is None
                for rg in self.resource_groups or ()
                for f in rg.flavors
                for r in f.resources
            ),
            "borrowingLimit must be nil when cohort is empty",
        )
        return self


class ClusterQueueSpec(_ClusterQueueSpecBase):
    cohort_name: DNSSubdomain | None = None
    flavor_fungibility: FlavorFungibility | None = Field(None, json_schema_extra={"default": {}})
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    admission_scope: AdmissionScope | None = None
    concurrent_admission_policy: ConcurrentAdmissionPolicy | None = None

    def _cohort(self) -> str | None:
        return self.cohort_name


class ClusterQueueSpecV1Beta1(_ClusterQueueSpecBase):
    cohort: DNSSubdomain | None = None
    flavor_fungibility: FlavorFungibilityV1Beta1 | None = Field(None, json_schema_extra={"default": {}})
    admission_checks: list[Annotated[str, Field(max_length=316)]] | None = None
    admission_checks_strategy: AdmissionChecksStrategyV1Beta1 | None = None
    admission_scope: AdmissionScopeV1Beta1 | None = None

    def _cohort(self) -> str | None:
        return self.cohort


class ResourceUsage(KueueModel):
    name: str
    total: Quantity | None = None
    borrowed: Quantity | None = None


class FlavorUsage(KueueModel):
    name: DNSSubdomain
    resources: Annotated[list[ResourceUsage], Field(max_length=64)]


FlavorUsages = Annotated[list[FlavorUsage], Field(max_length=64)]


class _ClusterQueueStatusBase(KueueModel):
    flavors_reservation: FlavorUsages | None = None
    flavors_usage: FlavorUsages | None = None
    pending_workloads: Int32 | None = None
    reserving_workloads: Int32 | None = None
    admitted_workloads: Int32 | None = None


class ClusterQueueStatus(_ClusterQueueStatusBase):
    conditions: Conditions | None = None
    fair_sharing: FairSharingStatusV2 | None = None


class PendingWorkload(KueueModel):
    name: str
    namespace: str


class PendingWorkloadsStatus(KueueModel):
    cluster_queue_pending_workload: list[PendingWorkload] | None = None
    last_change_time: DateTime


class ClusterQueueStatusV1Beta1(_ClusterQueueStatusBase):
    conditions: list[Condition] | None = None
    fair_sharing: FairSharingStatus | None = None
    pending_workloads_status: PendingWorkloadsStatus | None = None


class ClusterQueue(KueueObject):
    spec: ClusterQueueSpec | None = None
    status: ClusterQueueStatus | None = None


class ClusterQueueV1Beta1(KueueObject):
    spec: ClusterQueueSpecV1Beta1 | None = None
    status: ClusterQueueStatusV1Beta1 | None = None
