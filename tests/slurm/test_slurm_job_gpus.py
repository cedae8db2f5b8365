"""SLURM_JOB_GPUS: the node's indices of a job's GPUs ("0,1"), as slurmd sets it. The node's
device plugin tells a container which physical GPUs it holds (KUBEHPC_GPU_INDICES; its
CUDA_VISIBLE_DEVICES carries UUIDs), and the sbatch runner names them SLURM_JOB_GPUS."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from podkit import run_pod
from slurmkit import script, submit

from kubehpc.api.cluster_config import parse_cluster_config, resolve_nodes
from kubehpc.api.devices import allocate
from kubehpc.node.devices import GPU_INDICES_ENV, DevicePlugin

Obj = dict[str, Any]


def plugin(count: int) -> DevicePlugin:
    pool = {"name": "p", "hostnames": ["n0"], "gpus": {"model": "A100-80GB", "count": count}}
    config = parse_cluster_config(
        {"apiVersion": "kubehpc.io/v1alpha1", "kind": "ClusterConfig", "spec": {"nodePools": [pool]}}
    )
    return DevicePlugin(resolve_nodes(config)[0], "test")


def test_a_container_learns_the_node_indices_of_the_gpus_it_holds() -> None:
    p = plugin(4)
    busy = allocate(p.inventory, Counter(), {"nvidia.com/gpu": 1})
    ids = allocate(p.inventory, Counter(busy), {"nvidia.com/gpu": 2})
    by_id = p.inventory.by_id()
    expected = ",".join(str(i) for i in sorted(by_id[i].gpu_index for i in ids))
    env = p.container_env({"main": ids}, "main")
    assert env[GPU_INDICES_ENV] == expected
    assert str(by_id[busy[0]].gpu_index) not in expected.split(",")


def test_a_container_without_gpus_gets_no_gpu_indices() -> None:
    assert GPU_INDICES_ENV not in plugin(2).container_env({}, "main")


def with_env(objs: list[Obj], name: str, value: str) -> list[Obj]:
    job = next(o for o in objs if o["kind"] == "Job")
    job["spec"]["template"]["spec"]["containers"][0]["env"].append({"name": name, "value": value})
    return objs


def job_env(tmp_path: Path, *directives: str, indices: str) -> dict[str, str]:
    body = 'env | grep -E "^SLURM_" | sort'
    objs = submit(script(f"-D {tmp_path}", "-o o", *directives, body=body))
    assert run_pod(with_env(objs, GPU_INDICES_ENV, indices), tmp_path).returncode == 0
    return dict(line.split("=", 1) for line in (tmp_path / "o").read_text().splitlines())


def test_a_gpu_jobs_script_sees_its_gpu_indices_as_slurm_job_gpus(tmp_path: Path) -> None:
    assert job_env(tmp_path, "--gres=gpu:2", indices="2,3")["SLURM_JOB_GPUS"] == "2,3"


def test_a_job_without_gpus_has_no_slurm_job_gpus(tmp_path: Path) -> None:
    assert "SLURM_JOB_GPUS" not in job_env(tmp_path, indices="")
