"""The spec checks KubeRay makes in its controllers, not at admission.

The upstream CRDs admit a RayCluster whose minReplicas exceeds maxReplicas, or a RayJob with
neither a cluster nor an entrypoint; KubeRay's reconcilers (``ValidateRayClusterSpec``,
``ValidateRayJobSpec``) find such specs and end them as ValidationFailed with a Warning event.
kubehpc's models stay as loose as the CRDs, so these checks live here, each returning the
problems found (empty when the spec is sound) for the controllers to report.
"""

from __future__ import annotations

from typing import Any

from kubehpc.api.kinds.ray.models import SUBMISSION_MODES

Obj = dict[str, Any]
MAX_GROUP_NAME = 63  # a group name is a label value (ray.io/group)


def cluster_spec_problems(spec: Obj, field: str = "spec") -> list[str]:
    """What KubeRay refuses in a RayCluster spec: worker groups with bad names or bounds."""
    problems: list[str] = []
    groups = spec.get("workerGroupSpecs") or []
    seen: set[str] = set()
    for i, group in enumerate(groups):
        where = f"{field}.workerGroupSpecs[{i}]"
        name = str(group.get("groupName") or "")
        if not name or len(name) > MAX_GROUP_NAME:
            problems.append(f"{where}.groupName: must be 1 to {MAX_GROUP_NAME} characters long")
        elif name in seen:
            problems.append(f"{where}.groupName: groupName must be unique, repeated: {name}")
        seen.add(name)
        low, high = group.get("minReplicas", 0), group.get("maxReplicas", 2**31 - 1)
        for key, value in (("minReplicas", low), ("maxReplicas", high), ("replicas", group.get("replicas"))):
            if value is not None and value < 0:
                problems.append(f"{where}.{key}: must be >= 0, got {value}")
        if low > high:
            problems.append(
                f"{where}: worker group {name}: minReplicas ({low}) must not exceed maxReplicas ({high})"
            )
        if group.get("numOfHosts", 1) < 1:
            problems.append(f"{where}.numOfHosts: must be >= 1, got {group.get('numOfHosts')}")
    return problems


def rayservice_spec_problems(spec: Obj) -> list[str]:
    """What KubeRay refuses in a RayService spec: no cluster to serve on, or a bad one."""
    if not spec.get("rayClusterConfig"):
        return ["spec.rayClusterConfig: a RayService needs a rayClusterConfig"]
    return cluster_spec_problems(spec["rayClusterConfig"], "spec.rayClusterConfig")


def rayjob_spec_problems(spec: Obj) -> list[str]:
    """What KubeRay refuses in a RayJob spec, its RayCluster spec included."""
    problems: list[str] = []
    selector = spec.get("clusterSelector") or {}
    cluster_spec = spec.get("rayClusterSpec")

    def check(ok: bool, message: str) -> None:
        if not ok:
            problems.append(message)

    check(
        cluster_spec is not None or bool(selector),
        "spec: one of rayClusterSpec or clusterSelector is required",
    )
    mode = spec.get("submissionMode", "K8sJobMode")
    check(
        mode in SUBMISSION_MODES,
        f"spec.submissionMode: unsupported value {mode!r}, one of {', '.join(SUBMISSION_MODES)}",
    )
    check(
        mode == "InteractiveMode" or bool(spec.get("entrypoint")),
        "spec.entrypoint: entrypoint is required unless submissionMode is InteractiveMode",
    )
    check(
        not (spec.get("shutdownAfterJobFinishes") and selector),
        "spec.shutdownAfterJobFinishes: cannot be set with clusterSelector "
        "(the cluster is not the job's own)",
    )
    check(not (spec.get("suspend") and selector), "spec.suspend: suspend cannot be used with clusterSelector")
    check(spec.get("ttlSecondsAfterFinished", 0) >= 0, "spec.ttlSecondsAfterFinished: must be >= 0")
    deadline = spec.get("activeDeadlineSeconds")
    check(deadline is None or deadline > 0, "spec.activeDeadlineSeconds: must be a positive integer")
    check(spec.get("backoffLimit", 0) >= 0, "spec.backoffLimit: must be >= 0")
    if cluster_spec is not None:
        problems += cluster_spec_problems(cluster_spec, "spec.rayClusterSpec")
    return problems
