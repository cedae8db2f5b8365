"""The nodes of a multi-node sbatch job, kept on its Job once every pod is bound.

A job of ``-N n`` runs as n pods; when its first pod (the batch script) ends, the Job's success
policy completes it and stops the others, and their pods — with the node names sacct and
``scontrol show job`` print — go. Slurm keeps a finished job's node list in its accounting, so
this records it on the Job (annotation ``slurm.kubehpc.io/allocated-nodes``) as soon as all n pods are on
nodes; the views prefer it to the pods left.
"""

from __future__ import annotations

from typing import Any

from kubehpc.slurm import translate as T
from kubehpc.slurm.jobs import sbatch_objects
from kubehpc.store.client import Client, PatchType

Obj = dict[str, Any]


def _owner_uid(pod: Obj) -> str:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("kind") == "Job":
            return str(ref.get("uid", ""))
    return ""


def unrecorded_allocations(jobs: list[Obj], pods: list[Obj]) -> list[tuple[Obj, list[str]]]:
    """(Job, its nodes) for each multi-node, non-array sbatch Job whose pods are all bound on
    nodes other than those recorded (none yet, or before a requeue)."""
    nodes_of: dict[str, list[str]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and not (pod.get("metadata") or {}).get("deletionTimestamp"):
            nodes_of.setdefault(_owner_uid(pod), []).append(str(node))
    out = []
    for job in jobs:
        meta = job.get("metadata") or {}
        ann = meta.get("annotations") or {}
        if T.ANN_ARRAY in ann:
            continue
        wanted = int(ann.get(T.ANN_NODES, "1") or 1)
        nodes = sorted(nodes_of.get(str(meta.get("uid", "")), []))
        # A job requeued onto other nodes is recorded again once all its new pods are bound.
        if wanted > 1 and len(nodes) >= wanted and ann.get(T.ANN_ALLOCATED_NODES) != ",".join(nodes):
            out.append((job, nodes))
    return out


def record_allocations(
    client: Client, namespace: str | None = None, objects: tuple[list[Obj], list[Obj]] | None = None
) -> list[str]:
    """One pass: record the node list of every job that has just got all its nodes. Returns
    what it did (``nodelist 12``) for logs and tests. ``objects``: the sbatch Jobs and pods,
    when the caller has just read them."""
    jobs, pods = objects or sbatch_objects(client, namespace)
    done = []
    for job, nodes in unrecorded_allocations(jobs, pods):
        meta = job["metadata"]
        patch = {"metadata": {"annotations": {T.ANN_ALLOCATED_NODES: ",".join(nodes)}}}
        client.patch("batch/v1", "Job", meta["name"], patch, PatchType.MERGE, meta.get("namespace"))
        done.append(f"nodelist {meta['labels'][T.LABEL_JOB_ID]}")
    return done
