"""The K8sJobMode submitter: a batch/v1 Job named after the RayJob that runs ``ray job submit``
against the cluster's dashboard and follows the job's logs (so ``kubectl logs job/<rayjob>``
shows the Ray program's output), built as KubeRay's ``GetK8sJobCommand`` builds it."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

import yaml

from kubehpc.controllers.ray import constants as c
from kubehpc.controllers.ray.objects import HostMode, owner_reference

Obj = dict[str, Any]
SUBMITTER_BACKOFF_LIMIT = 2


def runtime_env_json(spec: Mapping[str, Any]) -> str:
    text = spec.get("runtimeEnvYAML")
    if not text:
        return ""
    loaded = yaml.safe_load(text)
    if not isinstance(loaded, dict):
        raise ValueError("spec.runtimeEnvYAML: want a YAML mapping")
    return json.dumps(loaded, sort_keys=True)


def submit_args(spec: Mapping[str, Any]) -> list[str]:
    """``ray job submit`` options that follow from the spec (entrypoint resources, runtime env)."""
    args: list[str] = []
    env = runtime_env_json(spec)
    if env:
        args += ["--runtime-env-json", env]
    if spec.get("entrypointNumCpus") is not None:
        args += ["--entrypoint-num-cpus", str(spec["entrypointNumCpus"])]
    if spec.get("entrypointNumGpus") is not None:
        args += ["--entrypoint-num-gpus", str(spec["entrypointNumGpus"])]
    if spec.get("entrypointResources"):
        args += ["--entrypoint-resources", str(spec["entrypointResources"])]
    return args


def submitter_command(spec: Mapping[str, Any]) -> str:
    address = "http://$RAY_DASHBOARD_ADDRESS"
    options = "".join(f"{shlex.quote(a)} " for a in submit_args(spec))
    submit = (
        f"ray job submit --address {address} {options}--submission-id $RAY_JOB_SUBMISSION_ID -- "
        f"{spec.get('entrypoint') or ''}"
    )
    # A resubmitted pod (after a submitter failure) follows the job already there instead.
    return (
        f"if ! ray job status --address {address} $RAY_JOB_SUBMISSION_ID >/dev/null 2>&1 ; "
        f"then {submit} ; "
        f"else ray job logs --address {address} --follow $RAY_JOB_SUBMISSION_ID ; fi"
    )


def submitter_job(rayjob: Mapping[str, Any], dashboard: str, job_id: str, mode: HostMode) -> Obj:
    meta = rayjob.get("metadata") or {}
    spec = rayjob.get("spec") or {}
    template: Obj = dict(spec.get("submitterPodTemplate") or {})
    pod_spec: Obj = dict(template.get("spec") or {})
    containers = [dict(x) for x in pod_spec.get("containers") or []]
    if not containers:
        head = ((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}
        image = (((head.get("spec") or {}).get("containers") or [{}])[0]).get("image", "rayproject/ray")
        containers = [
            {
                "name": "ray-job-submitter",
                "image": image,
                "resources": {
                    "requests": {"cpu": "100m", "memory": "200Mi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
            }
        ]
    ctr = containers[0]
    if not ctr.get("command"):
        ctr["command"] = ["/bin/bash", "-ce", "--"]
        ctr["args"] = [submitter_command(spec)]
    env = [
        {"name": "RAY_DASHBOARD_ADDRESS", "value": dashboard},
        {"name": "RAY_JOB_SUBMISSION_ID", "value": job_id},
        *mode.env(),
    ]
    have = {e.get("name") for e in ctr.get("env") or ()}
    ctr["env"] = list(ctr.get("env") or []) + [e for e in env if e["name"] not in have]
    containers[0] = ctr
    pod_spec["containers"] = containers
    pod_spec.setdefault("restartPolicy", "Never")
    template["spec"] = pod_spec
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "labels": {
                c.ORIGINATED_FROM_CR_NAME_LABEL: str(meta["name"]),
                c.ORIGINATED_FROM_CRD_LABEL: c.JOB_KIND,
                c.CREATED_BY_LABEL: c.MANAGER,
            },
            "ownerReferences": [owner_reference(rayjob)],
        },
        "spec": {"backoffLimit": SUBMITTER_BACKOFF_LIMIT, "template": template},
    }
