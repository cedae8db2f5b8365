"""A multi-node job's nodes are recorded on its Job once all its pods are bound, so sacct still
lists them after the Job has stopped its other pods."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from slurmclusterkit import cli

from kubehpc.api.kinds import build_registry
from kubehpc.slurm import translate as T
from kubehpc.slurm.allocation import record_allocations
from kubehpc.slurm.jobs import collect
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store

Obj = dict[str, Any]


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


def submit(store: Store, tmp_path: Path, nodes: int) -> Obj:
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH -N {nodes}\nsrun hostname\n")
    assert cli(store, "sbatch", "--namespace", "default", str(script))[0] == 0
    return store.list("batch/v1", "Job", ListOptions(namespace="default")).items[0]


def pod_of(store: Store, job: Obj, index: int, node: str | None) -> None:
    meta = job["metadata"]
    spec: Obj = {"containers": [{"name": "main", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{meta['name']}-{index}",
                "namespace": "default",
                "labels": {T.LABEL_JOB_ID: meta["labels"][T.LABEL_JOB_ID]},
                "annotations": {"batch.kubernetes.io/job-completion-index": str(index)},
                "ownerReferences": [owner],
            },
            "spec": spec,
        }
    )


def nodelist(store: Store) -> str:
    jobs = store.list("batch/v1", "Job", ListOptions(namespace="default")).items
    pods = store.list("v1", "Pod", ListOptions(namespace="default")).items
    return collect(jobs, pods)[0].nodelist


def test_the_nodes_are_recorded_once_every_pod_is_bound_and_outlive_the_pods(
    store: Store, tmp_path: Path
) -> None:
    job = submit(store, tmp_path, nodes=2)
    pod_of(store, job, 0, "gpu-0")
    pod_of(store, job, 1, None)
    assert record_allocations(store) == []  # one pod still waits for a node
    name = f"{job['metadata']['name']}-1"
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": "default"}}
    store.create({**binding, "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-1"}})
    assert record_allocations(store) == ["nodelist 1"]
    assert record_allocations(store) == []  # recorded once
    store.delete("v1", "Pod", name, "default")
    assert nodelist(store) == "gpu-[0-1]"


def test_a_one_node_job_records_nothing(store: Store, tmp_path: Path) -> None:
    job = submit(store, tmp_path, nodes=1)
    pod_of(store, job, 0, "gpu-0")
    assert record_allocations(store) == []
