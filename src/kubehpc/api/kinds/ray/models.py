"""KubeRay's objects (ray.io/v1): RayCluster, RayJob and RayService.

Field names, types and defaults follow the upstream CRDs (KubeRay v1.5, in shared/crds/); the
sub-objects kubehpc does not act on (auth, TLS, network policy, GCS fault tolerance, ...) are
kept as free-form objects so manifests that set them still apply. The checks KubeRay's
validating webhook and controller make on their own (group names unique, min <= max, a known
submission mode) are model validators here, so a bad spec is refused with the field named.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from kubehpc.api.crd import CRDModel, DateTime, Embedded

GROUP = "ray.io"

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
NonNegativeInt32 = Annotated[int, Field(ge=0, le=2**31 - 1)]
PodTemplateSpec = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.PodTemplateSpec")]
FreeForm = dict[str, Any]


class RayModel(CRDModel):
    model_config = CRDModel.model_config | {"alias_generator": to_camel}


def rule(ok: bool, message: str) -> None:
    if not ok:
        raise PydanticCustomError("rule", message)


class RayObject(RayModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None


# --- RayCluster ------------------------------------------------------------------------------


class AutoscalerOptions(RayModel):
    upscaling_mode: Literal["Default", "Aggressive", "Conservative"] | None = None
    idle_timeout_seconds: Int32 | None = None
    version: Literal["v1", "v2"] | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    resources: FreeForm | None = None
    env: list[FreeForm] | None = None
    env_from: list[FreeForm] | None = None
    security_context: FreeForm | None = None
    volume_mounts: list[FreeForm] | None = None
    command: list[str] | None = None
    args: list[str] | None = None


class HeadGroupSpec(RayModel):
    template: PodTemplateSpec
    ray_start_params: dict[str, str] | None = None
    service_type: str | None = None
    head_service: FreeForm | None = None
    enable_ingress: bool | None = None
    ingress_options: FreeForm | None = None
    labels: dict[str, str] | None = None
    resources: dict[str, str] | None = None


class ScaleStrategy(RayModel):
    workers_to_delete: list[str] | None = None


class WorkerGroupSpec(RayModel):
    group_name: Annotated[str, Field(min_length=1, max_length=63)]
    template: PodTemplateSpec
    min_replicas: NonNegativeInt32 = 0
    max_replicas: NonNegativeInt32 = 2**31 - 1
    replicas: NonNegativeInt32 | None = None
    num_of_hosts: Annotated[int, Field(ge=1, le=2**31 - 1)] = 1
    ray_start_params: dict[str, str] | None = None
    scale_strategy: ScaleStrategy | None = None
    suspend: bool | None = None
    idle_timeout_seconds: Int32 | None = None
    labels: dict[str, str] | None = None
    resources: dict[str, str] | None = None
    priority: Int32 | None = None

    @model_validator(mode="after")
    def _bounds(self) -> WorkerGroupSpec:
        rule(
            self.min_replicas <= self.max_replicas,
            f"worker group {self.group_name}: minReplicas ({self.min_replicas}) must not exceed "
            f"maxReplicas ({self.max_replicas})",
        )
        return self


class RayClusterSpec(RayModel):
    head_group_spec: HeadGroupSpec
    worker_group_specs: list[WorkerGroupSpec] | None = None
    ray_version: str | None = None
    enable_in_tree_autoscaling: bool | None = None
    autoscaler_options: AutoscalerOptions | None = None
    head_service_annotations: dict[str, str] | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    auth_options: FreeForm | None = None
    gcs_fault_tolerance_options: FreeForm | None = None
    history_server_options: FreeForm | None = None
    network_policy: FreeForm | None = None
    tls_options: FreeForm | None = None
    upgrade_strategy: FreeForm | None = None

    @model_validator(mode="after")
    def _unique_groups(self) -> RayClusterSpec:
        names = [g.group_name for g in self.worker_group_specs or ()]
        dup = sorted({n for n in names if names.count(n) > 1})
        rule(not dup, f"workerGroupSpecs: groupName must be unique, repeated: {', '.join(dup)}")
        return self


class HeadInfo(RayModel):
    pod_ip: str | None = Field(default=None, alias="podIP")
    pod_name: str | None = None
    service_ip: str | None = Field(default=None, alias="serviceIP")
    service_name: str | None = None


class RayClusterStatus(RayModel):
    state: str | None = None
    reason: str | None = None
    desired_worker_replicas: Int32 | None = None
    available_worker_replicas: Int32 | None = None
    ready_worker_replicas: Int32 | None = None
    min_worker_replicas: Int32 | None = None
    max_worker_replicas: Int32 | None = None
    desired_cpu: str | None = Field(default=None, alias="desiredCPU")
    desired_memory: str | None = None
    desired_gpu: str | None = Field(default=None, alias="desiredGPU")
    desired_tpu: str | None = Field(default=None, alias="desiredTPU")
    endpoints: dict[str, str] | None = None
    head: HeadInfo | None = None
    last_update_time: DateTime | None = None
    state_transition_times: dict[str, DateTime] | None = None
    observed_generation: Annotated[int, Field(ge=0)] | None = None
    conditions: list[FreeForm] | None = None


class RayCluster(RayObject):
    spec: RayClusterSpec | None = None
    status: RayClusterStatus | None = None


# --- RayJob ----------------------------------------------------------------------------------

SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")


class RayJobSpec(RayModel):
    entrypoint: str | None = None
    runtime_env_yaml: str | None = Field(default=None, alias="runtimeEnvYAML")
    submission_mode: Literal["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"] = "K8sJobMode"
    ray_cluster_spec: RayClusterSpec | None = None
    cluster_selector: dict[str, str] | None = None
    shutdown_after_job_finishes: bool | None = None
    ttl_seconds_after_finished: Int32 = 0
    active_deadline_seconds: Int32 | None = None
    pre_running_deadline_seconds: Int32 | None = None
    backoff_limit: Int32 = 0
    suspend: bool | None = None
    job_id: str | None = None
    entrypoint_num_cpus: float | int | None = None
    entrypoint_num_gpus: float | int | None = None
    entrypoint_resources: str | None = None
    submitter_pod_template: PodTemplateSpec | None = None
    submitter_config: FreeForm | None = None
    deletion_strategy: FreeForm | None = None
    managed_by: str | None = None
    metadata: dict[str, str] | None = None

    @model_validator(mode="after")
    def _rules(self) -> RayJobSpec:
        rule(
            self.ray_cluster_spec is not None or bool(self.cluster_selector),
            "one of rayClusterSpec or clusterSelector is required",
        )
        rule(
            not (self.shutdown_after_job_finishes and self.cluster_selector),
            "shutdownAfterJobFinishes cannot be set with clusterSelector (the cluster is not the job's own)",
        )
        rule(self.ttl_seconds_after_finished >= 0, "ttlSecondsAfterFinished must be >= 0")
        rule(
            self.active_deadline_seconds is None or self.active_deadline_seconds > 0,
            "activeDeadlineSeconds must be a positive integer",
        )
        rule(self.backoff_limit >= 0, "backoffLimit must be >= 0")
        rule(
            self.submission_mode == "InteractiveMode" or bool(self.entrypoint),
            "entrypoint is required unless submissionMode is InteractiveMode",
        )
        rule(
            not (self.suspend and self.cluster_selector),
            "suspend cannot be used with clusterSelector",
        )
        return self


class RayJobStatus(RayModel):
    job_id: str | None = None
    job_status: str | None = None
    job_deployment_status: str | None = None
    ray_cluster_name: str | None = None
    dashboard_url: str | None = Field(default=None, alias="dashboardURL")
    message: str | None = None
    reason: str | None = None
    start_time: DateTime | None = None
    end_time: DateTime | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    ray_cluster_status: FreeForm | None = None
    ray_job_info: FreeForm | None = None
    job_status_check_failure_start_time: DateTime | None = None
    observed_generation: Annotated[int, Field(ge=0)] | None = None


class RayJob(RayObject):
    spec: RayJobSpec | None = None
    status: RayJobStatus | None = None


# --- RayService ------------------------------------------------------------------------------


class RayServiceSpec(RayModel):
    ray_cluster_config: RayClusterSpec
    serve_config_v2: str | None = Field(default=None, alias="serveConfigV2")
    serve_service: FreeForm | None = None
    upgrade_strategy: FreeForm | None = None
    deployment_unhealthy_second_threshold: Int32 | None = None
    service_unhealthy_second_threshold: Int32 | None = None
    ray_cluster_deletion_delay_seconds: Int32 | None = None
    exclude_head_pod_from_serve_svc: bool | None = None
    suspend: bool | None = None
    managed_by: str | None = None


class ServiceStatusDetail(RayModel):
    ray_cluster_name: str | None = None
    ray_cluster_status: FreeForm | None = None
    application_statuses: dict[str, FreeForm] | None = None
    target_capacity: Int32 | None = None
    traffic_routed_percent: Int32 | None = None
    last_traffic_migrated_time: DateTime | None = None


class RayServiceStatus(RayModel):
    service_status: str | None = None
    num_serve_endpoints: Int32 | None = None
    active_service_status: ServiceStatusDetail | None = None
    pending_service_status: ServiceStatusDetail | None = None
    conditions: list[FreeForm] | None = None
    last_update_time: DateTime | None = None
    observed_generation: Annotated[int, Field(ge=0)] | None = None


class RayService(RayObject):
    spec: RayServiceSpec | None = None
    status: RayServiceStatus | None = None
