"""sbatch refuses at submit a job no node could ever hold, as Slurm does ("Requested node
configuration is not available"), instead of leaving it pending for ever."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from slurmclusterkit import cli

from kubehpc.api.kinds import build_registry
from kubehpc.store.client import ListOptions
from kubehpc.store.store import Store

REFUSED = "Batch job submission failed: Requested node configuration is not available"


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


def gpu_node(store: Store, name: str, gpus: int = 4) -> None:
    amounts = {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    store.create(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "status": {"capacity": amounts, "allocatable": amounts},
        }
    )


def sbatch(store: Store, tmp_path: Path, *directives: str) -> tuple[int, str, str]:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n" + "".join(f"#SBATCH {d}\n" for d in directives) + "echo hi\n")
    return cli(store, "sbatch", "--namespace", "default", str(script))


def jobs(store: Store) -> list[str]:
    return [
        j["metadata"]["name"] for j in store.list("batch/v1", "Job", ListOptions(namespace="default")).items
    ]


def test_more_gpus_per_node_than_any_node_has_is_refused_naming_the_most_there_is(
    store: Store, tmp_path: Path
) -> None:
    gpu_node(store, "gpu-0")
    code, out, err = sbatch(store, tmp_path, "--gres=gpu:9")
    assert (code, out) == (1, "")
    assert REFUSED in err and "each node needs 9 nvidia.com/gpu, the most any node has is 4" in err
    assert jobs(store) == []
    assert store.list("v1", "ConfigMap", ListOptions(namespace="default")).items == []


def test_more_nodes_than_there_are_is_taken_one_machine_shares_its_node(store: Store, tmp_path: Path) -> None:
    gpu_node(store, "gpu-0")
    code, _, _ = sbatch(store, tmp_path, "-N 2", "--gres=gpu:2")
    assert code == 0


def test_a_job_that_fits_a_node_is_taken(store: Store, tmp_path: Path) -> None:
    gpu_node(store, "gpu-0")
    code, out, _ = sbatch(store, tmp_path, "--gres=gpu:4")
    assert (code, out) == (0, "Submitted batch job 1\n")


def test_without_any_node_yet_the_job_is_taken_to_wait_for_nodes(store: Store, tmp_path: Path) -> None:
    code, _, _ = sbatch(store, tmp_path, "--gres=gpu:9")
    assert code == 0
