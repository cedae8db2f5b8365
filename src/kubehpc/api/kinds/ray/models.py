"""KubeRay's objects (ray.io/v1): RayCluster, RayJob and RayService.

Field names, types, defaults and CEL rules follow the upstream CRDs (KubeRay v1.5, in
shared/crds/), typed down to the leaves so that an unknown field is refused at any depth and the
generated CRD covers the upstream one. Built-in Kubernetes types (pod templates, Services,
environment sources, resource requirements, security contexts, label selectors) are embedded
and checked against the official schema.

Only what the CRD itself enforces is checked at admission. The checks KubeRay makes in its
controller (group names unique, minReplicas <= maxReplicas, a known submission mode, a RayJob
with a cluster and an entrypoint, ...) live in kubehpc.controllers.ray.validation and end as a
ValidationFailed status, as upstream.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from pydantic.alias_generators import to_camel

from kubehpc.api.crd import CRDModel, DateTime, Embedded, JsonSchemaExtra, Quantity
from kubehpc.api.crd_checks import rule as rule

GROUP = "ray.io"

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
# A required pod template; the optional embedded types below hold their None inside the
# annotation, where the embedded-schema check finds them (not inside a union around it).
PodTemplateSpec = Annotated[dict[str, Any], Embedded("io.k8s.api.core.v1.PodTemplateSpec")]
OptionalPodTemplateSpec = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.PodTemplateSpec")]
ObjectMeta = Annotated[dict[str, Any] | None, Embedded("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")]
ServiceSpec = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.ServiceSpec")]
ServiceStatus = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.ServiceStatus")]
EnvVarSource = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.EnvVarSource")]
ResourceRequirements = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.ResourceRequirements")]
SecurityContext = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.SecurityContext")]
ConfigMapEnvSource = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.ConfigMapEnvSource")]
SecretEnvSource = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.SecretEnvSource")]
LabelSelector = Annotated[
    dict[str, Any] | None, Embedded("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
]
IPBlock = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.networking.v1.IPBlock")]
IntOrString = Annotated[
    int | str,
    JsonSchemaExtra({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}),
]

MANAGERS = ("ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue")
DELETION_POLICIES = Literal["DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone"]


class RayModel(CRDModel):
    model_config = CRDModel.model_config | {"alias_generator": to_camel}


def check_managed_by(value: str | None) -> None:
    """The CRDs' CEL rule on spec.managedBy (its immutability is a transition rule)."""
    rule(
        value is None or value in MANAGERS,
        "the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
    )


class RayObject(RayModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None


class Condition(RayModel):
    """A metav1.Condition, as KubeRay's statuses carry them."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: DateTime | None = None
    observed_generation: Int64 | None = None


class ServiceObject(RayModel):
    """A Service template (headService, serveService): the CRDs type apiVersion and kind as
    free strings, not the built-in definition's fixed "v1"/"Service"."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = None
    spec: ServiceSpec = None
    status: ServiceStatus = None


# --- containers of the autoscaler and the history collector ---------------------------------


class EnvVar(RayModel):
    name: str
    value: str | None = None
    value_from: EnvVarSource = None


class EnvFromSource(RayModel):
    config_map_ref: ConfigMapEnvSource = None
    prefix: str | None = None
    secret_ref: SecretEnvSource = None


class VolumeMount(RayModel):
    name: str
    mount_path: str
    mount_propagation: str | None = None
    read_only: bool | None = None
    recursive_read_only: str | None = None
    sub_path: str | None = None
    sub_path_expr: str | None = None


class AutoscalerOptions(RayModel):
    upscaling_mode: Literal["Default", "Aggressive", "Conservative"] | None = None
    idle_timeout_seconds: Int32 | None = None
    version: Literal["v1", "v2"] | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    resources: ResourceRequirements = None
    env: list[EnvVar] | None = None
    env_from: list[EnvFromSource] | None = None
    security_context: SecurityContext = None
    volume_mounts: list[VolumeMount] | None = None
    command: list[str] | None = None
    args: list[str] | None = None


class CollectorOptions(RayModel):
    env: list[EnvVar] | None = None
    image: str | None = None
    image_pull_policy: str | None = None
    resources: ResourceRequirements = None


class HistoryServerOptions(RayModel):
    collector_options: CollectorOptions | None = None


# --- RayCluster options ----------------------------------------------------------------------


class AuthOptions(RayModel):
    enable_k8s_token_auth: bool | None = Field(default=None, alias="enableK8sTokenAuth")
    mode: Literal["disabled", "token"] | None = None
    secret_name: str | None = None


class RedisCredential(RayModel):
    value: str | None = None
    value_from: EnvVarSource = None


class GcsStorage(RayModel):
    access_modes: list[str] | None = None
    claim_name: str | None = None
    deletion_policy: Literal["DeleteWithCluster", "Retain"] | None = None
    size: Quantity | None = None
    storage_class_name: str | None = None
    sub_path: str | None = None


class GcsFaultToleranceOptions(RayModel):
    backend: Literal["redis", "rocksdb"] | None = None
    external_storage_namespace: str | None = None
    redis_address: str | None = None
    redis_password: RedisCredential | None = None
    redis_username: RedisCredential | None = None
    storage: GcsStorage | None = None


class NetworkPolicyPort(RayModel):
    end_port: Int32 | None = None
    port: IntOrString | None = None
    protocol: str | None = None


class NetworkPolicyPeer(RayModel):
    ip_block: IPBlock = None
    namespace_selector: LabelSelector = None
    pod_selector: LabelSelector = None


class EgressRule(RayModel):
    ports: list[NetworkPolicyPort] | None = None
    to: list[NetworkPolicyPeer] | None = None


class IngressRule(RayModel):
    from_: list[NetworkPolicyPeer] | None = Field(default=None, alias="from")
    ports: list[NetworkPolicyPort] | None = None


class NetworkPolicyRules(RayModel):
    egress_rules: list[EgressRule] | None = None
    ingress_rules: list[IngressRule] | None = None


class GroupNetworkPolicyRules(NetworkPolicyRules):
    group_name: str


class NetworkPolicy(RayModel):
    head: NetworkPolicyRules | None = None
    worker: NetworkPolicyRules | None = None
    worker_groups: list[GroupNetworkPolicyRules] | None = None
    mode: Literal["DenyAll", "DenyAllIngress", "DenyAllEgress"] = "DenyAll"


class TLSOptions(RayModel):
    enabled: bool | None = None


class ClusterUpgradeStrategy(RayModel):
    type: Literal["Recreate", "None"] | None = None


class IngressTLS(RayModel):
    hosts: list[str] | None = None
    secret_name: str | None = None


class IngressOptions(RayModel):
    host: str | None = None
    path: str | None = None
    path_type: Literal["Exact", "Prefix", "ImplementationSpecific"] | None = None
    tls: list[IngressTLS] | None = None


# --- RayCluster ------------------------------------------------------------------------------


class HeadGroupSpec(RayModel):
    template: PodTemplateSpec
    ray_start_params: dict[str, str] | None = None
    service_type: str | None = None
    head_service: ServiceObject | None = None
    enable_ingress: bool | None = None
    ingress_options: IngressOptions | None = None
    labels: dict[str, str] | None = None
    resources: dict[str, str] | None = None


class ScaleStrategy(RayModel):
    workers_to_delete: list[str] | None = None


class WorkerGroupSpec(RayModel):
    # Bounds and uniqueness are KubeRay controller checks (controllers/ray/validation.py).
    group_name: str
    template: PodTemplateSpec
    min_replicas: Int32 = 0
    max_replicas: Int32 = 2**31 - 1
    replicas: Int32 | None = None
    num_of_hosts: Int32 = 1
    ray_start_params: dict[str, str] | None = None
    scale_strategy: ScaleStrategy | None = None
    suspend: bool | None = None
    idle_timeout_seconds: Int32 | None = None
    labels: dict[str, str] | None = None
    resources: dict[str, str] | None = None
    priority: Int32 | None = None


class RayClusterSpec(RayModel):
    head_group_spec: HeadGroupSpec
    worker_group_specs: list[WorkerGroupSpec] | None = None
    ray_version: str | None = None
    enable_in_tree_autoscaling: bool | None = None
    autoscaler_options: AutoscalerOptions | None = None
    head_service_annotations: dict[str, str] | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    auth_options: AuthOptions | None = None
    gcs_fault_tolerance_options: GcsFaultToleranceOptions | None = None
    history_server_options: HistoryServerOptions | None = None
    network_policy: NetworkPolicy | None = None
    tls_options: TLSOptions | None = Field(default=None, alias="tlsOptions")
    upgrade_strategy: ClusterUpgradeStrategy | None = None

    @model_validator(mode="after")
    def _cel(self) -> RayClusterSpec:
        check_managed_by(self.managed_by)
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
    desired_cpu: Quantity | None = Field(default=None, alias="desiredCPU")
    desired_memory: Quantity | None = None
    desired_gpu: Quantity | None = Field(default=None, alias="desiredGPU")
    desired_tpu: Quantity | None = Field(default=None, alias="desiredTPU")
    endpoints: dict[str, str] | None = None
    head: HeadInfo | None = None
    last_update_time: DateTime | None = None
    state_transition_times: dict[str, DateTime] | None = None
    observed_generation: Int64 | None = None
    conditions: list[Condition] | None = None


class RayCluster(RayObject):
    spec: RayClusterSpec | None = None
    status: RayClusterStatus | None = None


# --- RayJob ----------------------------------------------------------------------------------

SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")


class SubmitterConfig(RayModel):
    backoff_limit: Int32 | None = None


class DeletionPolicy(RayModel):
    policy: DELETION_POLICIES | None = None


class DeletionCondition(RayModel):
    job_status: Literal["SUCCEEDED", "FAILED"] | None = None
    job_deployment_status: Literal["Failed"] | None = None
    ttl_seconds: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0

    @model_validator(mode="after")
    def _cel(self) -> DeletionCondition:
        rule(
            not (self.job_status is not None and self.job_deployment_status is not None),
            "JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition.",
        )
        rule(
            self.job_status is not None or self.job_deployment_status is not None,
            "the deletion condition requires either the JobStatus or the JobDeploymentStatus field.",
        )
        return self


class DeletionRule(RayModel):
    condition: DeletionCondition
    policy: DELETION_POLICIES


class DeletionStrategy(RayModel):
    deletion_rules: Annotated[list[DeletionRule], Field(min_length=1)] | None = None
    on_failure: DeletionPolicy | None = None
    on_success: DeletionPolicy | None = None

    @model_validator(mode="after")
    def _cel(self) -> DeletionStrategy:
        legacy = self.on_success is not None or self.on_failure is not None
        rule(
            not (legacy and self.deletion_rules is not None),
            "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within "
            "the same deletionStrategy",
        )
        rule(
            (self.on_success is not None and self.on_failure is not None) or self.deletion_rules is not None,
            "deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field "
            "(cannot be empty)",
        )
        return self


class RayJobSpec(RayModel):
    # What KubeRay's controller checks (a cluster to run on, an entrypoint, a known submission
    # mode, ...) is in controllers/ray/validation.py: a bad spec is admitted and fails there.
    entrypoint: str | None = None
    runtime_env_yaml: str | None = Field(default=None, alias="runtimeEnvYAML")
    submission_mode: str = "K8sJobMode"
    ray_cluster_spec: RayClusterSpec | None = None
    cluster_selector: dict[str, str] | None = None
    shutdown_after_job_finishes: bool | None = None
    ttl_seconds_after_finished: Int32 = 0
    active_deadline_seconds: Int32 | None = None
    pre_running_deadline_seconds: Annotated[int, Field(ge=1, le=2**31 - 1)] | None = None
    backoff_limit: Int32 = 0
    suspend: bool | None = None
    job_id: str | None = None
    entrypoint_num_cpus: float | int | None = None
    entrypoint_num_gpus: float | int | None = None
    entrypoint_resources: str | None = None
    submitter_pod_template: OptionalPodTemplateSpec = None
    submitter_config: SubmitterConfig | None = None
    deletion_strategy: DeletionStrategy | None = None
    managed_by: str | None = None
    metadata: dict[str, str] | None = None

    @model_validator(mode="after")
    def _cel(self) -> RayJobSpec:
        check_managed_by(self.managed_by)
        return self


class RayJobInfo(RayModel):
    start_time: DateTime | None = None
    end_time: DateTime | None = None


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
    ray_cluster_status: RayClusterStatus | None = None
    ray_job_info: RayJobInfo | None = None
    job_status_check_failure_start_time: DateTime | None = None
    observed_generation: Int64 | None = None


class RayJob(RayObject):
    spec: RayJobSpec | None = None
    status: RayJobStatus | None = None


# --- RayService ------------------------------------------------------------------------------


class ClusterUpgradeOptions(RayModel):
    gateway_class_name: str
    interval_seconds: Int32
    step_size_percent: Int32
    max_surge_percent: Int32 = 100


class ServiceUpgradeStrategy(RayModel):
    type: str | None = None
    cluster_upgrade_options: ClusterUpgradeOptions | None = None


class RayServiceSpec(RayModel):
    ray_cluster_config: RayClusterSpec
    serve_config_v2: str | None = Field(default=None, alias="serveConfigV2")
    serve_service: ServiceObject | None = None
    upgrade_strategy: ServiceUpgradeStrategy | None = None
    deployment_unhealthy_second_threshold: Int32 | None = None
    service_unhealthy_second_threshold: Int32 | None = None
    ray_cluster_deletion_delay_seconds: Int32 | None = None
    exclude_head_pod_from_serve_svc: bool | None = None
    suspend: bool | None = None
    managed_by: str | None = None

    @model_validator(mode="after")
    def _cel(self) -> RayServiceSpec:
        check_managed_by(self.managed_by)
        return self


class ServeDeploymentStatus(RayModel):
    message: str | None = None
    status: str | None = None
    health_last_update_time: DateTime | None = None  # v1alpha1 only


class AppStatus(RayModel):
    message: str | None = None
    status: str | None = None
    serve_deployment_statuses: dict[str, ServeDeploymentStatus] | None = None
    # Only v1alpha1 declares it; v1 objects converted from it may still carry it.
    health_last_update_time: DateTime | None = None


class ServiceStatusDetail(RayModel):
    ray_cluster_name: str | None = None
    ray_cluster_status: RayClusterStatus | None = None
    application_statuses: dict[str, AppStatus] | None = None
    target_capacity: Int32 | None = None
    traffic_routed_percent: Int32 | None = None
    last_traffic_migrated_time: DateTime | None = None


class RayServiceStatus(RayModel):
    service_status: str | None = None
    num_serve_endpoints: Int32 | None = None
    active_service_status: ServiceStatusDetail | None = None
    pending_service_status: ServiceStatusDetail | None = None
    conditions: list[Condition] | None = None
    last_update_time: DateTime | None = None
    observed_generation: Int64 | None = None


class RayService(RayObject):
    spec: RayServiceSpec | None = None
    status: RayServiceStatus | None = None


class RayServiceSpecV1Alpha1(RayServiceSpec):
    # The deprecated v1alpha1 CRD does not require rayClusterConfig; the controller refuses a
    # RayService without one (ValidationFailed), as KubeRay does.
    ray_cluster_config: RayClusterSpec | None = None  # type: ignore[assignment]


class RayServiceV1Alpha1(RayService):
    spec: RayServiceSpecV1Alpha1 | None = None
