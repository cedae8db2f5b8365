"""Workload: the unit of admission (PodSets with counts and pod templates) and its status.

v1beta1 names the priority class with ``priorityClassName`` + ``priorityClassSource`` and
describes topology assignments as ``domains``; v1beta2 uses ``priorityClassRef`` and compact
``slices``. :mod:`kubehpc.api.kinds.kueue.conversion` maps one onto the other.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from kubehpc.api.crd import Embedded
from kubehpc.api.crd_checks import RememberedValid
from kubehpc.api.errors import Cause
from kubehpc.api.kinds.kueue.common import (
    Condition,
    Conditions,
    DateTime,
    DNSLabel,
    DNSSubdomain,
    Int32,
    KueueModel,
    KueueObject,
    NonNegativeInt32,
    PositiveInt32,
    Quantity,
    Toleration,
    check_tolerations,
    rule,
)
from kubehpc.api.registry import PrinterColumn

PodTemplateSpec = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.PodTemplateSpec")]
Str63 = Annotated[str, Field(max_length=63)]


# --- spec ----------------------------------------------------------------------------------------


class PodSetSliceConstraint(KueueModel):
    topology: Annotated[str, Field(min_length=1, max_length=63)]
    size: PositiveInt32


class TopologyRequestV1Beta1(KueueModel):
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool | None = None
    pod_index_label: str | None = None
    sub_group_index_label: str | None = None
    sub_group_count: Int32 | None = None
    pod_set_group_name: str | None = None
    pod_set_slice_required_topology: str | None = None
    pod_set_slice_size: PositiveInt32 | None = None


class TopologyRequest(KueueModel):
    required: Str63 | None = None
    preferred: Str63 | None = None
    unconstrained: bool | None = None
    pod_index_label: Annotated[str, Field(max_length=317)] | None = None
    sub_group_index_label: Annotated[str, Field(max_length=317)] | None = None
    sub_group_count: NonNegativeInt32 | None = None
    pod_set_group_name: Annotated[str, Field(max_length=256)] | None = None
    pod_set_slice_required_topology: Str63 | None = None
    pod_set_slice_size: PositiveInt32 | None = None
    # Upstream spells this one "podset", not "podSet".
    podset_slice_required_topology_constraints: (
        Annotated[list[PodSetSliceConstraint], Field(max_length=3)] | None
    ) = Field(None, alias="podsetSliceRequiredTopologyConstraints")


class _PodSetBase(KueueModel):
    name: DNSLabel = "main"
    template: PodTemplateSpec
    count: NonNegativeInt32 = 1
    min_count: PositiveInt32 | None = None

    @model_validator(mode="after")
    def _min_count(self) -> _PodSetBase:
        rule(
            self.min_count is None or self.min_count <= self.count,
            "minCount should be positive and less or equal to count",
        )
        return self


class PodSet(_PodSetBase):
    topology_request: TopologyRequest | None = None


class PodSetV1Beta1(_PodSetBase):
    topology_request: TopologyRequestV1Beta1 | None = None


class PriorityClassRef(KueueModel):
    group: Literal["kueue.x-k8s.io", "scheduling.k8s.io"]
    kind: Literal["WorkloadPriorityClass", "PriorityClass"]
    name: Annotated[DNSSubdomain, Field(min_length=1)]

    @model_validator(mode="after")
    def _group_kind(self) -> PriorityClassRef:
        rule(
            self.group != "scheduling.k8s.io" or self.kind == "PriorityClass",
            "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
        )
        rule(
            self.group != "kueue.x-k8s.io" or self.kind == "WorkloadPriorityClass",
            "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
        )
        return self


class PreemptionGate(KueueModel):
    name: Annotated[str, Field(min_length=1, max_length=63)]


class _WorkloadSpecBase(KueueModel):
    queue_name: DNSSubdomain | None = None
    priority: Int32 | None = None
    active: bool = True
    maximum_execution_time_seconds: PositiveInt32 | None = None


class WorkloadSpec(_WorkloadSpecBase):
    pod_sets: Annotated[list[PodSet], Field(min_length=1, max_length=18)] | None = None
    priority_class_ref: PriorityClassRef | None = None
    preemption_gates: Annotated[list[PreemptionGate], Field(max_length=8)] | None = None

    @model_validator(mode="after")
    def _priority(self) -> WorkloadSpec:
        rule(
            self.priority_class_ref is None or self.priority is not None,
            "priority should not be nil when priorityClassRef is set",
        )
        return self


PriorityClassSource = Literal["kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass", ""]


class WorkloadSpecV1Beta1(_WorkloadSpecBase):
    pod_sets: Annotated[list[PodSetV1Beta1], Field(min_length=1, max_length=18)]
    priority_class_name: DNSSubdomain | None = None
    priority_class_source: PriorityClassSource = ""

    @model_validator(mode="after")
    def _priority(self) -> WorkloadSpecV1Beta1:
        rule(
            self.priority_class_name is None or self.priority is not None,
            "priority should not be nil when priorityClassName is set",
        )
        return self


# --- status: admission ---------------------------------------------------------------------------


class PodCounts(KueueModel):
    universal: PositiveInt32 | None = None
    individual: Annotated[list[PositiveInt32], Field(min_length=1, max_length=100000)] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> PodCounts:
        rule(
            (self.universal is None) != (self.individual is None),
            "exactly one of the fields in [universal individual] must be set",
        )
        return self


class IndividualValues(KueueModel):
    roots: Annotated[list[Str63], Field(min_length=1, max_length=100000)]
    prefix: Str63 | None = None
    suffix: Str63 | None = None


class LevelValues(KueueModel):
    universal: Str63 | None = None
    individual: IndividualValues | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> LevelValues:
        rule(
            (self.universal is None) != (self.individual is None),
            "exactly one of the fields in [universal individual] must be set",
        )
        return self


class TopologyAssignmentSlice(KueueModel):
    domain_count: PositiveInt32
    pod_counts: PodCounts
    values_per_level: Annotated[list[LevelValues], Field(min_length=1, max_length=16)]

    @model_validator(mode="after")
    def _lengths(self) -> TopologyAssignmentSlice:
        rule(
            self.pod_counts.individual is None or len(self.pod_counts.individual) == self.domain_count,
            "podCounts.individual must have length equal to domainCount",
        )
        rule(
            all(
                v.individual is None or len(v.individual.roots) == self.domain_count
                for v in self.values_per_level
            ),
            "valuesPerLevel.individual, if set, must have roots of length equal to domainCount of this "
            "TopologyAssignmentSlice",
        )
        return self


class TopologyAssignment(KueueModel):
    levels: Annotated[list[Annotated[str, Field(max_length=317)]], Field(min_length=1, max_length=16)]
    slices: Annotated[list[TopologyAssignmentSlice], Field(max_length=1000)]

    @model_validator(mode="after")
    def _levels(self) -> TopologyAssignment:
        rule(
            all(len(s.values_per_level) == len(self.levels) for s in self.slices),
            "valuesPerLevel must have the same length as the number of levels in this TopologyAssignment",
        )
        return self


class TopologyDomainAssignment(KueueModel):
    values: Annotated[list[str], Field(min_length=1, max_length=16)]
    count: PositiveInt32


class TopologyAssignmentV1Beta1(KueueModel):
    levels: Annotated[list[str], Field(min_length=1, max_length=16)]
    domains: list[TopologyDomainAssignment]


# The admission loop writes the same assignment (flavors, usage, count, node) for every workload
# of one shape: each is checked once (docs/performance.md, twenty-third pass).
_ASSIGNMENTS = RememberedValid()


class _PodSetAssignmentBase(KueueModel):
    name: DNSLabel = "main"
    flavors: dict[str, DNSSubdomain] | None = None
    resource_usage: dict[str, Quantity] | None = None
    count: NonNegativeInt32 | None = None


class PodSetAssignment(_PodSetAssignmentBase):
    topology_assignment: TopologyAssignment | None = None
    delayed_topology_request: Literal["Pending", "Ready"] | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _remembered(cls, value: Any, handler: Any) -> Any:
        return _ASSIGNMENTS.validate(value, handler)


class PodSetAssignmentV1Beta1(_PodSetAssignmentBase):
    topology_assignment: TopologyAssignmentV1Beta1 | None = None
    delayed_topology_request: str | None = None


class Admission(KueueModel):
    cluster_queue: DNSSubdomain | None = None
    pod_set_assignments: Annotated[list[PodSetAssignment], Field(max_length=18)] | None = None


class AdmissionV1Beta1(KueueModel):
    cluster_queue: DNSSubdomain
    pod_set_assignments: Annotated[list[PodSetAssignmentV1Beta1], Field(max_length=18)]


# --- status: the rest ----------------------------------------------------------------------------


class PodSetUpdate(KueueModel):
    name: DNSLabel
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    node_selector: dict[str, str] | None = None
    tolerations: Annotated[list[Toleration], Field(max_length=8)] | None = None

    @model_validator(mode="after")
    def _tolerations(self) -> PodSetUpdate:
        check_tolerations(self.tolerations)
        return self


class AdmissionCheckState(KueueModel):
    name: Annotated[str, Field(max_length=316)]
    state: Literal["Pending", "Ready", "Retry", "Rejected"]
    last_transition_time: DateTime
    message: Annotated[str, Field(max_length=32768)]
    pod_set_updates: Annotated[list[PodSetUpdate], Field(max_length=18)] | None = None
    requeue_after_seconds: NonNegativeInt32 | None = None
    retry_count: NonNegativeInt32 | None = None


class AdmissionCheckStateV2(AdmissionCheckState):
    name: Annotated[str, Field(min_length=1, max_length=316)]


class ReclaimablePod(KueueModel):
    name: DNSLabel
    count: NonNegativeInt32


class RequeueState(KueueModel):
    count: NonNegativeInt32 | None = None
    requeue_at: DateTime | None = None


class PodSetRequest(KueueModel):
    name: DNSLabel
    resources: dict[str, Quantity] | None = None


class WorkloadSchedulingStatsEviction(KueueModel):
    reason: Annotated[str, Field(max_length=316)]
    underlying_cause: Annotated[str, Field(max_length=316)]
    count: NonNegativeInt32


class UnhealthyNode(KueueModel):
    name: str


class UnhealthyNodeV2(KueueModel):
    name: Str63


class PreemptionGateState(KueueModel):
    name: Annotated[str, Field(min_length=1, max_length=63)]
    position: Literal["Closed", "Open"]
    last_transition_time: DateTime


class _WorkloadStatusBase(KueueModel):
    requeue_state: RequeueState | None = None
    reclaimable_pods: Annotated[list[ReclaimablePod], Field(max_length=18)] | None = None
    resource_requests: Annotated[list[PodSetRequest], Field(max_length=18)] | None = None

    def _cluster_name(self) -> str | None:
        raise NotImplementedError

    def _nominated(self) -> list[str] | None:
        raise NotImplementedError

    @model_validator(mode="after")
    def _cluster_names(self) -> _WorkloadStatusBase:
        rule(
            self._cluster_name() is None or not self._nominated(),
            "clusterName and nominatedClusterNames are mutually exclusive",
        )
        return self


class WorkloadSchedulingStats(KueueModel):
    evictions: Annotated[list[WorkloadSchedulingStatsEviction], Field(max_length=256)] | None = None


class WorkloadSchedulingStatsV1Beta1(KueueModel):
    evictions: list[WorkloadSchedulingStatsEviction] | None = None


class WorkloadStatus(_WorkloadStatusBase):
    conditions: Conditions | None = None
    admission: Admission | None = None
    admission_checks: Annotated[list[AdmissionCheckStateV2], Field(max_length=8)] | None = None
    accumulated_past_execution_time_seconds: Int32 | None = None
    cluster_name: Annotated[str, Field(max_length=256)] | None = None
    nominated_cluster_names: (
        Annotated[list[Annotated[str, Field(max_length=256)]], Field(max_length=20)] | None
    ) = None
    scheduling_stats: WorkloadSchedulingStats | None = None
    unhealthy_nodes: Annotated[list[UnhealthyNodeV2], Field(max_length=8)] | None = None
    preemption_gates: Annotated[list[PreemptionGateState], Field(max_length=8)] | None = None

    def _cluster_name(self) -> str | None:
        return self.cluster_name

    def _nominated(self) -> list[str] | None:
        return self.nominated_cluster_names


class WorkloadStatusV1Beta1(_WorkloadStatusBase):
    conditions: list[Condition] | None = None
    admission: AdmissionV1Beta1 | None = None
    admission_checks: Annotated[list[AdmissionCheckState], Field(max_length=8)] | None = None
    # The misspelling is v1beta1's own field name.
    accumulated_past_execution_time_seconds: Int32 | None = Field(
        None, alias="accumulatedPastExexcutionTimeSeconds"
    )
    cluster_name: str | None = None
    nominated_cluster_names: Annotated[list[str], Field(max_length=20)] | None = None
    scheduling_stats: WorkloadSchedulingStatsV1Beta1 | None = None
    unhealthy_nodes: list[UnhealthyNode] | None = None

    def _cluster_name(self) -> str | None:
        return self.cluster_name

    def _nominated(self) -> list[str] | None:
        return self.nominated_cluster_names


# --- the object ----------------------------------------------------------------------------------


def _assignments_match_pod_sets(pod_sets: list[Any] | None, status: Any) -> None:
    if status is None or status.admission is None or status.admission.pod_set_assignments is None:
        return
    reserved = any(c.type == "QuotaReserved" and c.status == "True" for c in status.conditions or ())
    if reserved:
        rule(
            len(pod_sets or ()) == len(status.admission.pod_set_assignments),
            "podSetAssignments must have the same number of podSets as the spec",
        )


class Workload(KueueObject):
    spec: WorkloadSpec | None = None
    status: WorkloadStatus | None = None

    @model_validator(mode="after")
    def _assignments(self) -> Workload:
        _assignments_match_pod_sets(self.spec.pod_sets if self.spec else None, self.status)
        return self


class WorkloadV1Beta1(KueueObject):
    spec: WorkloadSpecV1Beta1 | None = None
    status: WorkloadStatusV1Beta1 | None = None

    @model_validator(mode="after")
    def _assignments(self) -> WorkloadV1Beta1:
        _assignments_match_pod_sets(self.spec.pod_sets if self.spec else None, self.status)
        return self


# --- update rules (the CRD's transition rules, on v1beta2 objects as stored) ----------------------


def _has_condition(obj: dict[str, Any], condition_type: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(
        isinstance(c, dict) and c.get("type") == condition_type and c.get("status") == "True"
        for c in conditions
    )


def workload_update_causes(old: dict[str, Any], new: dict[str, Any]) -> list[Cause]:
    """What may not change while a Workload holds quota or is admitted."""
    causes: list[Cause] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if _has_condition(old, "QuotaReserved"):
        before, after = old_spec.get("priorityClassRef"), new_spec.get("priorityClassRef")
        if (before is None) != (after is None):
            causes.append(
                Cause("spec.priorityClassRef", "priorityClassRef is immutable while workload quota reserved")
            )
        elif isinstance(before, dict) and isinstance(after, dict):
            for key in ("group", "kind"):
                if before.get(key) != after.get(key):
                    causes.append(
                        Cause(
                            f"spec.priorityClassRef.{key}",
                            f"priorityClassRef.{key} is immutable while workload quota reserved",
                        )
                    )
            if (
                after.get("group") == "scheduling.k8s.io"
                and after.get("kind") == "PriorityClass"
                and before.get("name") != after.get("name")
            ):
                causes.append(
                    Cause(
                        "spec.priorityClassRef.name",
                        "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass while "
                        "workload quota reserved",
                    )
                )
        if _has_condition(new, "QuotaReserved") and old_spec.get("queueName") != new_spec.get("queueName"):
            causes.append(Cause("spec.queueName", "queueName is immutable while workload quota reserved"))
    if (
        _has_condition(old, "Admitted")
        and _has_condition(new, "Admitted")
        and (old_spec.get("maximumExecutionTimeSeconds") or 0)
        != (new_spec.get("maximumExecutionTimeSeconds") or 0)
    ):
        causes.append(
            Cause(
                "spec.maximumExecutionTimeSeconds",
                "maximumExecutionTimeSeconds is immutable while workload quota reserved",
            )
        )
    old_cluster = (old.get("status") or {}).get("clusterName")
    new_cluster = (new.get("status") or {}).get("clusterName")
    if old_cluster is not None and new_cluster is not None and old_cluster != new_cluster:
        causes.append(Cause("status.clusterName", "clusterName is immutable once set"))
    return causes


# --- explain: computed printer columns (kubehpc's, after Kueue's own) ------------------------------

# Written by kubehpc's admission loop on pending Workloads (0 = next in its ClusterQueue), and
# the core's structured reason code (InsufficientQuota, LocalQueueNotFound, ...).
POSITION_ANNOTATION = "kubehpc.io/queue-position"
PENDING_REASON_ANNOTATION = "kubehpc.io/pending-reason"
# Written by kubehpc's start-time estimator (controllers/kueue/estimates.py) on pending Workloads:
# when the scheduler expects to admit it (RFC 3339), as Slurm's squeue --start shows.
ESTIMATED_START_ANNOTATION = "kubehpc.io/estimated-start"


def _condition(obj: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == condition_type:
            return c
    return None


def workload_state(obj: dict[str, Any]) -> str:
    """Pending, QuotaReserved, Admitted, Evicted or Finished: the one word a user wants first."""
    if _has_condition(obj, "Finished"):
        return "Finished"
    if _has_condition(obj, "Evicted"):
        return "Evicted"
    if _has_condition(obj, "Admitted"):
        return "Admitted"
    if _has_condition(obj, "QuotaReserved"):
        return "QuotaReserved"
    return "Pending"


def _explaining_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    state = workload_state(obj)
    ctype = {"Finished": "Finished", "Evicted": "Evicted", "Admitted": "Admitted"}.get(state, "QuotaReserved")
    return _condition(obj, ctype)


def workload_position(obj: dict[str, Any]) -> int | None:
    if workload_state(obj) not in ("Pending", "Evicted") or _has_condition(obj, "QuotaReserved"):
        return None
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(POSITION_ANNOTATION)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def workload_reason(obj: dict[str, Any]) -> str | None:
    state = workload_state(obj)
    if state == "Pending":
        code = ((obj.get("metadata") or {}).get("annotations") or {}).get(PENDING_REASON_ANNOTATION)
        if code:
            return str(code)
    if state in ("Admitted", "QuotaReserved"):
        return None
    cond = _explaining_condition(obj)
    return str(cond.get("reason")) if cond and cond.get("reason") else None


def workload_estimated_start(obj: dict[str, Any]) -> str | None:
    if workload_state(obj) not in ("Pending", "Evicted") or _has_condition(obj, "QuotaReserved"):
        return None
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(ESTIMATED_START_ANNOTATION)
    return str(value) if value else None


def workload_message(obj: dict[str, Any]) -> str | None:
    cond = _explaining_condition(obj)
    return str(cond.get("message")) if cond and cond.get("message") else None


# No jsonPath: the cells are computed, so generated CRDs keep exactly Kueue's columns. Kueue's
# own columns come first (``kubehpc.api.kinds.kueue._columns``), these after them.
EXPLAIN_COLUMNS: tuple[PrinterColumn, ...] = (
    PrinterColumn("State", "string", value=workload_state, description="Where the workload stands"),
    PrinterColumn(
        "Position",
        "integer",
        value=workload_position,
        description="Place among the pending workloads of its ClusterQueue (0 = next)",
    ),
    PrinterColumn("Reason", "string", value=workload_reason, description="Why it waits or stopped"),
    PrinterColumn(
        "Estimated Start",
        "string",
        value=workload_estimated_start,
        priority=1,
        description="When the scheduler expects to admit it (pending workloads with runtime estimates)",
    ),
    PrinterColumn("Message", "string", value=workload_message, priority=1, description="The reason in words"),
)
