"""Cluster state for the view tests: Jobs exactly as sbatch makes them, then the status and
pods a run would give them."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from slurmkit import request, script

from kubehpc.slurm.translate import build_objects

Obj = dict[str, Any]
T0 = "2026-12-02T12:00:00Z"
T0_EPOCH = 1796212800.0  # 2026-12-02T12:00:00Z


def at(seconds: int) -> str:
    """T0 + seconds as RFC 3339."""
    from datetime import datetime

    return datetime.fromtimestamp(T0_EPOCH + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sbatch_job(job_id: int, *directives: str, user: str = "alice", uid: str = "") -> Obj:
    req = request(script(*directives))
    req.user = user
    job = next(o for o in build_objects(req, job_id, namespace="default") if o["kind"] == "Job")
    job["metadata"]["uid"] = uid or f"uid-{job_id}"
    job["metadata"]["creationTimestamp"] = T0
    job["status"] = {}
    return job


def pod(
    job: Obj,
    index: int,
    node: str | None,
    phase: str = "Running",
    started: int = 0,
    exit_code: int | None = None,
) -> Obj:
    status: Obj = {"phase": phase, "startTime": at(started)}
    if node is None:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    if exit_code is not None:
        status["containerStatuses"] = [
            {
                "name": "batch",
                "state": {
                    "terminated": {
                        "exitCode": exit_code,
                        "startedAt": at(started),
                        "finishedAt": at(started + 60),
                    }
                },
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job['metadata']['name']}-{index}-x",
            "namespace": "default",
            "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
            "ownerReferences": [{"kind": "Job", "uid": job["metadata"]["uid"], "controller": True}],
        },
        "spec": {"nodeName": node} if node else {},
        "status": status,
    }


def running(job: Obj, nodes: list[str], started: int) -> list[Obj]:
    job["status"] = {"startTime": at(started), "active": len(nodes)}
    return [pod(job, i, n, started=started) for i, n in enumerate(nodes)]


def finished(job: Obj, condition: str, reason: str, started: int, ended: int, exit_code: int) -> list[Obj]:
    job["status"] = {
        "startTime": at(started),
        "completionTime": at(ended) if condition == "Complete" else None,
        "conditions": [
            {"type": condition, "status": "True", "reason": reason, "lastTransitionTime": at(ended)}
        ],
    }
    job["status"] = {k: v for k, v in job["status"].items() if v is not None}
    return [
        pod(
            job,
            0,
            "n1",
            phase="Succeeded" if exit_code == 0 else "Failed",
            started=started,
            exit_code=exit_code,
        )
    ]


def node(
    name: str,
    cpus: int = 8,
    ready: bool = True,
    partitions: tuple[str, ...] = (),
    cordoned: bool = False,
    gpus: int = 0,
) -> Obj:
    labels = {"kubernetes.io/hostname": name}
    labels.update({f"partition.slurm.kubehpc.io/{p}": "true" for p in partitions})
    alloc = {"cpu": str(cpus), "memory": "32Gi"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def busy_pod(node_name: str, cpus: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"busy-{node_name}", "namespace": "default"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpus)}}}],
        },
        "status": {"phase": "Running"},
    }
