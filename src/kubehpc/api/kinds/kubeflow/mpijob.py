"""MPIJob (kubeflow.org): v2beta1, the MPI Operator's current API (stored), and v1, the old one.

The models follow the upstream CRD (../shared/crds/kubeflow.org_mpijobs.yaml): what it accepts,
the API accepts. The operator's own rules (a Launcher of exactly one replica, restart and clean
pod policies from fixed sets, ...) are :func:`validation_errors`, which the controller reports
as the operator does: a Warning event ``ValidationError`` naming the fields.
v1 differs in small ways: ``spec.cleanPodPolicy`` beside ``runPolicy`` and a ``mainContainer``
name; conversion moves the first into ``runPolicy`` (unless runPolicy names one) and keeps the
second in an annotation; annotations also note where the first was written, so that a v1 object
reads back as written.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.alias_generators import to_camel

from kubehpc.api.crd import CRDModel, DateTime, Embedded, Quantity

GROUP = "kubeflow.org"
STORAGE_VERSION = "v2beta1"
LAUNCHER, WORKER = "Launcher", "Worker"
MAIN_CONTAINER_ANNOTATION = "conversion.kubehpc.io/mpijob-v1-main-container"
# A v1 object's top-level ``spec.cleanPodPolicy``: "moved" when it became runPolicy's (the usual
# case), else its own value (runPolicy named one too, and runPolicy's is the one that acts).
CLEAN_POD_POLICY_ANNOTATION = "conversion.kubehpc.io/mpijob-v1-clean-pod-policy"
MOVED = "moved"

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
# Optional inside the Annotated: the embedded check finds the marker on the field itself.
PodTemplateSpec = Annotated[dict[str, Any] | None, Embedded("io.k8s.api.core.v1.PodTemplateSpec")]
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
CLEAN_POD_POLICIES = ("None", "Running", "All")
LAUNCHER_CREATION_POLICIES = ("AtStartup", "WaitForWorkersReady")


class KubeflowModel(CRDModel):
    model_config = CRDModel.model_config | {"alias_generator": to_camel}


# --- the CRD's schema (what the API server checks) -------------------------------------------


class ReplicaSpec(KubeflowModel):
    replicas: Int32 | None = None
    restart_policy: str | None = None
    template: PodTemplateSpec = None


class SchedulingPolicy(KubeflowModel):
    min_available: Int32 | None = None
    queue: str | None = None
    min_resources: dict[str, Quantity] | None = None
    priority_class: str | None = None
    schedule_timeout_seconds: Int32 | None = None


class RunPolicy(KubeflowModel):
    clean_pod_policy: str | None = None
    ttl_seconds_after_finished: Int32 | None = None
    active_deadline_seconds: Int64 | None = None
    backoff_limit: Int32 | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool = False
    managed_by: str | None = None


class MPIJobSpec(KubeflowModel):
    slots_per_worker: Int32 = 1
    run_launcher_as_worker: bool = False
    run_policy: RunPolicy | None = None
    mpi_replica_specs: dict[str, ReplicaSpec]
    ssh_auth_mount_path: str = "/root/.ssh"
    launcher_creation_policy: str = "AtStartup"
    mpi_implementation: Literal["OpenMPI", "Intel", "MPICH"] = "OpenMPI"


class MPIJobSpecV1(KubeflowModel):
    slots_per_worker: Int32 | None = None
    clean_pod_policy: str | None = None
    run_policy: RunPolicy | None = None
    mpi_replica_specs: dict[str, ReplicaSpec]
    main_container: str | None = None


class JobCondition(KubeflowModel):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_update_time: str | None = None
    last_transition_time: str | None = None


class LabelSelectorRequirement(KubeflowModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(KubeflowModel):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class ReplicaStatus(KubeflowModel):
    active: Int32 | None = None
    succeeded: Int32 | None = None
    failed: Int32 | None = None
    label_selector: LabelSelector | None = None
    selector: str | None = None


class JobStatus(KubeflowModel):
    conditions: list[JobCondition] | None = None
    replica_statuses: dict[str, ReplicaStatus] | None = None
    start_time: DateTime | None = None
    completion_time: DateTime | None = None
    last_reconcile_time: DateTime | None = None


class _Object(KubeflowModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] | None = None
    status: JobStatus | None = None


class MPIJob(_Object):
    spec: MPIJobSpec | None = None


class MPIJobV1(_Object):
    spec: MPIJobSpecV1 | None = None


# --- the operator's own validation (pkg/apis/kubeflow/validation) ----------------------------


def validation_errors(job: dict[str, Any]) -> list[str]:
    """What the MPI Operator's ``ValidateMPIJob`` finds in a (defaulted) v2beta1 object; the
    operator reports these in a Warning event and leaves the job alone (the CRD accepts it)."""
    spec = job.get("spec") or {}
    errors: list[str] = []
    replicas = spec.get("mpiReplicaSpecs") or {}
    for role in sorted(set(replicas) - {LAUNCHER, WORKER}):
        supported = '"Launcher", "Worker"'
        errors.append(f'spec.mpiReplicaSpecs[{role}]: Unsupported value: "{role}": supported: {supported}')
    launcher = replicas.get(LAUNCHER)
    if launcher is None:
        errors.append("spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec")
    elif launcher.get("replicas", 1) != 1:
        errors.append(
            f"spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: {launcher.get('replicas')}: must be 1"
        )
    worker = replicas.get(WORKER)
    if worker is not None and int(worker.get("replicas") or 0) <= 0:
        errors.append(
            f"spec.mpiReplicaSpecs[Worker].replicas: Invalid value: {worker.get('replicas')}: "
            "must be greater than or equal to 1"
        )
    for role, replica in sorted(replicas.items()):
        policy = (replica or {}).get("restartPolicy")
        if policy is not None and policy not in RESTART_POLICIES:
            errors.append(f'spec.mpiReplicaSpecs[{role}].restartPolicy: Unsupported value: "{policy}"')
        containers = (((replica or {}).get("template") or {}).get("spec") or {}).get("containers")
        if not containers:
            errors.append(f"spec.mpiReplicaSpecs[{role}].template.spec.containers: Required value")
    clean = (spec.get("runPolicy") or {}).get("cleanPodPolicy")
    if clean is not None and clean not in CLEAN_POD_POLICIES:
        errors.append(f'spec.runPolicy.cleanPodPolicy: Unsupported value: "{clean}"')
    creation = spec.get("launcherCreationPolicy")
    if creation is not None and creation not in LAUNCHER_CREATION_POLICIES:
        errors.append(f'spec.launcherCreationPolicy: Unsupported value: "{creation}"')
    slots = spec.get("slotsPerWorker")
    if slots is not None and slots < 1:
        errors.append(f"spec.slotsPerWorker: Invalid value: {slots}: must be greater than or equal to 1")
    return errors


# --- conversion -------------------------------------------------------------------------------


def v1_to_storage(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    spec = out.setdefault("spec", {})
    clean = spec.pop("cleanPodPolicy", None)
    if clean is not None:
        run_policy = spec.get("runPolicy")
        if run_policy is None:
            run_policy = spec["runPolicy"] = {}
        if run_policy.get("cleanPodPolicy") is None:
            run_policy["cleanPodPolicy"] = clean
            _annotate(out, CLEAN_POD_POLICY_ANNOTATION, MOVED)
        else:
            _annotate(out, CLEAN_POD_POLICY_ANNOTATION, str(clean))
    main = spec.pop("mainContainer", None)
    if main is not None:
        _annotate(out, MAIN_CONTAINER_ANNOTATION, main)
    return out


def _annotate(obj: dict[str, Any], key: str, value: str) -> None:
    meta = obj.setdefault("metadata", {})
    if meta.get("annotations") is None:
        meta["annotations"] = {}
    meta["annotations"][key] = value


def v1_from_storage(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    spec = out.setdefault("spec", {})
    # Fields v1 does not have (their v2beta1 defaults are what v1 behaves as).
    for name in ("sshAuthMountPath", "launcherCreationPolicy", "mpiImplementation", "runLauncherAsWorker"):
        spec.pop(name, None)
    annotations = (out.get("metadata") or {}).get("annotations") or {}
    if MAIN_CONTAINER_ANNOTATION in annotations:
        spec["mainContainer"] = annotations.pop(MAIN_CONTAINER_ANNOTATION)
    clean = annotations.pop(CLEAN_POD_POLICY_ANNOTATION, None)
    run_policy = spec.get("runPolicy") or {}
    if clean == MOVED and run_policy.get("cleanPodPolicy") is not None:
        spec["cleanPodPolicy"] = run_policy.pop("cleanPodPolicy")
        if not run_policy:
            spec.pop("runPolicy", None)
    elif clean is not None and clean != MOVED:
        spec["cleanPodPolicy"] = clean
    if "annotations" in (out.get("metadata") or {}) and not annotations:
        out["metadata"].pop("annotations", None)
    return out
